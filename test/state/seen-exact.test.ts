import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RocksPort } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import { bufferSerde } from '../../core/serde.js';
import { SeenSet, type SeenSetOptions } from '../../state/seen-set.js';
import { MemoryFingerprintStore, syntheticFingerprint } from './seen-set-memory-store.js';
import { withDb } from './temp-rocks.js';
import { seededRandom as random } from '../../synthetic-web/seeded-random.js';

const seenStore = (db: RocksPort, name = 'frontier-seen') =>
  new RocksKeyValueStore<Buffer, Buffer>(name, db, bufferSerde, bufferSerde);

// tiny blocks and short sweeps, so a few thousand fingerprints go through many sweeps and layouts
const SMALL: SeenSetOptions = {
  expectedCount: 64,
  falsePositiveRate: 0.05,
  exact: { blockTarget: 8, minSweep: 50, sweepFraction: 1 / 4 },
};

for (const [cacheName, blockCacheBytes] of [
  ['a block cache holding all', undefined],
  ['a block cache of a few blocks', 1_500],
  ['no block cache', 0],
] as const) {
  test(`exact layer, ${cacheName}: through commits, discarded commits, restarts, sweeps and block splits, every fingerprint is new exactly once`, () =>
    randomWorkload({ ...SMALL, exact: { ...SMALL.exact, blockCacheBytes } }));
}

function randomWorkload(SMALL: SeenSetOptions): Promise<void> {
  return withDb('seen-exact', (db) => {
    const rnd = random(7);
    let store = seenStore(db);
    let seen = new SeenSet(store, SMALL);
    seen.init();
    const committed = new Set<number>();
    let pending = new Set<number>();
    let universe = 1;
    let offset = 0;
    let restarts = 0;
    let discards = 0;
    for (let round = 0; round < 1_500; round++) {
      // a batch: mostly new ids, some repeats of committed, pending or same-batch ones
      const ids: number[] = [];
      const size = 1 + Math.floor(rnd() * 12);
      for (let j = 0; j < size; j++) {
        const r = rnd();
        if (r < 0.6 || universe < 10) ids.push(universe++);
        else if (r < 0.9) ids.push(1 + Math.floor(rnd() * (universe - 1)));
        else ids.push(ids[0] ?? universe++);
      }
      const fresh = seen.admit(ids.map((id) => syntheticFingerprint(id)));
      const inBatch = new Set<number>();
      ids.forEach((id, j) => {
        const expectNew = !committed.has(id) && !pending.has(id) && !inBatch.has(id);
        assert.equal(fresh[j], expectNew, `round ${round}: id ${id} new=${fresh[j]}, expected ${expectNew}`);
        inBatch.add(id);
        pending.add(id);
      });
      const r = rnd();
      if (r < 0.2) {
        store.applyCommitted(++offset);
        for (const id of pending) committed.add(id);
        pending = new Set();
      } else if (r < 0.23) {
        // a failed commit: the runtime discards pending writes and opens the task again
        store.discardPending();
        pending = new Set();
        discards++;
        store = seenStore(db);
        seen = new SeenSet(store, SMALL);
        seen.init();
      } else if (r < 0.26) {
        // a clean restart after a commit
        store.applyCommitted(++offset);
        for (const id of pending) committed.add(id);
        pending = new Set();
        restarts++;
        store = seenStore(db);
        seen = new SeenSet(store, SMALL);
        seen.init();
        assert.equal(seen.stats().count, committed.size, 'the count survives a restart');
      }
    }
    store.applyCommitted(offset + 1);
    for (const id of pending) committed.add(id);
    const stats = seen.stats();
    assert.ok(restarts > 10 && discards > 10, `${restarts} restarts, ${discards} discards`);
    assert.ok(stats.exact.sweeps >= 10, `${stats.exact.sweeps} sweeps`);
    assert.ok(stats.exact.blockBits >= 7, `the layout grew to ${stats.exact.blockBits} block bits`);
    // runs are deleted once merged: far fewer remain than were written
    assert.ok(stats.exact.runs < 400, `${stats.exact.runs} runs left`);
    const all = [...committed];
    assert.ok(seen.has(all.map((id) => syntheticFingerprint(id))).every(Boolean), 'a committed fingerprint was lost');
    const never = Array.from({ length: 2_000 }, (_, i) => syntheticFingerprint(universe + i));
    assert.ok(
      seen.has(never).every((s) => !s),
      'a fingerprint never admitted was reported seen',
    );
    const cache = seen.stats().exact;
    if (SMALL.exact?.blockCacheBytes !== 0)
      assert.ok(
        cache.blockCacheHits > 0 && cache.blockCacheMisses > 0,
        `block cache: ${cache.blockCacheHits} hits, ${cache.blockCacheMisses} misses`,
      );
    if (SMALL.exact?.blockCacheBytes !== undefined)
      assert.ok(cache.blockCacheBytes <= SMALL.exact.blockCacheBytes, `${cache.blockCacheBytes} bytes cached`);
  });
}

test('exact layer: a store rebuilt from the changelog alone answers the same', () =>
  withDb('seen-exact-replay', (db) => {
    const store = seenStore(db);
    const replica = seenStore(db, 'frontier-seen-replica');
    const seen = new SeenSet(store, SMALL);
    seen.init();
    let offset = 0;
    const n = 3_000;
    for (let i = 0; i < n; i += 7) {
      seen.admit(Array.from({ length: 7 }, (_, j) => syntheticFingerprint(i + j)));
      // the runtime: pending changes go to the changelog, then are applied locally
      const changes = store.pendingChanges();
      replica.restore(changes, ++offset);
      store.applyCommitted(offset);
    }
    assert.ok(seen.stats().exact.sweeps >= 5, `${seen.stats().exact.sweeps} sweeps`);
    assert.deepEqual([...replica.entries()], [...store.entries()], 'the replica holds the same entries');
    const rebuilt = new SeenSet(replica, SMALL);
    rebuilt.init();
    assert.equal(rebuilt.stats().count, seen.stats().count);
    const fps = Array.from({ length: Math.ceil(n / 7) * 7 }, (_, i) => syntheticFingerprint(i));
    assert.ok(rebuilt.has(fps).every(Boolean));
    assert.deepEqual(rebuilt.has([syntheticFingerprint(n + 100)]), [false]);
  }));

test('exact layer: fingerprints stored one key each by earlier versions are still seen, and never admitted again', () =>
  withDb('seen-exact-legacy', (db) => {
    const store = seenStore(db);
    // the old layout: each fingerprint its own 8-byte key, and the count
    const old = Array.from({ length: 500 }, (_, i) => syntheticFingerprint(i));
    for (const fp of old) store.put(Buffer.from(fp), Buffer.alloc(0));
    const count = Buffer.alloc(8);
    count.writeBigUInt64BE(500n);
    store.put(Buffer.from('count'), count);
    store.applyCommitted(1);

    const seen = new SeenSet(store, SMALL);
    seen.init();
    assert.equal(seen.stats().count, 500);
    // while the filter warms, the old keys are asked for one by one (in one batched read)
    assert.ok(seen.has(old).every(Boolean), 'seen while warming');
    seen.warmAll();
    assert.equal(seen.stats().exact.legacy, 500);
    assert.ok(seen.has(old).every(Boolean));
    const mixed = [...old.slice(0, 100), ...Array.from({ length: 400 }, (_, i) => syntheticFingerprint(1_000 + i))];
    const fresh = seen.admit(mixed);
    assert.deepEqual(
      fresh,
      mixed.map((_, i) => i >= 100),
    );
    assert.equal(seen.stats().count, 900);
    store.applyCommitted(2);
    // the old keys are read, never rewritten
    assert.ok(old.every((fp) => store.get(fp) !== undefined));
  }));

test('exact layer: fingerprints that share their top 32 bits are merged in order and all found', () =>
  withDb('seen-exact-ties', (db) => {
    const store = seenStore(db);
    const seen = new SeenSet(store, SMALL);
    seen.init();
    const rnd = random(11);
    const fp = (h: number, l: number) => {
      const b = Buffer.alloc(8);
      b.writeUInt32BE(h, 0);
      b.writeUInt32BE(l, 4);
      return b;
    };
    // 40 top halves, each with 30 low halves in random order
    const all: Buffer[] = [];
    for (let h = 0; h < 40; h++)
      for (let l = 0; l < 30; l++) all.push(fp((h * 0x9e3779b9) >>> 0, Math.floor(rnd() * 2 ** 32)));
    for (let i = all.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [all[i], all[j]] = [all[j]!, all[i]!];
    }
    for (let i = 0; i < all.length; i += 5) {
      assert.ok(seen.admit(all.slice(i, i + 5)).every(Boolean));
      if (i % 50 === 0) store.applyCommitted(i + 1);
    }
    assert.ok(seen.stats().exact.sweeps >= 3, `${seen.stats().exact.sweeps} sweeps`);
    assert.ok(seen.has(all).every(Boolean), 'a fingerprint sharing its top half with others was lost');
  }));

test('maxSweep caps how many fingerprints wait unmerged in RAM, whatever the count', () => {
  const store = new MemoryFingerprintStore();
  const seen = new SeenSet(store, {
    expectedCount: 64,
    falsePositiveRate: 0.05,
    exact: { blockTarget: 8, minSweep: 50, sweepFraction: 1, maxSweep: 200, minSweepFraction: 0 },
  });
  seen.init();
  let most = 0;
  for (let i = 0; i < 20_000; i += 10) {
    assert.ok(seen.admit(Array.from({ length: 10 }, (_, j) => syntheticFingerprint(i + j))).every(Boolean));
    most = Math.max(most, seen.stats().exact.unmerged);
  }
  // a sweep completes within 200 new ones, and what came in while it ran waits for the next
  assert.ok(most <= 2 * 200 + 10, `${most} unmerged at most`);
  assert.ok(seen.stats().exact.sweeps >= 20_000 / 400, `${seen.stats().exact.sweeps} sweeps`);
  assert.ok(seen.has(Array.from({ length: 20_000 }, (_, i) => syntheticFingerprint(i))).every(Boolean));
  assert.throws(
    () => new SeenSet(store, { expectedCount: 64, falsePositiveRate: 0.05, exact: { minSweep: 50, maxSweep: 10 } }),
    { code: 'CS_INVALID_OPTION' },
  );
  for (const minSweepFraction of [-0.1, 0.5, Number.NaN])
    assert.throws(
      () =>
        new SeenSet(store, {
          expectedCount: 64,
          falsePositiveRate: 0.05,
          exact: { sweepFraction: 0.25, minSweepFraction },
        }),
      { code: 'CS_INVALID_OPTION' },
    );
});

test('past maxSweep × 1/minSweepFraction, a sweep waits for that fraction of the count: bytes written per admit stay bounded as the set grows', () => {
  // bytes written per new fingerprint as the set grows fourfold and fourfold again: with maxSweep a
  // hard cap every block is rewritten once per 1,000 admits, so they grow with the count; with a
  // floor of count / 8 they level off near 8 × 8 bytes
  const perAdmit = (minSweepFraction: number): number[] => {
    const store = new MemoryFingerprintStore();
    const seen = new SeenSet(store, {
      expectedCount: 64,
      falsePositiveRate: 0.05,
      exact: { blockTarget: 512, minSweep: 50, sweepFraction: 1, maxSweep: 1_000, minSweepFraction },
    });
    seen.init();
    const out: number[] = [];
    let i = 0;
    for (const upTo of [8_000, 32_000, 128_000]) {
      const before = store.bytesWritten;
      const from = i;
      for (; i < upTo; i += 100) seen.admit(Array.from({ length: 100 }, (_, j) => syntheticFingerprint(i + j)));
      out.push((store.bytesWritten - before) / (upTo - from));
    }
    assert.ok(seen.has(Array.from({ length: i }, (_, k) => syntheticFingerprint(k))).every(Boolean));
    return out;
  };
  const capped = perAdmit(0);
  const floored = perAdmit(1 / 8);
  assert.ok(capped[2]! > 2.5 * capped[0]!, `capped: ${capped.map((b) => b.toFixed(0)).join(', ')} B per admit`);
  assert.ok(floored[2]! < 1.5 * floored[1]!, `floored: ${floored.map((b) => b.toFixed(0)).join(', ')} B per admit`);
  assert.ok(floored[2]! < 8 * 8 * 2, `floored: ${floored.map((b) => b.toFixed(0)).join(', ')} B per admit`);
});
