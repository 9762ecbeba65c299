import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedLog } from '../../runtime/engines/embedded/log-store.js';
import { TailCache } from '../../runtime/engines/embedded/tail-cache.js';
import type { ConsumedRawRecord } from '../../runtime/record.js';
import { seededRandom } from '../../synthetic-web/seeded-random.js';
import { survivors } from '../collectable.js';

const record = (offset: number): ConsumedRawRecord => ({
  topic: 't',
  partition: 0,
  offset,
  key: Buffer.from(`k${offset}`),
  value: Buffer.from(`v${offset}`),
  timestamp: offset,
});
const offsets = (records: ConsumedRawRecord[] | undefined) => records?.map((r) => r.offset);

/** Runs `fn` on a log in a temporary directory with one partition of topic `t`, its tail cached; closes and removes it after. */
async function withCachedLog(fn: (log: EmbeddedLog) => void): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-tail-'));
  try {
    const log = await EmbeddedLog.open(dir);
    log.ensureTopic('t', 1);
    log.cacheTail('t');
    fn(log);
    await log.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('the tail cache holds the latest appends within its byte budget and sends older reads to the log', () => {
  const cache = new TailCache(100);
  cache.enable('t', 5);
  assert.deepEqual(cache.read('t', 5, 10), [], 'nothing appended yet');
  assert.equal(cache.read('t', 4, 10), undefined, 'below the first cached offset');
  cache.appended('t', 5, [5, 6, 7].map(record), [40, 40, 40]);
  assert.deepEqual(offsets(cache.read('t', 5, 10)), undefined, '5 was dropped: 120 bytes > 100');
  assert.deepEqual(offsets(cache.read('t', 6, 10)), [6, 7]);
  assert.deepEqual(offsets(cache.read('t', 7, 1)), [7]);
  cache.dropBelow('t', 7);
  assert.equal(cache.read('t', 6, 10), undefined, 'retention removed 6');
  cache.appended('t', 9, [9].map(record), [10]);
  assert.equal(cache.read('t', 7, 10), undefined, 'a gap (8 never seen) starts the cache over');
  assert.deepEqual(offsets(cache.read('t', 9, 10)), [9]);
  cache.forget('t', 10);
  assert.equal(cache.read('t', 9, 10), undefined);
  assert.equal(cache.read('other', 0, 10), undefined, 'a partition not enabled is never cached');
});

test('reads of a cached topic equal the log on disk through appends of every size, retention and compaction deletes', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-tail-'));
  try {
    const random = seededRandom(20_261_201);
    const model: (ConsumedRawRecord | undefined)[][] = [[], []];
    let log = await EmbeddedLog.open(dir);
    log.ensureTopic('t', 2);
    log.cacheTail('t');
    const check = (p: number, from: number, max: number, what: string) => {
      const got = log.read('t', p, from, max).map((r) => [r.offset, r.key.toString(), r.value?.toString('latin1')]);
      const want = model[p]!.map((r, offset) => ({ r, offset }))
        .filter(({ r, offset }) => r !== undefined && offset >= from)
        .slice(0, max)
        .map(({ r, offset }) => [offset, r!.key.toString(), r!.value?.toString('latin1')]);
      assert.deepEqual(got, want, `${what}: partition ${p} from ${from}`);
    };
    for (let step = 0; step < 400; step++) {
      const p = Math.floor(random() * 2);
      const end = model[p]!.length;
      const r = random();
      if (r < 0.5) {
        // values of 10 B to 600 KB: some commits overflow the 2 MiB budget, some records alone nearly fill it
        const n = 1 + Math.floor(random() * 5);
        const records = Array.from({ length: n }, (_, i) => {
          const size = random() < 0.1 ? 300_000 + Math.floor(random() * 300_000) : 10 + Math.floor(random() * 100);
          return { key: Buffer.from(`k${end + i}`), value: Buffer.alloc(size, 97 + ((end + i) % 26)), timestamp: step };
        });
        log.commit([{ topic: 't', partition: p, records }], []);
        for (const [i, rec] of records.entries()) model[p]!.push({ ...rec, topic: 't', partition: p, offset: end + i });
      } else if (r < 0.55 && end > 0) {
        const upTo = Math.floor(random() * end);
        log.truncateBefore('t', p, upTo);
        for (let o = 0; o < upTo; o++) model[p]![o] = undefined;
      } else if (r < 0.6 && end > 0) {
        const gone = [Math.floor(random() * end)];
        log.deleteRecords('t', p, gone);
        model[p]![gone[0]!] = undefined;
      } else {
        check(p, Math.max(0, end - Math.floor(random() * 12)), 1 + Math.floor(random() * 8), `step ${step}`);
      }
      if (step === 200) {
        // a reopened log starts with an empty cache and reads the same
        await log.close();
        log = await EmbeddedLog.open(dir);
        log.ensureTopic('t', 2);
        log.cacheTail('t');
      }
    }
    for (const p of [0, 1]) check(p, 0, 10_000, 'at the end');
    await log.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the tail cache's bytes are those of the records it holds, over every partition", () => {
  const cache = new TailCache(100);
  cache.enable('a', 0);
  cache.enable('b', 0);
  assert.equal(cache.bytes, 0);
  cache.appended('a', 0, [0, 1].map(record), [30, 30]);
  cache.appended('b', 0, [0].map(record), [50]);
  assert.equal(cache.bytes, 110);
  cache.appended('a', 2, [2, 3].map(record), [30, 30]);
  assert.equal(cache.bytes, 90 + 50, 'a keeps three records of 30 within its 100');
  cache.dropBelow('a', 3);
  cache.forget('b', 1);
  assert.equal(cache.bytes, 30);
});

test('records the tail cache holds keep only their own bytes alive, not the 8 KiB pool slabs they were written beside', () =>
  withCachedLog((log) => {
    for (let c = 0; c < 20; c++) {
      const records = Array.from({ length: 5 }, (_, i) => ({
        key: Buffer.from(`k${c}-${i}`),
        value: Buffer.from(`small value ${c}-${i}`),
        timestamp: c,
      }));
      log.commit([{ topic: 't', partition: 0, records }], []);
    }
    const cached = log.read('t', 0, 0, 100);
    assert.equal(cached.length, 100);
    // each commit's records share one buffer of their own encoded bytes (~50 bytes a record)
    const buffers = new Set(cached.map((r) => r.key.buffer));
    assert.equal(buffers.size, 20, 'one buffer per commit');
    for (const r of cached) {
      assert.equal(r.value!.buffer, r.key.buffer);
      assert.ok(r.key.buffer.byteLength < 5 * 100, `a cached record keeps ${r.key.buffer.byteLength} bytes alive`);
    }
  }));

test('a value in a buffer of its own (a page) is cached as it is; a view of a larger buffer is copied', () =>
  withCachedLog((log) => {
    const page = Buffer.alloc(30_000, 1);
    const larger = Buffer.alloc(100_000, 2);
    const view = larger.subarray(10_000, 40_000);
    log.commit([{ topic: 't', partition: 0, records: [{ key: Buffer.from('p'), value: page, timestamp: 1 }] }], []);
    log.commit([{ topic: 't', partition: 0, records: [{ key: Buffer.from('v'), value: view, timestamp: 2 }] }], []);
    const [own, copied] = log.read('t', 0, 0, 10);
    assert.equal(own!.value!.buffer, page.buffer, 'not copied');
    assert.ok(copied!.value!.equals(view));
    assert.notEqual(copied!.value!.buffer, larger.buffer);
    assert.ok(copied!.value!.buffer.byteLength < 40_000, `keeps ${copied!.value!.buffer.byteLength} bytes alive`);
  }));

test("the tail cache counts a small record's objects, not only its bytes, against its budget", () =>
  withCachedLog((log) => {
    // 20,000 records of ~30 encoded bytes: 0.6 MB of bytes, but each is also a decoded object
    for (let c = 0; c < 200; c++)
      log.commit(
        [
          {
            topic: 't',
            partition: 0,
            records: Array.from({ length: 100 }, (_, i) => ({
              key: Buffer.from(`k${i}`),
              value: Buffer.from('v'),
              timestamp: c,
            })),
          },
        ],
        [],
      );
    const held = log.memory().tail;
    assert.ok(held > 1.9 * 2 ** 20 && held <= 2 * 2 ** 20, `the tail cache counts ${held} bytes`);
  }));

test('a record dropped from the tail cache is no longer held by it', async () => {
  const cache = new TailCache(100_000);
  cache.enable('t', 0);
  const dropped: WeakRef<object>[] = [];
  for (let offset = 0; offset < 300; offset++) {
    const r = { ...record(offset), value: Buffer.alloc(10_000) };
    cache.appended('t', offset, [r], [10_000]);
    dropped.push(new WeakRef(r.value.buffer));
  }
  // the budget keeps the last 10 records of 300
  assert.deepEqual(
    offsets(cache.read('t', 290, 20)),
    Array.from({ length: 10 }, (_, i) => 290 + i),
  );
  assert.equal(await survivors(dropped.slice(0, 290)), 0, 'the 290 records dropped are collectable');
  assert.equal(await survivors(dropped.slice(290)), 10, 'the 10 cached ones are held');
});
