import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openRocks, type RocksPort } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import { keyValueStore, isChangelogged } from '../../state/store-builder.js';
import { stringSerde, type Serde } from '../../core/serde.js';
import { withDb as withTempDb } from './temp-rocks.js';
import { seededRandom } from '../../synthetic-web/seeded-random.js';

const numberSerde: Serde<number> = {
  serialize: (n) => Buffer.from(String(n)),
  deserialize: (b) => Number(b.toString()),
};

const withDb = (fn: (db: RocksPort, dir: string) => Promise<void> | void): Promise<void> => withTempDb('rocks', fn);

const store = (db: RocksPort, name = 'words') =>
  new RocksKeyValueStore<string, number>(name, db, stringSerde, numberSerde);
const all = (s: RocksKeyValueStore<string, number>) => [...s.range('', '\u{10ffff}')];
const rawEntries = (s: RocksKeyValueStore<string, number>) =>
  [...s.entries()].map(([k, v]) => [k.toString(), v.toString()]);

test('reads see pending writes and deletes before any commit', () =>
  withDb((db) => {
    const s = store(db);
    assert.equal(s.get('a'), undefined);
    s.put('a', 1);
    assert.equal(s.get('a'), 1);
    s.put('a', 2);
    assert.equal(s.get('a'), 2);
    s.applyCommitted(1);
    s.delete('a');
    assert.equal(s.get('a'), undefined, 'a pending delete hides the committed value');
    assert.deepEqual(rawEntries(s), [['a', '2']], 'the delete is not yet applied');
  }));

test('pendingChanges holds the last write per key, deletes as null', () =>
  withDb((db) => {
    const s = store(db);
    s.put('a', 1);
    s.put('b', 2);
    s.put('a', 3);
    s.delete('b');
    assert.deepEqual(
      s.pendingChanges().map((c) => [c.key.toString(), c.value?.toString() ?? null]),
      [
        ['a', '3'],
        ['b', null],
      ],
    );
  }));

test('range merges pending puts and deletes with committed entries in key order', () =>
  withDb((db) => {
    const s = store(db);
    for (const [k, v] of [
      ['b', 1],
      ['d', 2],
      ['f', 3],
      ['h', 4],
    ] as const)
      s.put(k, v);
    s.applyCommitted(4);
    s.put('a', 10); // before every committed key
    s.put('d', 20); // overrides a committed key
    s.delete('f'); // hides a committed key
    s.put('e', 30); // between committed keys
    s.put('z', 40); // after every committed key
    s.delete('q'); // deleting an absent key yields nothing
    assert.deepEqual(all(s), [
      ['a', 10],
      ['b', 1],
      ['d', 20],
      ['e', 30],
      ['h', 4],
      ['z', 40],
    ]);
    assert.deepEqual(
      [...s.range('c', 'h')],
      [
        ['d', 20],
        ['e', 30],
      ],
      'gte inclusive, lt exclusive',
    );
    assert.deepEqual([...s.range('a', 'b')], [['a', 10]]);
    assert.deepEqual([...s.range('x', 'y')], []);
  }));

test('range with only pending or only committed entries', () =>
  withDb((db) => {
    const s = store(db);
    s.put('m', 1);
    s.put('c', 2);
    assert.deepEqual(all(s), [
      ['c', 2],
      ['m', 1],
    ]);
    s.applyCommitted(2);
    assert.deepEqual(all(s), [
      ['c', 2],
      ['m', 1],
    ]);
  }));

test('stores sharing one RocksDB do not see each other', () =>
  withDb((db) => {
    const a = store(db, 'a');
    const ab = store(db, 'ab');
    a.put('k', 1);
    a.applyCommitted(1);
    ab.put('k', 2);
    ab.applyCommitted(7);
    assert.equal(a.get('k'), 1);
    assert.equal(ab.get('k'), 2);
    assert.deepEqual(all(a), [['k', 1]]);
    assert.deepEqual(rawEntries(ab), [['k', '2']]);
    assert.equal(a.checkpoint(), 1);
    assert.equal(ab.checkpoint(), 7);
  }));

test('discardPending drops uncommitted writes and keeps committed ones', () =>
  withDb((db) => {
    const s = store(db);
    s.put('a', 1);
    s.applyCommitted(1);
    s.put('a', 2);
    s.put('b', 3);
    s.delete('a');
    s.discardPending();
    assert.equal(s.get('a'), 1);
    assert.equal(s.get('b'), undefined);
    assert.deepEqual(s.pendingChanges(), []);
    assert.deepEqual(all(s), [['a', 1]]);
  }));

test('applyCommitted writes pending changes and the checkpoint, then has nothing pending', () =>
  withDb((db) => {
    const s = store(db);
    assert.equal(s.checkpoint(), 0, 'a fresh store is at offset 0');
    s.put('a', 1);
    s.put('b', 2);
    s.applyCommitted(2);
    assert.deepEqual(s.pendingChanges(), []);
    assert.equal(s.checkpoint(), 2);
    s.delete('a');
    s.applyCommitted(3);
    assert.deepEqual(rawEntries(s), [['b', '2']]);
    assert.equal(s.checkpoint(), 3);
  }));

test('restore applies changelog records (deletes included) and sets the checkpoint', () =>
  withDb((db) => {
    const s = store(db);
    s.put('gone', 9);
    s.applyCommitted(1);
    s.restore(
      [
        { key: Buffer.from('x'), value: Buffer.from('1') },
        { key: Buffer.from('gone'), value: null },
        { key: Buffer.from('x'), value: Buffer.from('5') },
      ],
      12,
    );
    assert.equal(s.checkpoint(), 12);
    assert.deepEqual(rawEntries(s), [['x', '5']]);
    assert.equal(s.get('x'), 5);
  }));

test('entries yields committed entries only, raw, in key order', () =>
  withDb((db) => {
    const s = store(db);
    s.put('b', 2);
    s.put('a', 1);
    s.applyCommitted(2);
    s.put('c', 3);
    assert.deepEqual(rawEntries(s), [
      ['a', '1'],
      ['b', '2'],
    ]);
    assert.ok([...s.entries()].every(([k, v]) => Buffer.isBuffer(k) && Buffer.isBuffer(v)));
  }));

test('values survive close and reopen only after applyCommitted', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-rocks-'));
  try {
    let db = await openRocks(path.join(dir, 'db'));
    let s = store(db);
    s.put('kept', 1);
    s.applyCommitted(1);
    s.put('lost', 2);
    s.close();
    await db.close();
    db = await openRocks(path.join(dir, 'db'));
    s = store(db);
    assert.equal(s.get('kept'), 1);
    assert.equal(s.get('lost'), undefined);
    assert.equal(s.checkpoint(), 1);
    assert.deepEqual(all(s), [['kept', 1]]);
    await db.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('keyValueStore builds a changelogged RocksKeyValueStore on the task db', () =>
  withDb((db, dir) => {
    const builder = keyValueStore('kv', stringSerde, numberSerde);
    assert.equal(builder.changelog, true);
    const s = builder.build({ taskId: { subtopology: 0, partition: 0 }, db, dir });
    assert.ok(s instanceof RocksKeyValueStore);
    assert.ok(isChangelogged(s));
    s.put('a', 1);
    assert.equal(s.get('a'), 1);
  }));

test('RocksPort iterate honours bounds, reverse and limit; write is atomic with deletes', () =>
  withDb((db) => {
    const b = (s: string) => Buffer.from(s);
    db.write(
      ['a', 'b', 'c', 'd'].map((k) => ({ key: b(k), value: b(k.toUpperCase()) })),
      { sync: true },
    );
    db.write([
      { key: b('b'), value: null },
      { key: b('e'), value: b('E') },
    ]);
    const keys = (it: Iterable<[Buffer, Buffer]>) => [...it].map(([k]) => k.toString()).join('');
    assert.equal(keys(db.iterate(b('a'), b('z'))), 'acde');
    assert.equal(keys(db.iterate(b('a'), b('d'))), 'ac');
    assert.equal(keys(db.iterate(b('a'), b('z'), { reverse: true, limit: 2 })), 'ed');
    assert.deepEqual(db.getMany([b('a'), b('b')]), [b('A'), undefined]);
  }));

test('openRocks refuses a second open of the same directory with CS_STORE', () =>
  withDb(async (db) => {
    await assert.rejects(openRocks(db.path), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'CS_STORE');
      assert.match(err.message, /cannot open RocksDB at/);
      return true;
    });
  }));

test('applyCommitted writes many keys in any pending order, each with its own value', () =>
  withDb((db) => {
    const s = store(db);
    const keys = Array.from({ length: 5_000 }, (_, i) => `k${(i * 7_919) % 5_000}`);
    for (const [i, k] of keys.entries()) s.put(k, i);
    s.delete('k17');
    s.applyCommitted(1);
    const expected = keys
      .map((k, i) => [k, i] as [string, number])
      .filter(([k]) => k !== 'k17')
      .sort(([a], [b]) => (a < b ? -1 : 1));
    assert.deepEqual(all(s), expected);
    assert.equal(s.checkpoint(), 1);
  }));

test('RocksPort stays usable after a failed write, with nothing of it left over', () =>
  withDb((db) => {
    const b = (s: string) => Buffer.from(s);
    assert.throws(
      () =>
        db.write([
          { key: b('half'), value: b('1') },
          { key: 42 as unknown as Buffer, value: b('2') },
        ]),
      { code: 'CS_STORE' },
    );
    db.write([{ key: b('whole'), value: b('3') }]);
    assert.deepEqual(
      [...db.iterate(b('a'), b('z'))].map(([k]) => k.toString()),
      ['whole'],
    );
  }));

/**
 * Random puts, deletes, ranges and commits on one store, every range checked against a plain
 * sorted model; returns the most pending writes a range saw.
 */
function rangeAgainstModel(
  s: RocksKeyValueStore<string, number>,
  o: { keys: number; steps: number; rangeShare: number; commitShare: number },
): number {
  const model = new Map<string, number>();
  const random = seededRandom(20_261_201);
  const name = (n: number) => `k${String(n).padStart(6, '0')}`;
  const key = () => name(Math.floor(random() * o.keys));
  let mostPending = 0;
  for (let step = 0; step < o.steps; step++) {
    const r = random();
    if (r < o.commitShare) {
      s.applyCommitted(step);
    } else if (r < o.commitShare + o.rangeShare) {
      mostPending = Math.max(mostPending, s.pendingCount());
      // a window of up to 5 % of the keys
      const from = Math.floor(random() * o.keys);
      const [a, b] = [name(from), name(from + Math.floor(random() * o.keys * 0.05))];
      const expected = [...model].filter(([k]) => k >= a && k < b).sort(([x], [y]) => (x < y ? -1 : 1));
      assert.deepEqual([...s.range(a, b)], expected, `range ${a}..${b} at step ${step}`);
    } else if (random() < 0.8) {
      const k = key();
      s.put(k, step);
      model.set(k, step);
    } else {
      const k = key();
      s.delete(k);
      model.delete(k);
    }
  }
  return mostPending;
}

// the sorted overlay serves ranges from 64 pending writes on; new keys are inserted in place up to
// 8,192 sorted ones, beyond that they wait unsorted until 256 of them make it sort again
test('range over hundreds of pending writes, interleaved with puts, deletes, rewrites and commits, equals a plain sorted model', () =>
  withDb((db) => {
    const most = rangeAgainstModel(store(db), { keys: 2_000, steps: 6_000, rangeShare: 0.3, commitShare: 0.001 });
    assert.ok(most > 600, `at most ${most} pending writes: too few to test the sorted overlay`);
  }));

test('range over more than 8,192 pending writes (new keys past the in-place limit) equals a plain sorted model', () =>
  withDb((db) => {
    const most = rangeAgainstModel(store(db), { keys: 100_000, steps: 14_000, rangeShare: 0.03, commitShare: 0 });
    assert.ok(most > 9_000, `at most ${most} pending writes: too few to pass the in-place limit`);
  }));
