import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RocksPort } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import { bufferSerde } from '../../core/serde.js';
import { SeenSet } from '../../state/seen-set.js';
import { syntheticFingerprint } from './seen-set-memory-store.js';
import { withDb as withTempDb } from './temp-rocks.js';

const withDb = (fn: (db: RocksPort) => Promise<void> | void): Promise<void> => withTempDb('seen', fn);

const seenStore = (db: RocksPort) =>
  new RocksKeyValueStore<Buffer, Buffer>('frontier-seen', db, bufferSerde, bufferSerde);

test('getMany returns committed values and honours pending puts and deletes', () =>
  withDb((db) => {
    const s = seenStore(db);
    const k = (c: string) => Buffer.from(c);
    s.put(k('a'), k('1'));
    s.put(k('b'), k('2'));
    s.applyCommitted(1);
    s.put(k('c'), k('3'));
    s.delete(k('a'));
    assert.deepEqual(
      s.getMany([k('a'), k('b'), k('c'), k('d')]).map((v) => v?.toString()),
      [undefined, '2', '3', undefined],
    );
    assert.deepEqual(s.getMany([]), []);
  }));

test(
  'seen-set on RocksDB: 1 M fingerprints admitted once, survive a restart, and the Bloom is rebuilt from them',
  { timeout: 60_000 },
  () =>
    withDb((db) => {
      const n = 1_000_000;
      const batch = 1_000;
      let store = seenStore(db);
      let seen = new SeenSet(store, { expectedCount: 300_000, falsePositiveRate: 0.01 });
      seen.init();
      let offset = 0;
      let lost = 0;
      for (let start = 0; start < n; start += batch) {
        const fps = Array.from({ length: batch }, (_, j) => syntheticFingerprint(start + j));
        for (const fresh of seen.admit(fps)) if (!fresh) lost++;
        // the runtime commits every so often; a batch straddles pending and committed state
        if ((start / batch) % 10 === 9) store.applyCommitted(++offset);
      }
      assert.equal(lost, 0, 'new fingerprints were treated as seen');
      const before = seen.stats();
      assert.equal(before.count, n);
      assert.ok(before.rebuilds >= 1, 'growing past the expected count adds a filter segment');
      assert.ok(before.bloomFalsePositives > 0, 'some Bloom false positives were confirmed against RocksDB');
      store.applyCommitted(offset + 1);

      // a restarted task: fresh store object over the same RocksDB, Bloom rebuilt at init
      store = seenStore(db);
      seen = new SeenSet(store, { expectedCount: 300_000, falsePositiveRate: 0.01 });
      seen.init();
      assert.equal(seen.stats().count, n);
      assert.ok(
        seen.sizing().sizedFor >= 1.25 * n,
        'sized for the stored count and headroom, not the smaller expected one',
      );
      const old: Buffer[] = [];
      for (let i = 0; i < n; i += 7) old.push(syntheticFingerprint(i));
      for (let i = 0; i < old.length; i += batch) {
        assert.ok(
          seen.admit(old.slice(i, i + batch)).every((fresh) => !fresh),
          'a fingerprint from before the restart was admitted again',
        );
      }
      const fresh = Array.from({ length: 100_000 }, (_, i) => syntheticFingerprint(n + i));
      for (let i = 0; i < fresh.length; i += batch) {
        assert.ok(seen.admit(fresh.slice(i, i + batch)).every(Boolean), 'a new fingerprint was lost after the restart');
      }
    }),
);
