import type { RefetchObjective } from '../common/crawl-config.js';

/**
 * How often to refetch a page of known change rate so that a host's pages are, on average, as
 * fresh as its politeness budget allows: Cho and Garcia-Molina's optimal allocation
 * ("Effective page refresh policies for web crawlers", ACM TODS 2003). A page changing at rate λ
 * (a Poisson process) and fetched every I is fresh a share F = (1 − e^{−λI}) / (λI) of the time.
 * Spending a budget of fetches per unit time over a host's pages, freshness is greatest when each
 * page's marginal freshness per fetch is the same price μ:
 *
 *   1 − (1 + r) e^{−r} = μλ,  r = λI
 *
 * so a page that changes faster than the price allows (μλ ≥ 1) gets the least (the longest
 * interval), not the most: chasing it would spend fetches that keep nothing fresh. The price is
 * the smallest for which the host's pages together want no more fetches than its budget
 * (`solvePrice`, over a histogram of the host's rates). When even every page at the shortest
 * interval fits, the price is 0, and OVERPOLL caps how often a page is fetched per expected
 * change.
 *
 * Pure functions of numbers: no state, no I/O.
 */

/** Interval bounds, ms. */
export interface IntervalBounds {
  readonly min: number;
  readonly max: number;
}

/**
 * A page is not fetched more often than this many times per expected change: at price 0 (the
 * budget fits everything) the rule alone would fetch every page that ever changed at min.
 */
export const OVERPOLL = 16;

/** Buckets of a site's rate histogram: 0 holds pages seen never to change, b ≥ 1 half an octave of rate each. */
export const RATE_BUCKETS = 60;
/** Bucket of 1 change per second. */
const BUCKET_OF_ONE_PER_SECOND = 50;

/** The histogram bucket of a rate (changes per ms). */
export function rateBucket(ratePerMs: number): number {
  if (!(ratePerMs > 0)) return 0;
  const b = Math.floor(2 * Math.log2(ratePerMs * 1000)) + BUCKET_OF_ONE_PER_SECOND;
  return Math.min(RATE_BUCKETS - 1, Math.max(1, b));
}

/** The rate (changes per ms) a bucket stands for: its geometric middle; 0 for bucket 0. */
export function bucketRate(bucket: number): number {
  if (bucket <= 0) return 0;
  return 2 ** ((bucket - BUCKET_OF_ONE_PER_SECOND + 0.5) / 2) / 1000;
}

/** g(r) = 1 − (1 + r) e^{−r}: marginal freshness of a fetch, times λ. Increasing from 0 to 1. */
function marginal(r: number): number {
  return -Math.expm1(-r) - r * Math.exp(-r);
}

/** The r ≥ 0 with marginal(r) = y, for 0 ≤ y < 1 (Newton from r ≈ √(2y), safeguarded by bisection). */
export function solveMarginal(y: number): number {
  if (!(y > 0)) return 0;
  if (y >= 1) return Infinity;
  let lo = 0;
  let hi = 1;
  while (marginal(hi) < y) hi *= 2;
  let r = Math.min(hi, Math.max(lo, Math.sqrt(2 * y)));
  for (let i = 0; i < 60; i++) {
    const g = marginal(r) - y;
    if (Math.abs(g) < 1e-12) break;
    if (g > 0) hi = r;
    else lo = r;
    const step = g / (r * Math.exp(-r));
    let next = r - step;
    if (!(next > lo && next < hi)) next = (lo + hi) / 2;
    r = next;
  }
  return r;
}

/** h(r) = r²/2 − g(r): the marginal age saved by a fetch, times λ². Increasing from 0 to ∞. */
function ageMarginal(r: number): number {
  return (r * r) / 2 - marginal(r);
}

/** The r ≥ 0 with ageMarginal(r) = y, for y ≥ 0 (Newton from r ≈ ∛(3y), safeguarded by bisection). */
export function solveAgeMarginal(y: number): number {
  if (!(y > 0)) return 0;
  let lo = 0;
  let hi = 1;
  while (ageMarginal(hi) < y) hi *= 2;
  let r = Math.min(hi, Math.cbrt(3 * y));
  for (let i = 0; i < 80; i++) {
    const h = ageMarginal(r) - y;
    if (Math.abs(h) <= 1e-12 * y) break;
    if (h > 0) hi = r;
    else lo = r;
    let next = r - h / (-r * Math.expm1(-r));
    if (!(next > lo && next < hi)) next = (lo + hi) / 2;
    r = next;
  }
  return r;
}

/*
 * What the refetches minimise (RefetchObjective): `staleness`, the time a copy is out of date
 * (the default), or `age`, how long it has been out of date (Cho and Garcia-Molina's age: 0 while
 * fresh, then the time since the first change the copy missed). Age never gives up on a fast
 * page: it fetches it more often than staleness would, and pays for it with the slow ones.
 */

/**
 * The interval (ms, within `bounds`) for a page of `ratePerMs` at `price`: long for pages that
 * never change and, minimising staleness, for those the price says are too fast to follow;
 * `weight` > 1 makes a page worth more (an important page is refetched sooner). The price is
 * opaque (`solvePrice` finds it): μ with 1 − (1 + r)e^{−r} = μλ for staleness, with
 * r²/2 − 1 + (1 + r)e^{−r} = μλ² for age (r = λI).
 */
export function optimalInterval(
  ratePerMs: number,
  price: number,
  bounds: IntervalBounds,
  weight = 1,
  objective: RefetchObjective = 'staleness',
): number {
  if (!(ratePerMs > 0)) return bounds.max;
  let r: number;
  if (objective === 'age') r = solveAgeMarginal((price * ratePerMs * ratePerMs) / weight);
  else {
    const y = (price * ratePerMs) / weight;
    if (y >= 1) return bounds.max;
    r = solveMarginal(y);
  }
  const interval = Math.max(r / ratePerMs, 1 / (OVERPOLL * ratePerMs));
  return Math.min(bounds.max, Math.max(bounds.min, interval));
}

/** Fetches per ms the histogram's pages want at `price`. */
function demand(counts: readonly number[], price: number, bounds: IntervalBounds, objective: RefetchObjective): number {
  let sum = 0;
  for (let b = 0; b < counts.length; b++) {
    const n = counts[b]!;
    if (n > 0) sum += n / optimalInterval(bucketRate(b), price, bounds, 1, objective);
  }
  return sum;
}

/** Prices are searched within this factor of 1 either way: far beyond any histogram's. */
const PRICE_RANGE = 1e60;

/**
 * The smallest price at which the pages of `counts` (a rate histogram, see `rateBucket`) want at
 * most `budgetPerMs` fetches per ms; 0 when they fit at price 0. When even every page at
 * `bounds.max` does not fit, a price that puts them all there.
 */
export function solvePrice(
  counts: readonly number[],
  budgetPerMs: number,
  bounds: IntervalBounds,
  objective: RefetchObjective = 'staleness',
): number {
  const over = (price: number): boolean => demand(counts, price, bounds, objective) > budgetPerMs;
  if (!over(0)) return 0;
  let hi = 1;
  while (over(hi)) {
    if (hi >= PRICE_RANGE) return hi;
    hi *= 1e4;
  }
  let lo = hi / 1e4;
  while (!over(lo) && lo > 1 / PRICE_RANGE) lo /= 1e4;
  for (let i = 0; i < 80 && hi / lo > 1.001; i++) {
    const mid = Math.sqrt(lo * hi);
    if (over(mid)) lo = mid;
    else hi = mid;
  }
  return hi;
}
