import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openRocks, type RocksPort } from '../../../state/rocks.js';
import { RocksKeyValueStore } from '../../../state/rocks-store.js';
import { bufferSerde, stringSerde } from '../../../core/serde.js';
import type { FrontEntry } from '../../../schemas/types.js';
import {
  frontKeySerde,
  FrontQueues,
  REVISIT_BAND,
  type Band,
  type FrontKey,
} from '../../../processors/frontier/front-queues.js';
import { numberBytes, readNumber } from '../../../processors/frontier/host-state.js';
import { chunkSerde, type QueueChunk } from '../../../processors/frontier/queue-chunk.js';
import { withDb as withTempDb } from '../../state/temp-rocks.js';

interface Stores {
  front: RocksKeyValueStore<FrontKey, QueueChunk>;
  meta: RocksKeyValueStore<string, Buffer>;
  queues: FrontQueues;
}

function open(db: RocksPort, revisitShare?: number): Stores {
  const front = new RocksKeyValueStore<FrontKey, QueueChunk>('frontier-front', db, frontKeySerde, chunkSerde);
  const meta = new RocksKeyValueStore<string, Buffer>('frontier-meta', db, stringSerde, bufferSerde);
  return {
    front,
    meta,
    queues: new FrontQueues(
      front,
      (k) => readNumber(meta.get(k)),
      (k, v) => meta.put(k, numberBytes(v)),
      revisitShare,
    ),
  };
}

function commit(s: Stores, offset: number): void {
  s.queues.flush();
  s.front.applyCommitted(offset);
  s.meta.applyCommitted(offset);
}

const entry = (band: number, i: number): FrontEntry => ({
  url: `https://h${i % 5}.test/b${band}/${i}`,
  host: `h${i % 5}.test`,
  origin: `https://h${i % 5}.test`,
  site: `h${i % 5}.test`,
  depth: band,
  redirectHops: 0,
  discoveredAt: i,
  kind: 'PAGE',
  visit: 0,
});

const withDb = (fn: (db: RocksPort, dir: string) => Promise<void> | void): Promise<void> => withTempDb('front', fn);

test('each band is a FIFO across chunk boundaries; bands are picked 8:4:2:1 while all have URLs', () =>
  withDb((db) => {
    const s = open(db);
    for (let band = 0; band < 4; band++) for (let i = 0; i < 300; i++) s.queues.push(band as Band, entry(band, i));
    assert.equal(s.queues.size, 1_200);
    const firstRound = Array.from({ length: 15 }, () => s.queues.pop()!.depth);
    assert.deepEqual(firstRound, [...Array(8).fill(0), ...Array(4).fill(1), 2, 2, 3]);
    const rest: FrontEntry[] = [];
    for (let e = s.queues.pop(); e; e = s.queues.pop()) rest.push(e);
    assert.equal(rest.length, 1_200 - 15);
    for (let band = 0; band < 4; band++) {
      const taken = firstRound.filter((d) => d === band).length;
      assert.deepEqual(
        rest.filter((e) => e.depth === band),
        Array.from({ length: 300 - taken }, (_, i) => entry(band, taken + i)),
      );
    }
    commit(s, 1);
    assert.deepEqual([...s.front.entries()], [], 'every chunk went with its last entry');
  }));

test('front queues survive a reopen where they were last committed', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-front-'));
  try {
    let db = await openRocks(path.join(dir, 'db'));
    let s = open(db);
    for (let i = 0; i < 100; i++) s.queues.push(2, entry(2, i));
    for (let i = 0; i < 30; i++) assert.deepEqual(s.queues.pop(), entry(2, i));
    commit(s, 1);
    // a crash between commits: never committed
    for (let i = 100; i < 200; i++) s.queues.push(2, entry(2, i));
    for (let i = 0; i < 90; i++) s.queues.pop();
    s.queues.flush();
    await db.close();

    db = await openRocks(path.join(dir, 'db'));
    s = open(db);
    assert.equal(s.queues.size, 70);
    const out: FrontEntry[] = [];
    for (let e = s.queues.pop(); e; e = s.queues.pop()) out.push(e);
    assert.deepEqual(
      out,
      Array.from({ length: 70 }, (_, i) => entry(2, 30 + i)),
    );
    // and appends after the restart continue the same FIFO
    s.queues.push(2, entry(2, 500));
    assert.deepEqual(s.queues.pop(), entry(2, 500));
    await db.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('pushes and pops interleaved with commits, restarted at every commit, lose and repeat nothing', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-front-'));
  try {
    let db = await openRocks(path.join(dir, 'db'));
    let s = open(db);
    let pushed = 0;
    const popped: FrontEntry[] = [];
    for (let round = 0; round < 30; round++) {
      for (let i = 0; i < 13 + round * 3; i++) s.queues.push(1, entry(1, pushed++));
      for (let i = 0; i < 11 + round * 2; i++) {
        const e = s.queues.pop();
        if (e) popped.push(e);
      }
      commit(s, round + 1);
      if (round % 4 === 3) {
        await db.close();
        db = await openRocks(path.join(dir, 'db'));
        s = open(db);
      }
    }
    for (let e = s.queues.pop(); e; e = s.queues.pop()) popped.push(e);
    assert.deepEqual(
      popped,
      Array.from({ length: pushed }, (_, i) => entry(1, i)),
    );
    commit(s, 99);
    assert.deepEqual([...s.front.entries()], []);
    await db.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('URLs pushed and popped within one call leave at most a chunk or two of store writes', () =>
  withDb((db) => {
    const s = open(db);
    for (let i = 0; i < 200; i++) s.queues.push(0, entry(0, i));
    for (let i = 0; i < 200; i++) s.queues.pop();
    s.queues.flush();
    // only chunks held neither as head nor as tail in between reach the store (and are deleted)
    assert.ok(
      s.front.pendingCount() <= 2,
      `${s.front.pendingCount()} chunk writes for 200 URLs that never outlived the call`,
    );
  }));

test('revisits get --recrawl-share of the picks while new URLs wait too, and every pick when none do', () =>
  withDb((db) => {
    for (const [share, expected] of [
      [0.5, 50],
      [0.25, 25],
      [0, 0],
      [1, 100],
    ] as const) {
      const s = open(db, share);
      for (let i = 0; i < 100; i++) s.queues.push(REVISIT_BAND, { ...entry(4, i), visit: 1 });
      for (let i = 0; i < 100; i++) s.queues.push(2, entry(2, i));
      const first = Array.from({ length: 100 }, () => s.queues.pop()!);
      assert.equal(first.filter((e) => e.visit === 1).length, expected, `share ${share}`);
      // the rest drains whatever the share: revisits alone are taken one after another
      const rest: FrontEntry[] = [];
      for (let e = s.queues.pop(); e; e = s.queues.pop()) rest.push(e);
      assert.equal(rest.length, 100);
      assert.deepEqual(
        [...first, ...rest].filter((e) => e.visit === 1).map((e) => e.url),
        Array.from({ length: 100 }, (_, i) => entry(4, i).url),
        'revisits keep their order',
      );
      s.queues.flush();
    }
  }));
