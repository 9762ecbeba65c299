import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBudget } from '../../state/memory-budget.js';
import { Metrics } from '../../core/metrics.js';
import { SeenSet } from '../../state/seen-set.js';
import { MemoryFingerprintStore, syntheticFingerprint } from './seen-set-memory-store.js';

const MiB = 2 ** 20;
const N = 300_000;
const CACHE = 2 * MiB;

/** A partition's seen-set holding fingerprints [from, from + N), its blocks read once so they are cached. */
function filled(memory: MemoryBudget, from: number): SeenSet {
  const seen = new SeenSet(new MemoryFingerprintStore(), {
    expectedCount: N,
    falsePositiveRate: 0.01,
    exact: { blockCacheBytes: CACHE },
    memory,
  });
  seen.init();
  for (let i = 0; i < N; i += 1_000)
    seen.admit(Array.from({ length: 1_000 }, (_, j) => syntheticFingerprint(from + i + j)));
  seen.has(Array.from({ length: N }, (_, i) => syntheticFingerprint(from + i)));
  return seen;
}

test('seen-sets of one process share its memory budget: a second set of partitions shrinks the caches, its leaving gives back', () => {
  // what one partition's filter and chains take, measured on a set outside any budget
  const probe = filled(new MemoryBudget(0), 0);
  const claim = probe.stats().bloomBytes + probe.stats().exact.ramBytes;
  assert.ok(
    probe.stats().exact.blockCacheBytes > CACHE / 2,
    `the probe's cache filled: ${probe.stats().exact.blockCacheBytes}`,
  );
  // room, after the reserve, for two partitions' claims and one cache between them
  const total = Math.ceil((2 * claim + CACHE) / 0.75);
  const budget = new MemoryBudget(total);

  const a = filled(budget, 0);
  assert.equal(budget.report().granted[0]?.bytes, CACHE, 'alone, a partition gets the cache it asks');
  const before = a.stats().exact.blockCacheBytes;
  assert.ok(before > CACHE / 2, `its cache is in use: ${before} bytes`);

  // a failover hands this process a second partition: the two caches together fit what is left
  const b = filled(budget, 10 * N);
  const r = budget.report();
  assert.equal(r.over, 0);
  const granted = r.granted[0]!.bytes;
  assert.ok(granted <= total - r.reserve - r.claimed, `${granted} granted within ${total} less claims and reserve`);
  assert.ok(granted <= 1.05 * CACHE && granted >= 0.95 * CACHE, `two caches share ~one: ${granted}`);
  for (const [name, set] of [
    ['a', a],
    ['b', b],
  ] as const) {
    const held = set.stats().exact.blockCacheBytes;
    assert.ok(held <= granted / 2 + 1, `${name} holds ${held} bytes, within its share of ${granted}`);
  }
  assert.ok(a.stats().exact.blockCacheBytes < before, "the first partition's cache shrank at once");
  // answers stay exact at the smaller size
  assert.ok(a.has(Array.from({ length: 1_000 }, (_, i) => syntheticFingerprint(i * 7))).every(Boolean));

  // the second partition moves away again: the first gets its whole cache back
  b.close();
  b.close();
  assert.equal(budget.report().granted[0]?.bytes, CACHE);
  const aClaims = a.stats().bloomBytes + a.stats().exact.ramBytes;
  assert.equal(budget.report().claimed, aClaims);
  b.reportMetrics(new Metrics(), '1');
  assert.equal(budget.report().claimed, aClaims, 'the closed set does not join again when its gauges are read');
});
