import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RocksPort } from '../../../state/rocks.js';
import { RocksKeyValueStore } from '../../../state/rocks-store.js';
import { bufferSerde } from '../../../core/serde.js';
import { isChangelogged } from '../../../state/store-builder.js';
import avro from 'avsc';
import { loadSchema, type SchemaName } from '../../../schemas/index.js';
import type { FrontEntry, HostState, QueueEntry } from '../../../schemas/types.js';
import { BackQueues } from '../../../processors/frontier/back-queues.js';
import {
  FRONT_STORE,
  frontierStores,
  HOSTS_STORE,
  META_STORE,
  QUEUE_STORE,
  type FrontStore,
  type HostStore,
  type MetaStore,
  type QueueStore,
} from '../../../processors/frontier/frontier-stores.js';
import { FrontQueues } from '../../../processors/frontier/front-queues.js';
import { newHost, numberBytes, readNumber } from '../../../processors/frontier/host-state.js';
import { migrateQueues, QUEUE_FORMAT_KEY } from '../../../processors/frontier/queue-migration.js';
import { withDb as withTempDb } from '../../state/temp-rocks.js';
import { buildStores } from '../../../runtime/task-state.js';

const queueEntry = (i: number): QueueEntry => ({
  url: `https://a.test/p/${i}`,
  depth: 1,
  redirectHops: 0,
  attempts: i % 2,
  discoveredAt: 10 + i,
  kind: 'PAGE',
  visit: 0,
});
const frontEntry = (i: number): FrontEntry => ({
  url: `https://f${i}.test/`,
  host: `f${i}.test`,
  origin: `https://f${i}.test`,
  site: `f${i}.test`,
  depth: 3,
  redirectHops: 1,
  discoveredAt: i,
  kind: 'PAGE',
  visit: 0,
});

/** An entry schema as it was before queue format 3: without the trailing kind and visit. */
function oldEntryType(name: SchemaName): avro.Type {
  const schema = JSON.parse(loadSchema(name).text) as { fields: { name: string }[] };
  return avro.Type.forSchema({
    ...schema,
    fields: schema.fields.filter((f) => f.name !== 'kind' && f.name !== 'visit'),
  } as avro.Schema);
}

/** The stores as the frontier had them before chunks: one key per URL, `<key> seq(u64 BE)`. */
function writeOldLayout(db: RocksPort): void {
  const oldQueue = new RocksKeyValueStore<Buffer, Buffer>('frontier-queue', db, bufferSerde, bufferSerde);
  const oldFront = new RocksKeyValueStore<Buffer, Buffer>('frontier-front', db, bufferSerde, bufferSerde);
  const seqKey = (prefix: Buffer, seq: number) => {
    const b = Buffer.alloc(prefix.length + 8);
    prefix.copy(b);
    b.writeBigUInt64BE(BigInt(seq), prefix.length);
    return b;
  };
  const q = oldEntryType('QueueEntry');
  const f = oldEntryType('FrontEntry');
  // a.test holds entries 5..204, but 7 was lost; the first 5 were fetched long ago
  for (let seq = 5; seq < 205; seq++)
    if (seq !== 7) oldQueue.put(seqKey(Buffer.from('a.test\u0000'), seq), q.toBuffer(queueEntry(seq)));
  for (let seq = 3; seq < 103; seq++) oldFront.put(seqKey(Buffer.from([2]), seq), f.toBuffer(frontEntry(seq)));
  oldQueue.applyCommitted(1);
  oldFront.applyCommitted(1);
}

const withDb = (fn: (db: RocksPort, dir: string) => Promise<void> | void): Promise<void> => withTempDb('migrate', fn);

function frontierStoresOn(db: RocksPort, dir: string) {
  const built = buildStores({ subtopology: 0, partition: 0 }, frontierStores(), { db, storeDir: () => dir }).stores;
  return {
    hosts: built.get(HOSTS_STORE) as HostStore,
    queue: built.get(QUEUE_STORE) as QueueStore,
    front: built.get(FRONT_STORE) as FrontStore,
    meta: built.get(META_STORE) as MetaStore,
    commit: (offset: number) => {
      for (const s of built.values()) if (isChangelogged(s)) s.applyCommitted(offset);
    },
    discard: () => {
      for (const s of built.values()) if (isChangelogged(s)) s.discardPending();
    },
  };
}

test('queues stored one key per URL are rewritten into chunks once, in order, lost entries skipped', () =>
  withDb((db, dir) => {
    writeOldLayout(db);
    const s = frontierStoresOn(db, dir);
    s.hosts.put('a.test', { ...newHost('a.test', 'https://a.test', 'a.test'), headSeq: 5, tailSeq: 205 });
    s.hosts.put('b.test', { ...newHost('b.test', 'https://b.test', 'b.test'), headSeq: 17, tailSeq: 17 });
    s.meta.put('front-head-2', numberBytes(3));
    s.meta.put('front-tail-2', numberBytes(103));
    s.commit(1);

    // a crash before the first commit after the rewrite: it runs again from the old layout
    assert.equal(migrateQueues(s), 199 + 100);
    s.discard();
    assert.equal(migrateQueues(s), 199 + 100);
    s.commit(2);
    assert.equal(migrateQueues(s), 0, 'the layout is recorded as chunked');
    assert.equal(readNumber(s.meta.get(QUEUE_FORMAT_KEY)), 3);

    const a = s.hosts.get('a.test')!;
    assert.deepEqual([a.headSeq, a.tailSeq], [0, 199]);
    const b = s.hosts.get('b.test')!;
    assert.deepEqual([b.headSeq, b.tailSeq], [0, 0]);
    const back = new BackQueues(s.queue);
    const drained: QueueEntry[] = [];
    for (let e = back.head(a); e !== undefined; e = back.head(a)) {
      assert.ok(e !== null);
      drained.push(e);
      back.pop(a);
    }
    assert.deepEqual(
      drained,
      Array.from({ length: 200 }, (_, i) => queueEntry(5 + i)).filter((e) => e.url !== queueEntry(7).url),
    );

    const front = new FrontQueues(
      s.front,
      (k) => readNumber(s.meta.get(k)),
      (k, v) => s.meta.put(k, numberBytes(v)),
    );
    assert.equal(front.size, 100);
    const popped: FrontEntry[] = [];
    for (let e = front.pop(); e; e = front.pop()) popped.push(e);
    assert.deepEqual(
      popped,
      Array.from({ length: 100 }, (_, i) => frontEntry(3 + i)),
    );
    back.flush();
    front.flush();
    s.commit(3);
    assert.deepEqual(
      [...(s.queue as unknown as RocksKeyValueStore<unknown, unknown>).entries()],
      [],
      'no old key is left behind',
    );
  }));

test('fresh stores are marked chunked and nothing is moved', () =>
  withDb((db, dir) => {
    const s = frontierStoresOn(db, dir);
    assert.equal(migrateQueues(s), 0);
    assert.equal(readNumber(s.meta.get(QUEUE_FORMAT_KEY)), 3);
    const state: HostState = newHost('a.test', 'https://a.test', 'a.test');
    assert.deepEqual([state.headSeq, state.tailSeq], [0, 0]);
  }));

test('chunks of format 2 get each entry a kind and a visit, in place, once; entries before the head keep their positions', () =>
  withDb((db, dir) => {
    const s = frontierStoresOn(db, dir);
    const q = oldEntryType('QueueEntry');
    const f = oldEntryType('FrontEntry');
    // a.test: chunk 0 holds entries 0..63 (0..9 already fetched), chunk 1 entries 64..99
    const chunk = (from: number, to: number, encode: (i: number) => Buffer) =>
      Buffer.concat(Array.from({ length: to - from }, (_, k) => encode(from + k)));
    const raw = new RocksKeyValueStore<Buffer, Buffer>('frontier-queue', db, bufferSerde, bufferSerde);
    const key = (host: string, c: number) => {
      const b = Buffer.alloc(host.length + 1 + 8);
      b.write(host);
      b.writeBigUInt64BE(BigInt(c), host.length + 1);
      return b;
    };
    raw.put(
      key('a.test', 0),
      chunk(0, 64, (i) => q.toBuffer(queueEntry(i))),
    );
    raw.put(
      key('a.test', 1),
      chunk(64, 100, (i) => q.toBuffer(queueEntry(i))),
    );
    raw.applyCommitted(1);
    const rawFront = new RocksKeyValueStore<Buffer, Buffer>('frontier-front', db, bufferSerde, bufferSerde);
    const frontKey = Buffer.alloc(9);
    frontKey[0] = 1;
    rawFront.put(
      frontKey,
      chunk(0, 20, (i) => f.toBuffer(frontEntry(i))),
    );
    rawFront.applyCommitted(1);
    s.hosts.put('a.test', { ...newHost('a.test', 'https://a.test', 'a.test'), headSeq: 10, tailSeq: 100 });
    s.meta.put('front-head-1', numberBytes(5));
    s.meta.put('front-tail-1', numberBytes(20));
    s.meta.put(QUEUE_FORMAT_KEY, numberBytes(2));
    s.commit(2);

    assert.equal(migrateQueues(s), 90 + 15);
    s.commit(3);
    assert.equal(migrateQueues(s), 0, 'format 3 is recorded');
    assert.equal(readNumber(s.meta.get(QUEUE_FORMAT_KEY)), 3);
    const a = s.hosts.get('a.test')!;
    const back = new BackQueues(s.queue);
    const drained: QueueEntry[] = [];
    for (let e = back.head(a); e !== undefined; e = back.head(a)) {
      assert.ok(e !== null);
      drained.push(e);
      back.pop(a);
    }
    assert.deepEqual(
      drained,
      Array.from({ length: 90 }, (_, i) => queueEntry(10 + i)),
    );
    const front = new FrontQueues(
      s.front,
      (k) => readNumber(s.meta.get(k)),
      (k, v) => s.meta.put(k, numberBytes(v)),
    );
    const popped: FrontEntry[] = [];
    for (let e = front.pop(); e; e = front.pop()) popped.push(e);
    assert.deepEqual(
      popped,
      Array.from({ length: 15 }, (_, i) => frontEntry(5 + i)),
    );
  }));
