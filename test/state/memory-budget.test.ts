import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBudget, MEMORY_RESERVE_SHARE, describeOver, type MemoryReport } from '../../state/memory-budget.js';
import { Metrics } from '../../core/metrics.js';
import { M } from '../../core/metric-catalogue.js';

const MiB = 2 ** 20;

test('memory budget: caches get what they ask while it suffices, then the same fraction each', () => {
  const budget = new MemoryBudget(1_000 * MiB);
  assert.equal(budget.reserve, 250 * MiB, `reserve is ${MEMORY_RESERVE_SHARE} of the total`);
  const grants: number[][] = [[], []];
  budget.share('a', 200 * MiB, (g) => grants[0]!.push(g));
  budget.share('b', 100 * MiB, (g) => grants[1]!.push(g));
  assert.deepEqual([grants[0]!.at(-1), grants[1]!.at(-1)], [200 * MiB, 100 * MiB]);
  // 750 MiB after the reserve; a claim of 600 leaves 150 for 300 asked: half each
  const claim = budget.claim('filter', 600 * MiB);
  assert.deepEqual([grants[0]!.at(-1), grants[1]!.at(-1)], [100 * MiB, 50 * MiB]);
  claim.update(450 * MiB);
  assert.deepEqual([grants[0]!.at(-1), grants[1]!.at(-1)], [200 * MiB, 100 * MiB], 'a claim that shrinks gives back');
  const r = budget.report();
  assert.equal(r.claimed, 450 * MiB);
  assert.deepEqual(r.granted, [
    { what: 'a', bytes: 200 * MiB },
    { what: 'b', bytes: 100 * MiB },
  ]);
  assert.equal(r.over, 0);
});

test('memory budget: apply runs only when a grant changes', () => {
  const budget = new MemoryBudget(1_000 * MiB);
  let calls = 0;
  budget.share('a', 100 * MiB, () => calls++);
  const c = budget.claim('x', 10 * MiB);
  c.update(20 * MiB);
  assert.equal(calls, 1, 'room for all it asked throughout: told once');
});

test('memory budget: claims past it grant the caches nothing and say so once each time they pass it', () => {
  const told: MemoryReport[] = [];
  const budget = new MemoryBudget(1_000 * MiB, (r) => told.push(r));
  let granted = -1;
  const share = budget.share('blocks', 128 * MiB, (g) => (granted = g));
  const claim = budget.claim('seen-bloom', 800 * MiB);
  assert.equal(granted, 0);
  assert.equal(told.length, 1);
  assert.equal(told[0]!.over, 50 * MiB);
  assert.match(describeOver(told[0]!), /memory budget 1000 MiB is passed by 50 MiB: .*seen-bloom 800 MiB/);
  claim.update(900 * MiB);
  assert.equal(told.length, 1, 'still over: not told again');
  claim.update(100 * MiB);
  assert.equal(granted, 128 * MiB);
  claim.update(900 * MiB);
  assert.equal(told.length, 2, 'over again after falling back within it');
  share.release();
  claim.release();
  claim.release();
  assert.deepEqual(budget.report().claims, []);
  assert.equal(budget.report().over, 0);
});

test('memory budget: none (0) grants every cache what it asks and still counts the claims', () => {
  const budget = new MemoryBudget(0);
  let granted = -1;
  budget.share('blocks', 128 * MiB, (g) => (granted = g));
  budget.claim('seen-bloom', 10_000 * MiB);
  assert.equal(granted, 128 * MiB);
  assert.equal(budget.report().over, 0);
  assert.equal(budget.report().claimed, 10_000 * MiB);
});

test('memory budget: refuses amounts that are not whole bytes, naming them', () => {
  assert.throws(() => new MemoryBudget(-1), /memory budget must be whole bytes/);
  assert.throws(() => new MemoryBudget(1.5), /memory budget must be whole bytes/);
  const budget = new MemoryBudget(MiB);
  assert.throws(() => budget.claim('seen-bloom', Number.NaN), /memory for seen-bloom must be whole bytes, got NaN/);
  assert.throws(() => budget.share('seen-blocks', -5, () => {}), /memory for seen-blocks must be whole bytes, got -5/);
});

test('memory budget: its gauges, one set per process', () => {
  const budget = new MemoryBudget(1_000 * MiB);
  budget.claim('seen-bloom', 700 * MiB);
  budget.share('seen-blocks', 128 * MiB, () => {});
  const metrics = new Metrics();
  budget.reportMetrics(metrics);
  budget.reportMetrics(metrics);
  const values = metrics.gaugesOf(M.memoryBudgetBytes);
  assert.deepEqual(Object.fromEntries(values), {
    total: 1_000 * MiB,
    reserve: 250 * MiB,
    claimed: 700 * MiB,
    wanted: 128 * MiB,
    granted: 50 * MiB,
    over: 0,
  });
});
