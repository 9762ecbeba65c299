import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openRocks, type RocksPort } from '../../../state/rocks.js';
import { RocksKeyValueStore } from '../../../state/rocks-store.js';
import type { HostState, QueueEntry } from '../../../schemas/types.js';
import { BackQueues, queueKeySerde, type QueueKey } from '../../../processors/frontier/back-queues.js';
import { newHost } from '../../../processors/frontier/host-state.js';
import { CHUNK_ENTRIES, chunkSerde, type QueueChunk } from '../../../processors/frontier/queue-chunk.js';
import { withDb as withTempDb } from '../../state/temp-rocks.js';

type Store = RocksKeyValueStore<QueueKey, QueueChunk>;
const queueStore = (db: RocksPort) =>
  new RocksKeyValueStore<QueueKey, QueueChunk>('frontier-queue', db, queueKeySerde, chunkSerde);
const entry = (i: number): QueueEntry => ({
  url: `https://a.test/p/${i}`,
  depth: i % 7,
  redirectHops: 0,
  attempts: i % 3,
  discoveredAt: 1_000 + i,
  kind: 'PAGE',
  visit: i % 4,
});

const withDb = (fn: (db: RocksPort, dir: string) => Promise<void> | void): Promise<void> => withTempDb('back', fn);

/** Pops every entry, as a lease and its result would: head, then pop. */
function drain(q: BackQueues, state: HostState, max = Infinity): QueueEntry[] {
  const out: QueueEntry[] = [];
  while (out.length < max) {
    const e = q.head(state);
    if (e === undefined) break;
    assert.ok(e !== null, 'an entry was lost');
    out.push(e);
    q.pop(state);
  }
  return out;
}

const storedChunks = (s: Store) => [...s.entries()].length;

test('a host FIFO keeps its order across chunk boundaries, appends and pops interleaved', () =>
  withDb((db) => {
    const s = queueStore(db);
    const q = new BackQueues(s);
    const state = newHost('a.test', 'https://a.test', 'a.test');
    const popped: QueueEntry[] = [];
    let next = 0;
    for (const [add, take] of [
      [1, 0],
      [63, 10],
      [70, 70],
      [200, 5],
      [0, 300],
    ] as const) {
      for (let i = 0; i < add; i++) q.append(state, entry(next++));
      q.flush();
      popped.push(...drain(q, state, take));
      q.flush();
    }
    assert.deepEqual(
      popped,
      Array.from({ length: next }, (_, i) => entry(i)),
    );
    assert.equal(state.headSeq, state.tailSeq);
    s.applyCommitted(1);
    assert.equal(storedChunks(s), 0, 'every chunk went with its last entry');
  }));

test('an emptied FIFO restarts on a chunk boundary and deletes its chunk', () =>
  withDb((db) => {
    const s = queueStore(db);
    const q = new BackQueues(s);
    const state = newHost('a.test', 'https://a.test', 'a.test');
    for (let i = 0; i < 5; i++) q.append(state, entry(i));
    q.flush();
    s.applyCommitted(1);
    assert.equal(storedChunks(s), 1);
    assert.equal(drain(q, state).length, 5);
    assert.deepEqual([state.headSeq, state.tailSeq], [CHUNK_ENTRIES, CHUNK_ENTRIES]);
    q.append(state, entry(5));
    q.flush();
    s.applyCommitted(2);
    assert.deepEqual(
      [...s.entries()].map(([k]) => queueKeySerde.deserialize(k)),
      [{ host: 'a.test', chunk: 1 }],
    );
    assert.deepEqual(q.head(state), entry(5));
  }));

test('one chunk per CHUNK_ENTRIES URLs: 1,000 queued URLs are 16 keys', () =>
  withDb((db) => {
    const s = queueStore(db);
    const q = new BackQueues(s);
    const state = newHost('a.test', 'https://a.test', 'a.test');
    for (let i = 0; i < 1_000; i++) {
      q.append(state, entry(i));
      // a commit between appends rewrites the tail chunk, never adds a key per URL
      if (i % 37 === 0) {
        q.flush();
        s.applyCommitted(i + 1);
      }
    }
    q.flush();
    s.applyCommitted(2_000);
    assert.equal(storedChunks(s), Math.ceil(1_000 / CHUNK_ENTRIES));
  }));

test('queues survive a reopen of the database; what was not committed is gone', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-back-'));
  try {
    let db = await openRocks(path.join(dir, 'db'));
    let s = queueStore(db);
    let q = new BackQueues(s);
    const state = newHost('a.test', 'https://a.test', 'a.test');
    for (let i = 0; i < 100; i++) q.append(state, entry(i));
    q.flush();
    drain(q, state, 30);
    q.flush();
    s.applyCommitted(1);
    // the host's bounds are stored with the chunks in the same commit (frontier-hosts)
    const committed = { ...state };
    // a crash between commits: more appends and pops, never committed
    for (let i = 100; i < 150; i++) q.append(state, entry(i));
    drain(q, state, 60);
    q.flush();
    s.close();
    await db.close();

    db = await openRocks(path.join(dir, 'db'));
    s = queueStore(db);
    q = new BackQueues(s);
    const restored = { ...committed };
    assert.deepEqual(
      drain(q, restored),
      Array.from({ length: 70 }, (_, i) => entry(30 + i)),
    );
    await db.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a store rebuilt from the changelog alone holds the same queues', () =>
  withDb(async (db, dir) => {
    const s = queueStore(db);
    const q = new BackQueues(s);
    const hosts = ['a.test', 'b.test', 'c.test'].map((h) => newHost(h, `https://${h}`, h));
    const changelog: { key: Buffer; value: Buffer | null }[] = [];
    let n = 0;
    for (let round = 0; round < 20; round++) {
      for (const [i, h] of hosts.entries()) for (let k = 0; k < 7 * (i + 1); k++) q.append(h, entry(n++));
      q.flush();
      for (const h of hosts) drain(q, h, 5 + round);
      q.flush();
      changelog.push(
        ...s.pendingChanges().map((c) => ({ key: Buffer.from(c.key), value: c.value && Buffer.from(c.value) })),
      );
      s.applyCommitted(changelog.length);
    }
    const replica = await openRocks(path.join(dir, 'replica'));
    try {
      const r = queueStore(replica);
      r.restore(changelog, changelog.length);
      assert.deepEqual([...r.entries()], [...s.entries()]);
      const rq = new BackQueues(r);
      for (const h of hosts) assert.deepEqual(drain(rq, { ...h }), drain(q, { ...h }));
    } finally {
      await replica.close();
    }
  }));

test('clear drops every entry and chunk of a host, and no other', () =>
  withDb((db) => {
    const s = queueStore(db);
    const q = new BackQueues(s);
    const a = newHost('a.test', 'https://a.test', 'a.test');
    const b = newHost('b.test', 'https://b.test', 'b.test');
    for (let i = 0; i < 150; i++) q.append(a, entry(i));
    for (let i = 0; i < 3; i++) q.append(b, entry(i));
    q.flush();
    s.applyCommitted(1);
    drain(q, a, 10);
    assert.equal(q.clear(a), 140);
    assert.equal(q.head(a), undefined);
    q.flush();
    s.applyCommitted(2);
    assert.deepEqual(
      [...s.entries()].map(([k]) => queueKeySerde.deserialize(k).host),
      ['b.test'],
    );
    q.append(a, entry(7));
    assert.deepEqual(drain(q, a), [entry(7)]);
    assert.equal(drain(q, b).length, 3);
  }));

test('a lease reads the store about once per few entries, not once per entry', () =>
  withDb((db) => {
    const s = queueStore(db);
    let reads = 0;
    const get = s.get.bind(s);
    s.get = (k) => {
      reads++;
      return get(k);
    };
    const q = new BackQueues(s);
    const state = newHost('a.test', 'https://a.test', 'a.test');
    for (let i = 0; i < 256; i++) q.append(state, entry(i));
    q.flush();
    s.applyCommitted(1);
    assert.equal(drain(q, state).length, 256);
    assert.ok(reads <= 256 / 8, `${reads} store reads for 256 entries`);
  }));

test('entries of a chunk missing from the store come back as lost, and later ones are kept', () =>
  withDb((db) => {
    const s = queueStore(db);
    const before = new BackQueues(s);
    const state = newHost('a.test', 'https://a.test', 'a.test');
    for (let i = 0; i < 70; i++) before.append(state, entry(i));
    before.flush();
    s.delete({ host: 'a.test', chunk: 1 });
    s.applyCommitted(1);
    // a restarted task (nothing of the chunk in RAM) finds the tail chunk missing
    const q = new BackQueues(s);
    assert.equal(drain(q, state, 64).length, 64);
    // the tail chunk is gone: its entries read as lost (null), appends still land in place
    q.append(state, entry(70));
    const lost: (QueueEntry | null | undefined)[] = [];
    for (let e = q.head(state); e !== undefined; e = q.head(state)) {
      lost.push(e);
      q.pop(state);
    }
    assert.deepEqual(lost, [...Array(6).fill(null), entry(70)]);
  }));

test("URLs of the host's origin are stored without it and read back whole; others are stored as they are", () =>
  withDb((db) => {
    const s = queueStore(db);
    const q = new BackQueues(s);
    const state = newHost('a.test', 'https://a.test', 'a.test');
    const urls = [
      'https://a.test/p/1?q=2',
      'http://a.test/p/2',
      'https://a.test:8443/p/3',
      'https://a.test.evil/p/4',
      'https://a.test/',
    ];
    const entries = urls.map((url, i) => ({ ...entry(i), url }));
    for (const e of entries) q.append(state, e);
    q.flush();
    s.applyCommitted(1);
    const stored = s.get({ host: 'a.test', chunk: 0 })!.bytes().toString('latin1');
    assert.equal(stored.split('https://a.test/').length - 1, 0, 'the origin was stored with its URLs');
    for (const u of urls.slice(1, 4)) assert.ok(stored.includes(u), `${u} was not stored whole`);
    assert.deepEqual(drain(new BackQueues(s), state), entries);
  }));
