import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  changeRate,
  NO_EVIDENCE,
  observe,
  withPrior,
  type ChangeEvidence,
} from '../../../processors/frontier/change-rate.js';
import {
  bucketRate,
  optimalInterval,
  OVERPOLL,
  rateBucket,
  RATE_BUCKETS,
  solveAgeMarginal,
  solveMarginal,
  solvePrice,
} from '../../../processors/frontier/refetch-policy.js';
import { seededRandom } from '../../../synthetic-web/seeded-random.js';

const SECOND = 1000;
const BOUNDS = { min: 10 * SECOND, max: 600 * SECOND };

/** Share of time a Poisson page of `rate` (per ms) fetched every `interval` ms is fresh. */
function freshness(rate: number, interval: number): number {
  if (rate === 0) return 1;
  const r = rate * interval;
  return -Math.expm1(-r) / r;
}

/** Observes a Poisson page of `rate` at `intervals`, with `decay` (1: keep everything). */
function watch(rate: number, intervals: readonly number[], decay: number, seed = 7): ChangeEvidence {
  const random = seededRandom(seed);
  let e = NO_EVIDENCE;
  for (const interval of intervals) {
    const changed = random() < -Math.expm1(-rate * interval);
    e = observe(e, interval, changed, decay);
  }
  return e;
}

test('the change rate is undefined without evidence, 0 when nothing changed, and finite when everything did', () => {
  assert.equal(changeRate(NO_EVIDENCE), undefined);
  assert.equal(changeRate(observe(NO_EVIDENCE, 60_000, false)), 0);
  let e = NO_EVIDENCE;
  let last = 0;
  for (let i = 0; i < 5; i++) {
    e = observe(e, 60_000, true);
    const rate = changeRate(e)!;
    assert.ok(Number.isFinite(rate) && rate > last, `rate ${rate} after ${i + 1} changed visits`);
    last = rate;
  }
});

test("Cho and Garcia-Molina's estimator finds a Poisson page's rate from changed/unchanged visits, even visited slower than it changes", () => {
  for (const [periodSec, visitSec] of [
    [60, 30],
    [60, 60],
    [240, 40],
    [40, 60],
  ] as const) {
    const rate = 1 / (periodSec * SECOND);
    const estimate = changeRate(watch(rate, Array(4_000).fill(visitSec * SECOND), 1))!;
    assert.ok(
      Math.abs(estimate / rate - 1) < 0.1,
      `period ${periodSec} s visited every ${visitSec} s: estimated period ${(1 / estimate / SECOND).toFixed(1)} s`,
    );
  }
});

test('decayed evidence follows a page whose rate changes', () => {
  const fast = watch(1 / (30 * SECOND), Array(50).fill(20 * SECOND), 0.9);
  const slowed = watch(0, Array(30).fill(20 * SECOND), 0.9, 3);
  let e = fast;
  for (let i = 0; i < 30; i++) e = observe(e, 20 * SECOND, false);
  assert.ok(changeRate(e)! < changeRate(fast)! / 10, 'thirty unchanged visits should bring the rate down tenfold');
  assert.equal(changeRate(slowed), 0);
});

test("a site's prior starts a new page near the site's rate, and the page's own visits soon outweigh it", () => {
  const site = watch(1 / (60 * SECOND), Array(500).fill(30 * SECOND), 0.995);
  // two visits' worth of the site's evidence: the small-sample estimator shrinks it a little
  const fresh = changeRate(withPrior(NO_EVIDENCE, site, 2))!;
  assert.ok(fresh < changeRate(site)! && fresh > changeRate(site)! * 0.75, `${fresh} vs ${changeRate(site)}`);
  // ten unchanged visits of its own outweigh one visit's worth of prior
  let own = NO_EVIDENCE;
  for (let i = 0; i < 10; i++) own = observe(own, 30 * SECOND, false);
  assert.ok(changeRate(withPrior(own, site, 2))! < fresh / 4);
  assert.deepEqual(withPrior(own, undefined), own);
});

test('solveMarginal inverts 1 − (1 + r)e^−r', () => {
  for (const y of [1e-9, 1e-4, 0.01, 0.3, 0.9, 0.999]) {
    const r = solveMarginal(y);
    const g = 1 - (1 + r) * Math.exp(-r);
    assert.ok(Math.abs(g - y) < 1e-9 * Math.max(1, y / 1e-6), `y ${y}: r ${r}, g ${g}`);
  }
  assert.equal(solveMarginal(0), 0);
  assert.equal(solveMarginal(1), Infinity);
});

test('the optimal interval: never-changing pages and pages too fast for the price get the longest; others shorter as they change faster', () => {
  const price = 60 * SECOND;
  assert.equal(optimalInterval(0, price, BOUNDS), BOUNDS.max);
  const periods = [3_000, 1_200, 600, 240, 120];
  const intervals = periods.map((p) => optimalInterval(1 / (p * SECOND), price, BOUNDS));
  for (let i = 1; i < intervals.length; i++) assert.ok(intervals[i]! <= intervals[i - 1]!, `${intervals.join(', ')}`);
  // μλ ≥ 1: a page changing every 50 s at a price of 60 s is not chased
  assert.equal(optimalInterval(1 / (50 * SECOND), price, BOUNDS), BOUNDS.max);
  // price 0 (the budget is not binding): no more than OVERPOLL fetches per expected change
  assert.ok(Math.abs(optimalInterval(1 / (1_600 * SECOND), 0, BOUNDS) - (1_600 * SECOND) / OVERPOLL) < 1e-6);
  assert.equal(optimalInterval(1 / (100 * SECOND), 0, BOUNDS), BOUNDS.min);
  // a page worth twice as much is fetched sooner
  assert.ok(optimalInterval(1 / (600 * SECOND), price, BOUNDS, 2) < optimalInterval(1 / (600 * SECOND), price, BOUNDS));
});

test('rate buckets cover half an octave each and round-trip', () => {
  assert.equal(rateBucket(0), 0);
  for (const periodSec of [1, 40, 240, 86_400, 30 * 86_400]) {
    const rate = 1 / (periodSec * SECOND);
    const b = rateBucket(rate);
    assert.ok(b > 0 && b < RATE_BUCKETS);
    assert.ok(Math.abs(Math.log2(bucketRate(b) / rate)) <= 0.5, `period ${periodSec} s in bucket ${b}`);
  }
});

/** A histogram of pages by period, in seconds (Infinity: never). */
function histogram(periods: readonly number[]): number[] {
  const counts = Array<number>(RATE_BUCKETS).fill(0);
  for (const p of periods) counts[rateBucket(Number.isFinite(p) ? 1 / (p * SECOND) : 0)]!++;
  return counts;
}

function demandOf(counts: readonly number[], price: number): number {
  return counts.reduce((sum, n, b) => sum + n / optimalInterval(bucketRate(b), price, BOUNDS), 0);
}

test("the site's price spends its budget: demand at the price is within it and close to it; 0 when everything fits", () => {
  const counts = histogram([40, 40, 240, 240, 240, 240, Infinity, Infinity, Infinity, Infinity, Infinity, Infinity]);
  const budget = 0.5 / SECOND;
  const price = solvePrice(counts, budget, BOUNDS);
  assert.ok(price > 0);
  const used = demandOf(counts, price);
  assert.ok(used <= budget * 1.000001 && used >= budget * 0.99, `demand ${used * SECOND}/s of ${budget * SECOND}/s`);
  assert.equal(solvePrice(histogram([240, 240]), budget, BOUNDS), 0);
  // a budget below every page at --recrawl-max: all of them there
  const starved = solvePrice(counts, 1 / (BOUNDS.max * 100), BOUNDS);
  assert.ok(demandOf(counts, starved) <= counts.reduce((a, b) => a + b, 0) / BOUNDS.max + 1e-12);
});

test('with the same fetches, the optimal allocation keeps a mix of rates fresher than one fixed interval', () => {
  const random = seededRandom(5);
  // a long tail of never-changing pages, some slow, a few fast
  const periods: number[] = [];
  for (let i = 0; i < 200; i++) {
    const u = random();
    periods.push(u < 0.6 ? Infinity : u < 0.9 ? 300 + random() * 3_000 : 20 + random() * 100);
  }
  const counts = histogram(periods);
  for (const budgetPerSec of [0.5, 1, 2, 4, 8]) {
    const budget = budgetPerSec / SECOND;
    const price = solvePrice(counts, budget, BOUNDS);
    let optimal = 0;
    let fetches = 0;
    for (const p of periods) {
      const rate = Number.isFinite(p) ? 1 / (p * SECOND) : 0;
      const interval = optimalInterval(bucketRate(rateBucket(rate)), price, BOUNDS);
      optimal += 1 - freshness(rate, interval);
      fetches += 1 / interval;
    }
    const fixedInterval = periods.length / fetches;
    let fixed = 0;
    for (const p of periods) fixed += 1 - freshness(Number.isFinite(p) ? 1 / (p * SECOND) : 0, fixedInterval);
    assert.ok(fetches <= budget * 1.01, `${budgetPerSec}/s: ${fetches * SECOND} fetches/s`);
    const summary = `${budgetPerSec}/s: staleness ${optimal.toFixed(2)} optimal vs ${fixed.toFixed(2)} fixed`;
    assert.ok(optimal < fixed, summary);
    // when fetches are scarce (0.5/s: one per page every 400 s) neither keeps the fast pages
    // fresh and the gain is smaller (0.80 ×); with a fetch per changing page every ~40 s, ≤ 0.5 ×
    if (budgetPerSec >= 2) assert.ok(optimal <= fixed * 0.5, summary);
  }
});

test('solveAgeMarginal inverts r²/2 − 1 + (1 + r)e^−r', () => {
  for (const y of [1e-9, 1e-4, 0.01, 0.3, 2, 50, 1e4]) {
    const r = solveAgeMarginal(y);
    const h = (r * r) / 2 - 1 + (1 + r) * Math.exp(-r);
    assert.ok(Math.abs(h - y) <= 1e-6 * y, `y ${y}: r ${r}, h ${h}`);
  }
  assert.equal(solveAgeMarginal(0), 0);
});

test('minimising age, a page too fast to keep fresh is still fetched often, and the budget still holds', () => {
  const counts = histogram([50, 50, 240, 240, 240, 240, Infinity, Infinity, Infinity, Infinity]);
  // scarce: one fetch every ~33 s for ten pages, two of which change every 50 s
  const budget = 0.03 / SECOND;
  const byStaleness = solvePrice(counts, budget, BOUNDS, 'staleness');
  const byAge = solvePrice(counts, budget, BOUNDS, 'age');
  const fast = bucketRate(rateBucket(1 / (50 * SECOND)));
  const slow = bucketRate(rateBucket(1 / (240 * SECOND)));
  const at = (rate: number, price: number, objective: 'staleness' | 'age'): number =>
    optimalInterval(rate, price, BOUNDS, 1, objective);
  // staleness all but gives up on the 50 s pages (longer than the 240 s ones); age does not, and
  // takes the fetches from the slow ones
  const summary = `staleness: fast ${at(fast, byStaleness, 'staleness')} slow ${at(slow, byStaleness, 'staleness')}; age: fast ${at(fast, byAge, 'age')} slow ${at(slow, byAge, 'age')}`;
  assert.ok(at(fast, byStaleness, 'staleness') > at(slow, byStaleness, 'staleness'), summary);
  assert.ok(at(fast, byAge, 'age') < at(slow, byAge, 'age'), summary);
  assert.ok(at(fast, byAge, 'age') * 2 < at(fast, byStaleness, 'staleness'), summary);
  for (const [price, objective] of [
    [byStaleness, 'staleness'],
    [byAge, 'age'],
  ] as const) {
    const demand = counts.reduce((sum, n, b) => sum + n / at(bucketRate(b), price, objective), 0);
    assert.ok(demand <= budget * 1.000001 && demand >= budget * 0.99, `${objective} demand ${demand * SECOND}/s`);
  }
});
