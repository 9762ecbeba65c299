import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { CORRUPT_HEADER, EmbeddedLog } from '../../runtime/engines/embedded/log-store.js';
import type { RawRecord } from '../../runtime/record.js';
import { openRocks } from '../../state/rocks.js';

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-log-'));
  try {
    await fn(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const rec = (key: string, value: string | null, timestamp = 1000, headers?: Record<string, string>): RawRecord => ({
  key: Buffer.from(key),
  value: value === null ? null : Buffer.from(value),
  timestamp,
  ...(headers ? { headers } : {}),
});

const summary = (log: EmbeddedLog, topic: string, partition: number, from = 0) =>
  log
    .read(topic, partition, from, 1000)
    .map((r) => `${r.offset}:${r.key.toString()}=${r.value === null ? 'null' : r.value.toString()}`);

test('offsets are contiguous per partition and start at 0', () =>
  withDir(async (dir) => {
    const log = await EmbeddedLog.open(dir);
    try {
      log.ensureTopic('t', 2);
      assert.deepEqual([log.endOffset('t', 0), log.startOffset('t', 0)], [0, 0]);
      const bases1 = log.commit([{ topic: 't', partition: 0, records: [rec('a', '1'), rec('b', '2')] }], []);
      const bases2 = log.commit(
        [
          { topic: 't', partition: 0, records: [rec('c', '3')] },
          { topic: 't', partition: 1, records: [rec('x', '9')] },
          { topic: 't', partition: 0, records: [rec('d', '4')] },
        ],
        [],
      );
      assert.equal(bases1.get('t\u00000'), 0);
      assert.equal(bases2.get('t\u00000'), 2);
      assert.equal(bases2.get('t\u00001'), 0);
      assert.deepEqual(summary(log, 't', 0), ['0:a=1', '1:b=2', '2:c=3', '3:d=4']);
      assert.deepEqual(summary(log, 't', 1), ['0:x=9']);
      assert.equal(log.endOffset('t', 0), 4);
      assert.deepEqual(summary(log, 't', 0, 2), ['2:c=3', '3:d=4']);
      assert.deepEqual(
        log.read('t', 0, 1, 2).map((r) => r.offset),
        [1, 2],
        'max bounds the batch',
      );
      assert.deepEqual(log.read('t', 0, 4, 10), []);
    } finally {
      await log.close();
    }
  }));

/**
 * Runs `fn` on a log whose topics `t` (read from RocksDB) and `cached` (its tail cached) each hold
 * `records` in partition 0, so one check covers both read paths; closes the log after.
 */
const onBothReadPaths = (records: RawRecord[], fn: (log: EmbeddedLog) => void) =>
  withDir(async (dir) => {
    const log = await EmbeddedLog.open(dir);
    try {
      log.ensureTopic('t', 1);
      log.ensureTopic('cached', 1);
      log.cacheTail('cached');
      log.commit(
        ['t', 'cached'].map((topic) => ({ topic, partition: 0, records })),
        [],
      );
      fn(log);
    } finally {
      await log.close();
    }
  });

test('records keep their timestamp, null value and headers, read from the database or from the tail cache', () =>
  onBothReadPaths(
    [rec('k', null, 1.7e12 + 0.5), rec('h', 'v', 5, { 'x-a': 'ü', 'x-b': '' }), rec('', '', 6, {})],
    (log) => {
      for (const topic of ['t', 'cached']) {
        const [tomb, withHeaders, empty] = log.read(topic, 0, 0, 10);
        assert.equal(tomb!.value, null);
        assert.equal(tomb!.timestamp, 1.7e12 + 0.5);
        assert.equal(tomb!.headers, undefined);
        assert.deepEqual(withHeaders!.headers, { 'x-a': 'ü', 'x-b': '' });
        assert.deepEqual([withHeaders!.key.toString(), withHeaders!.value?.toString()], ['h', 'v']);
        assert.deepEqual([empty!.key.length, empty!.value?.length, empty!.headers], [0, 0, undefined]);
        assert.deepEqual([tomb!.topic, tomb!.partition, withHeaders!.offset], [topic, 0, 1]);
      }
    },
  ));

test('a read stops at the record whose frame reaches maxBytes, from the database and the tail cache, and returns at least one', () =>
  // frames of 10,017 bytes (16 of framing, a 1-byte key), sized 10,417 in the tail cache
  onBothReadPaths(
    ['a', 'b', 'c', 'd', 'e'].map((k) => rec(k, k.repeat(10_000))),
    (log) => {
      const keys = (topic: string, from: number, max: number, maxBytes?: number) =>
        log.read(topic, 0, from, max, maxBytes).map((r) => r.key.toString());
      for (const topic of ['t', 'cached']) {
        assert.deepEqual(keys(topic, 0, 10), ['a', 'b', 'c', 'd', 'e'], `${topic}: no byte bound`);
        assert.deepEqual(keys(topic, 0, 10, 15_000), ['a', 'b'], `${topic}: the second record reaches 15,000`);
        assert.deepEqual(keys(topic, 1, 10, 25_000), ['b', 'c', 'd'], `${topic}: from an offset inside`);
        assert.deepEqual(keys(topic, 3, 10, 1), ['d'], `${topic}: one record larger than the bound`);
        assert.deepEqual(keys(topic, 0, 2, 1e9), ['a', 'b'], `${topic}: the count binds first`);
        assert.deepEqual(keys(topic, 5, 10, 1), [], `${topic}: nothing past the end`);
      }
    },
  ));

test('topics whose names share a prefix keep their records apart', () =>
  withDir(async (dir) => {
    const log = await EmbeddedLog.open(dir);
    try {
      log.ensureTopic('words', 1);
      log.ensureTopic('words-x', 1);
      log.commit(
        [
          { topic: 'words-x', partition: 0, records: [rec('b', '2')] },
          { topic: 'words', partition: 0, records: [rec('a', '1')] },
        ],
        [],
      );
      assert.deepEqual(summary(log, 'words', 0), ['0:a=1']);
      assert.deepEqual(summary(log, 'words-x', 0), ['0:b=2']);
    } finally {
      await log.close();
    }
  }));

test('a commit appends to every partition and moves every position, or does nothing at all', () =>
  withDir(async (dir) => {
    const log = await EmbeddedLog.open(dir);
    try {
      log.ensureTopic('a', 1);
      log.ensureTopic('b', 1);
      log.commit(
        [
          { topic: 'a', partition: 0, records: [rec('k', '1')] },
          { topic: 'b', partition: 0, records: [rec('k', '2')] },
        ],
        [{ group: 'g', topic: 'a', partition: 0, offset: 1 }],
      );
      assert.equal(log.committedPosition('g', 'a', 0), 1);
      assert.equal(log.committedPosition('g', 'b', 0), 0, 'an unknown position is 0');
      const notified: string[] = [];
      log.onAppend((t, p) => notified.push(`${t}-${p}`));
      // the append to an undeclared partition fails the whole batch: nothing else becomes visible
      assert.throws(
        () =>
          log.commit(
            [
              { topic: 'a', partition: 0, records: [rec('k', '3')] },
              { topic: 'b', partition: 5, records: [rec('k', '4')] },
            ],
            [{ group: 'g', topic: 'a', partition: 0, offset: 2 }],
          ),
        (err: unknown) => err instanceof CrawlError && err.code === 'CS_TOPOLOGY' && /b-5/.test(err.message),
      );
      assert.equal(log.endOffset('a', 0), 1);
      assert.equal(log.committedPosition('g', 'a', 0), 1);
      assert.deepEqual(summary(log, 'a', 0), ['0:k=1']);
      assert.deepEqual(notified, []);
      log.commit(
        [
          { topic: 'b', partition: 0, records: [rec('k', '5')] },
          { topic: 'a', partition: 0, records: [] },
        ],
        [],
      );
      assert.deepEqual(notified, ['b-0'], 'listeners hear of partitions that got records only');
    } finally {
      await log.close();
    }
  }));

test('end and start offsets, positions and records survive a reopen', () =>
  withDir(async (dir) => {
    let log = await EmbeddedLog.open(dir);
    log.ensureTopic('t', 2);
    log.commit(
      [{ topic: 't', partition: 1, records: [rec('a', '1'), rec('b', '2'), rec('c', '3'), rec('d', '4')] }],
      [{ group: 'g', topic: 't', partition: 1, offset: 3 }],
    );
    log.truncateBefore('t', 1, 2);
    await log.close();
    log = await EmbeddedLog.open(dir);
    try {
      assert.equal(log.partitions('t'), 2);
      log.ensureTopic('t', 2);
      assert.deepEqual([log.startOffset('t', 1), log.endOffset('t', 1)], [2, 4]);
      assert.deepEqual([log.startOffset('t', 0), log.endOffset('t', 0)], [0, 0]);
      assert.equal(log.committedPosition('g', 't', 1), 3);
      assert.deepEqual(summary(log, 't', 1), ['2:c=3', '3:d=4']);
      log.commit([{ topic: 't', partition: 1, records: [rec('e', '5')] }], []);
      assert.deepEqual(summary(log, 't', 1, 4), ['4:e=5'], 'offsets continue after a reopen');
    } finally {
      await log.close();
    }
  }));

test('a topic keeps the partition count it was created with', () =>
  withDir(async (dir) => {
    const log = await EmbeddedLog.open(dir);
    try {
      log.ensureTopic('t', 3);
      assert.throws(
        () => log.ensureTopic('t', 4),
        (err: unknown) =>
          err instanceof CrawlError &&
          err.code === 'CS_TOPOLOGY' &&
          /3 partitions on disk.*declares 4/.test(err.message),
      );
      assert.throws(
        () => log.partitions('ghost'),
        (err: unknown) => err instanceof CrawlError && err.code === 'CS_TOPOLOGY',
      );
    } finally {
      await log.close();
    }
  }));

test('truncateBefore removes older records only, never past the end, and is idempotent', () =>
  withDir(async (dir) => {
    const log = await EmbeddedLog.open(dir);
    try {
      log.ensureTopic('t', 2);
      log.commit(
        [
          { topic: 't', partition: 0, records: ['a', 'b', 'c'].map((k) => rec(k, k)) },
          { topic: 't', partition: 1, records: [rec('z', 'z')] },
        ],
        [],
      );
      log.truncateBefore('t', 0, 2);
      assert.equal(log.startOffset('t', 0), 2);
      assert.deepEqual(summary(log, 't', 0), ['2:c=c'], 'reading below the start returns from the start');
      log.truncateBefore('t', 0, 1);
      assert.equal(log.startOffset('t', 0), 2);
      log.truncateBefore('t', 0, 99);
      assert.deepEqual([log.startOffset('t', 0), log.endOffset('t', 0)], [3, 3]);
      assert.deepEqual(summary(log, 't', 0), []);
      assert.deepEqual(summary(log, 't', 1), ['0:z=z'], 'other partitions are untouched');
    } finally {
      await log.close();
    }
  }));

test('a stored frame that cannot be decoded comes back with the x-crawlstream-corrupt header and its raw bytes', () =>
  withDir(async (dir) => {
    let log = await EmbeddedLog.open(dir);
    log.ensureTopic('t', 1);
    log.commit([{ topic: 't', partition: 0, records: [rec('a', '1'), rec('b', '2'), rec('c', '3')] }], []);
    await log.close();
    // overwrite offset 1 with bytes that are not a record frame, through a second handle on the files
    const db = await openRocks(dir);
    const keys = [...db.iterate(Buffer.from('r\u0000t\u0000'), Buffer.from('r\u0000t\u0001'))].map(([k]) => k);
    assert.equal(keys.length, 3);
    const junk = Buffer.from([1, 2, 3]);
    const badLengths = Buffer.alloc(16); // a key length larger than the frame
    badLengths.writeUInt32BE(1_000_000, 8);
    db.write(
      [
        { key: keys[1]!, value: junk },
        { key: keys[2]!, value: badLengths },
      ],
      { sync: true },
    );
    await db.close();
    log = await EmbeddedLog.open(dir);
    try {
      log.ensureTopic('t', 1);
      const [ok, bad, short] = log.read('t', 0, 0, 10);
      assert.equal(ok!.headers, undefined);
      assert.equal(ok!.value!.toString(), '1');
      assert.equal(bad!.offset, 1);
      assert.deepEqual(bad!.value, junk);
      assert.equal(bad!.key.length, 0);
      assert.match(bad!.headers![CORRUPT_HEADER]!, /record t-0@1 cannot be read/);
      assert.equal(CORRUPT_HEADER, 'x-crawlstream-corrupt');
      assert.equal(short!.offset, 2);
      assert.match(short!.headers![CORRUPT_HEADER]!, /record t-0@2 cannot be read/);
    } finally {
      await log.close();
    }
  }));

test('a partition emptied by retention keeps its end offset across a reopen, so consumers see new records', () =>
  withDir(async (dir) => {
    let log = await EmbeddedLog.open(dir);
    log.ensureTopic('t', 1);
    log.commit(
      [{ topic: 't', partition: 0, records: [rec('a', '1'), rec('b', '2'), rec('c', '3')] }],
      [{ group: 'g', topic: 't', partition: 0, offset: 3 }],
    );
    log.truncateBefore('t', 0, 3);
    assert.deepEqual(summary(log, 't', 0), []);
    await log.close();
    log = await EmbeddedLog.open(dir);
    try {
      log.ensureTopic('t', 1);
      assert.equal(log.endOffset('t', 0), 3, 'the end offset went back after every record was deleted');
      assert.equal(log.startOffset('t', 0), 3);
      log.commit([{ topic: 't', partition: 0, records: [rec('d', '4')] }], []);
      // the consumer's committed position is 3: the new record must be at 3, not at 0
      assert.deepEqual(summary(log, 't', 0, log.committedPosition('g', 't', 0)), ['3:d=4']);
    } finally {
      await log.close();
    }
  }));
