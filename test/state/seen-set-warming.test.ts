import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RocksPort } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import { bufferSerde } from '../../core/serde.js';
import { SeenSet, type FingerprintStore, type SeenSetOptions } from '../../state/seen-set.js';
import { syntheticFingerprint } from './seen-set-memory-store.js';
import { withDb } from './temp-rocks.js';
import { seededRandom as random } from '../../synthetic-web/seeded-random.js';

const seenStore = (db: RocksPort) =>
  new RocksKeyValueStore<Buffer, Buffer>('frontier-seen', db, bufferSerde, bufferSerde);

// tiny blocks and short sweeps: a few thousand fingerprints make many blocks, runs and sweeps
const SMALL: SeenSetOptions = {
  expectedCount: 64,
  falsePositiveRate: 0.05,
  exact: { blockTarget: 8, minSweep: 50, sweepFraction: 1 / 4 },
};

/** The store's reads, counted: keys asked for and entries a range handed out. */
class CountingStore implements FingerprintStore {
  keysRead = 0;
  rangeEntries = 0;
  constructor(private readonly inner: FingerprintStore) {}
  get(key: Buffer): Buffer | undefined {
    this.keysRead++;
    return this.inner.get(key);
  }
  getMany(keys: readonly Buffer[]): (Buffer | undefined)[] {
    this.keysRead += keys.length;
    return this.inner.getMany(keys);
  }
  put(key: Buffer, value: Buffer): void {
    this.inner.put(key, value);
  }
  delete(key: Buffer): void {
    this.inner.delete(key);
  }
  *range(gte: Buffer, lt: Buffer): IterableIterator<[Buffer, Buffer]> {
    for (const entry of this.inner.range(gte, lt)) {
      this.rangeEntries++;
      yield entry;
    }
  }
}

const fps = (ids: readonly number[]) => ids.map((id) => syntheticFingerprint(id));

/** Admits ids 1..n in batches of 10, committing every 7 batches; returns the committed count. */
function fill(store: RocksKeyValueStore<Buffer, Buffer>, options: SeenSetOptions, n: number): number {
  const seen = new SeenSet(store, options);
  seen.init();
  let offset = 0;
  for (let id = 1; id <= n; id += 10) {
    seen.admit(fps(Array.from({ length: Math.min(10, n + 1 - id) }, (_, j) => id + j)));
    if (id % 70 === 1) store.applyCommitted(++offset);
  }
  store.applyCommitted(++offset);
  assert.ok(seen.stats().exact.runs > 0 && seen.stats().exact.sweeps > 0, 'runs and blocks both hold fingerprints');
  return offset;
}

test('a seen-set opens with a constant number of store reads, however many fingerprints it holds', () =>
  withDb('seen-warm-open', (db) => {
    const store = seenStore(db);
    fill(store, SMALL, 20_000);
    const counting = new CountingStore(store);
    const seen = new SeenSet(counting, SMALL);
    seen.init();
    assert.ok(counting.keysRead <= 3, `init read ${counting.keysRead} keys`);
    assert.equal(counting.rangeEntries, 0, 'init scanned the store');
    assert.equal(seen.stats().count, 20_000);
    assert.equal(seen.stats().warming, true);
    // the scan happens in the warm steps instead: every stored key once
    let steps = 0;
    while (!seen.warm(0)) steps++;
    assert.ok(steps > 100, `${steps} warm steps`);
    assert.ok(counting.rangeEntries >= steps, `${counting.rangeEntries} entries read by ${steps} steps`);
    assert.equal(seen.stats().warming, false);
  }));

test('while the filter warms, no fingerprint seen before is admitted: through warm steps, commits, discarded commits and restarts', () =>
  withDb('seen-warm-random', (db) => {
    const rnd = random(13);
    let store = seenStore(db);
    // fingerprints an old version stored one key each, then a crawl in runs and blocks
    const committed = new Set<number>();
    for (let id = 1; id <= 300; id++) {
      store.put(Buffer.from(syntheticFingerprint(id)), Buffer.alloc(0));
      committed.add(id);
    }
    const count = Buffer.alloc(8);
    count.writeBigUInt64BE(300n);
    store.put(Buffer.from('count'), count);
    store.applyCommitted(1);
    let seen = new SeenSet(store, SMALL);
    seen.init();
    let pending = new Set<number>();
    let universe = 301;
    let offset = 1;
    let restarts = 0;
    let checkedWarming = 0;
    for (let round = 0; round < 3_000; round++) {
      // a warm step of one store key, now and then: warming spans many batches, commits and sweeps
      if (rnd() < 0.5) seen.warm(0);
      const ids: number[] = [];
      const size = 1 + Math.floor(rnd() * 12);
      for (let j = 0; j < size; j++) {
        const r = rnd();
        if (r < 0.5) ids.push(universe++);
        // seen before: committed (legacy keys, blocks, runs) or pending, not yet committed
        else if (r < 0.9) ids.push(1 + Math.floor(rnd() * (universe - 1)));
        else ids.push(ids[0] ?? universe++);
      }
      const warming = seen.stats().warming;
      const admitting = rnd() < 0.8;
      const fresh = admitting ? seen.admit(fps(ids)) : seen.has(fps(ids)).map((s) => !s);
      const inBatch = new Set<number>();
      ids.forEach((id, j) => {
        const expectNew = !committed.has(id) && !pending.has(id) && !inBatch.has(id);
        assert.equal(fresh[j], expectNew, `round ${round} (warming ${warming}): id ${id} new=${fresh[j]}`);
        // `has` records nothing, so a repeat within its batch is as new as the first
        if (admitting) inBatch.add(id);
      });
      if (warming) checkedWarming++;
      if (admitting) for (const id of ids) if (!committed.has(id)) pending.add(id);
      assert.equal(seen.stats().count, committed.size + pending.size, `round ${round}: count`);
      const r = rnd();
      if (r < 0.15) {
        store.applyCommitted(++offset);
        for (const id of pending) committed.add(id);
        pending = new Set();
      } else if (r < 0.18 || r > 0.995) {
        if (r < 0.18) {
          // a failed commit: the runtime discards pending writes and opens the task again
          store.discardPending();
        } else {
          store.applyCommitted(++offset);
          for (const id of pending) committed.add(id);
        }
        pending = new Set();
        restarts++;
        store = seenStore(db);
        seen = new SeenSet(store, SMALL);
        seen.init();
      }
    }
    assert.ok(restarts >= 20, `${restarts} restarts`);
    assert.ok(checkedWarming > 1_000, `${checkedWarming} batches checked while warming`);
    const stats = seen.stats();
    assert.ok(stats.exact.sweeps >= 5, `${stats.exact.sweeps} sweeps`);
    assert.ok(stats.warmChecks > 0, 'checks were made because the filter was warming');
    while (!seen.warm(0));
    const all = [...committed, ...pending];
    assert.ok(seen.has(fps(all)).every(Boolean), 'a recorded fingerprint was lost');
    assert.equal(seen.stats().exact.legacy, 300);
  }));

test('an admit before any warm step reads the runs at once and stays exact; once warm, the filter answers first again', () =>
  withDb('seen-warm-first-admit', (db) => {
    const store = seenStore(db);
    fill(store, SMALL, 5_000);
    const seen = new SeenSet(store, SMALL);
    seen.init();
    // seen before (blocks and runs alike), new, and a new one twice in the batch
    const batch = fps([1, 2_500, 4_999, 5_000, 6_001, 6_002, 6_001]);
    assert.deepEqual(seen.admit(batch), [false, false, false, false, true, true, false]);
    assert.equal(seen.stats().exact.runsForced, 1);
    // staged and pending, not committed: seen at once, by the next batch and after warming
    assert.deepEqual(seen.admit(fps([6_001, 6_003])), [false, true]);
    let steps = 0;
    while (!seen.warm(0)) {
      if (++steps % 50 === 0) {
        const again = seen.admit(fps([steps, 6_002, 10_000 + steps]));
        assert.deepEqual(again, [false, false, true], `warm step ${steps}`);
      }
    }
    const checksBefore = seen.stats().warmChecks;
    assert.ok(checksBefore > 0);
    assert.ok(seen.admit(fps(Array.from({ length: 1_000 }, (_, i) => 20_000 + i))).every(Boolean));
    assert.equal(seen.stats().warmChecks, checksBefore, 'a warm filter answers "new" alone');
    assert.ok(seen.has(fps(Array.from({ length: 5_000 }, (_, i) => i + 1))).every(Boolean));
    assert.equal(seen.stats().exact.runsForced, 1);
  }));

test('a warmed filter is sized as before: for 1.25 × the stored count, without growing while it fills', () =>
  withDb('seen-warm-sizing', (db) => {
    const store = seenStore(db);
    fill(store, { ...SMALL, expectedCount: 1_000 }, 8_000);
    const seen = new SeenSet(store, { ...SMALL, expectedCount: 1_000 });
    seen.init();
    assert.equal(seen.sizing().sizedFor, 10_000);
    seen.warmAll();
    assert.equal(seen.stats().rebuilds, 0);
    assert.equal(seen.sizing().sizedFor, 10_000);
    assert.ok(!seen.stats().warning, `estimated rate ${seen.stats().estimatedFalsePositiveRate}`);
  }));

test('a store written before there was a count is counted by its scan, even when its task restarts mid-warm', () =>
  withDb('seen-warm-uncounted', (db) => {
    const store = seenStore(db);
    for (let id = 1; id <= 200; id++) store.put(Buffer.from(syntheticFingerprint(id)), Buffer.alloc(0));
    store.applyCommitted(1);
    const seen = new SeenSet(store, SMALL);
    seen.init();
    assert.deepEqual(seen.admit(fps([5, 1_000, 1_001])), [false, true, true]);
    store.applyCommitted(2);
    const restarted = new SeenSet(store, SMALL);
    restarted.init();
    restarted.warmAll();
    assert.equal(restarted.stats().count, 202);
    assert.deepEqual(restarted.admit(fps([1_000, 1_002])), [false, true]);
    store.applyCommitted(3);
    const again = new SeenSet(store, SMALL);
    again.init();
    assert.equal(again.stats().count, 203, 'the count is stored once known');
  }));
