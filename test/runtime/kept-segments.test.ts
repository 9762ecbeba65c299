import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appendFileSync,
  mkdtempSync,
  openSync,
  closeSync,
  readdirSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isCrawlError } from '../../core/errors.js';
import { KeptSegments } from '../../runtime/engines/embedded/kept-segments.js';
import { CORRUPT_HEADER, EmbeddedLog } from '../../runtime/engines/embedded/log-store.js';
import { fill, tempSmallDisk } from '../small-disk.js';

const record = (key: string, bytes: number, fillByte = 0x61) => ({
  key: Buffer.from(key),
  value: Buffer.alloc(bytes, fillByte),
  timestamp: 1_700_000_000_000,
  headers: { h: key },
});
const append = (topic: string, ...records: ReturnType<typeof record>[]) => [{ topic, partition: 0, records }];
const keys = (log: EmbeddedLog, topic: string) =>
  log.read(topic, 0, 0, 100).map((r) => `${r.offset}:${r.key.toString()}`);
const segmentFiles = (dir: string) => readdirSync(join(dir, 'kept')).sort();
const segmentBytes = (dir: string) =>
  segmentFiles(dir).reduce((sum, f) => sum + statSync(join(dir, 'kept', f)).size, 0);

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-kept-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('records of a topic stored apart are written to the segments, read back whole, with their offsets, keys, values and headers, after a reopen too; other topics stay in RocksDB', async (t) => {
  const dir = join(tempDir(t), 'log');
  let log = await EmbeddedLog.open(dir);
  log.ensureTopic('kept', 1);
  log.ensureTopic('passing', 1);
  log.storeApart('kept');
  log.commit(append('kept', record('a', 20_000), record('b', 10)), []);
  log.commit([...append('kept', record('c', 30_000)), ...append('passing', record('p', 50_000))], []);
  // the segments hold the kept records and nothing of the passing one
  const held = segmentBytes(dir);
  assert.ok(held > 50_000 && held < 51_000, `segments hold ${held} bytes`);
  const check = (l: EmbeddedLog) => {
    const read = l.read('kept', 0, 0, 10);
    assert.deepEqual(
      read.map((r) => [r.offset, r.key.toString(), r.value!.length, r.value![0], r.headers?.['h'], r.timestamp]),
      [
        [0, 'a', 20_000, 0x61, 'a', 1_700_000_000_000],
        [1, 'b', 10, 0x61, 'b', 1_700_000_000_000],
        [2, 'c', 30_000, 0x61, 'c', 1_700_000_000_000],
      ],
    );
    assert.deepEqual(keys(l, 'passing'), ['0:p']);
    assert.deepEqual(
      l.read('kept', 0, 1, 1).map((r) => r.key.toString()),
      ['b'],
      'a read from the middle finds its record',
    );
  };
  check(log);
  await log.close();
  log = await EmbeddedLog.open(dir);
  log.ensureTopic('kept', 1);
  log.ensureTopic('passing', 1);
  check(log);
  await log.close();
});

test('a log written before records were stored apart reads its old records beside the new ones', async (t) => {
  const dir = join(tempDir(t), 'log');
  let log = await EmbeddedLog.open(dir);
  log.ensureTopic('kept', 1);
  log.commit(append('kept', record('old', 5_000)), []);
  await log.close();
  assert.equal(segmentBytes(dir), 0);
  log = await EmbeddedLog.open(dir);
  log.ensureTopic('kept', 1);
  log.storeApart('kept');
  log.commit(append('kept', record('new', 5_000)), []);
  assert.deepEqual(keys(log, 'kept'), ['0:old', '1:new']);
  assert.ok(segmentBytes(dir) > 5_000);
  await log.close();
});

test('bytes written past the committed end (a crash between the segment write and the batch) are cut off at opening and written over', async (t) => {
  const dir = join(tempDir(t), 'log');
  let log = await EmbeddedLog.open(dir);
  log.ensureTopic('kept', 1);
  log.storeApart('kept');
  log.commit(append('kept', record('a', 1_000)), []);
  const committed = segmentBytes(dir);
  // a placement whose batch never landed
  appendFileSync(join(dir, 'kept', segmentFiles(dir)[0]!), Buffer.alloc(4_096, 0x7a));
  await log.close();
  log = await EmbeddedLog.open(dir);
  log.ensureTopic('kept', 1);
  log.storeApart('kept');
  assert.equal(segmentBytes(dir), committed, 'the torn tail is cut off');
  log.commit(append('kept', record('b', 1_000, 0x62)), []);
  const read = log.read('kept', 0, 0, 10);
  assert.deepEqual(
    read.map((r) => [r.key.toString(), r.value![999]]),
    [
      ['a', 0x61],
      ['b', 0x62],
    ],
  );
  await log.close();
});

test('segments roll at their size; at opening, segments past the committed one are removed and reads span every segment', async (t) => {
  const dir = join(tempDir(t), 'log');
  let log = await EmbeddedLog.open(dir, { segmentBytes: 4_096 });
  log.ensureTopic('kept', 1);
  log.storeApart('kept');
  for (let i = 0; i < 10; i++) log.commit(append('kept', record(`k${i}`, 1_500)), []);
  const files = segmentFiles(dir);
  assert.ok(files.length >= 4, `${files.length} segments`);
  // a segment begun by a placement that was never committed
  const stray = join(dir, 'kept', '9999999999.seg');
  appendFileSync(stray, Buffer.alloc(100));
  await log.close();
  log = await EmbeddedLog.open(dir, { segmentBytes: 4_096 });
  log.ensureTopic('kept', 1);
  assert.deepEqual(segmentFiles(dir), files);
  assert.deepEqual(
    keys(log, 'kept'),
    Array.from({ length: 10 }, (_, i) => `${i}:k${i}`),
  );
  await log.close();
});

test('a placement never advanced is written over by the next one', (t) => {
  const dir = tempDir(t);
  const segments = KeptSegments.open(dir, undefined);
  t.after(() => segments.close());
  const lost = segments.place([Buffer.from('lost')]);
  const kept = segments.place([Buffer.from('kept')]);
  assert.deepEqual(kept.mark, lost.mark);
  segments.advance(kept);
  assert.equal(segments.read(kept.pointers[0]!).toString(), 'kept');
  assert.ok(KeptSegments.isPointer(kept.pointers[0]!));
  assert.ok(!KeptSegments.isPointer(Buffer.alloc(kept.pointers[0]!.length)));
});

test('a kept record whose bytes were damaged or lost reads as a corrupt record naming its place, and the others read on', async (t) => {
  const dir = join(tempDir(t), 'log');
  let log = await EmbeddedLog.open(dir, { segmentBytes: 4_096 });
  log.ensureTopic('kept', 1);
  log.storeApart('kept');
  log.commit(append('kept', record('a', 3_000)), []);
  log.commit(append('kept', record('b', 3_000)), []);
  log.commit(append('kept', record('c', 3_000)), []);
  const [first, second] = segmentFiles(dir);
  await log.close();
  // one byte of the first record flipped; the second record's segment gone
  const fd = openSync(join(dir, 'kept', first!), 'r+');
  writeSync(fd, Buffer.from([0x00]), 0, 1, 100);
  closeSync(fd);
  unlinkSync(join(dir, 'kept', second!));
  log = await EmbeddedLog.open(dir, { segmentBytes: 4_096 });
  log.ensureTopic('kept', 1);
  const read = log.read('kept', 0, 0, 10);
  assert.equal(read.length, 3);
  assert.match(read[0]!.headers![CORRUPT_HEADER]!, /kept segment 1 at 0: checksum mismatch/);
  assert.match(read[1]!.headers![CORRUPT_HEADER]!, /kept segment 2 cannot be read at 0: ENOENT/);
  assert.equal(read[2]!.key.toString(), 'c');
  assert.equal(read[2]!.headers![CORRUPT_HEADER], undefined);
  await log.close();
});

test(
  'a commit whose kept records meet a full disk fails with CS_DISK_FULL and changes nothing; with space back the same commit succeeds without a reopen',
  { timeout: 60_000, skip: process.getuid?.() === 0 ? false : 'mounting a small filesystem needs root' },
  async (t) => {
    let log: EmbeddedLog | undefined;
    const dir = tempSmallDisk(t, 'crawlstream-kept-full-', '4m', () => log?.close());
    log = await EmbeddedLog.open(join(dir, 'log'));
    log.ensureTopic('kept', 1);
    log.storeApart('kept');
    log.commit(append('kept', record('a', 1_000)), [{ group: 'g', topic: 'kept', partition: 0, offset: 1 }]);
    const filler = join(dir, 'filler');
    fill(filler);
    assert.throws(
      () =>
        log!.commit(append('kept', record('b', 64 * 1024)), [{ group: 'g', topic: 'kept', partition: 0, offset: 2 }]),
      (err: unknown) => isCrawlError(err) && err.code === 'CS_DISK_FULL' && /kept segments/.test(err.message),
    );
    assert.equal(log.endOffset('kept', 0), 1);
    assert.equal(log.committedPosition('g', 'kept', 0), 1);
    unlinkSync(filler);
    log.commit(append('kept', record('b', 64 * 1024)), [{ group: 'g', topic: 'kept', partition: 0, offset: 2 }]);
    await log.close();
    log = await EmbeddedLog.open(join(dir, 'log'));
    log.ensureTopic('kept', 1);
    assert.deepEqual(keys(log, 'kept'), ['0:a', '1:b']);
    assert.equal(log.read('kept', 0, 1, 1)[0]!.value!.length, 64 * 1024);
    assert.equal(log.committedPosition('g', 'kept', 0), 2);
  },
);

test('a placement that began a new segment and was never advanced leaves that segment to the next placement; advancing to it cannot fail', (t) => {
  const dir = tempDir(t);
  const segments = KeptSegments.open(dir, undefined, 10);
  t.after(() => segments.close());
  const first = segments.place([Buffer.from('aaaaaaaa')]);
  segments.advance(first);
  const lost = segments.place([Buffer.from('bbbbbbbb')]);
  assert.deepEqual(lost.mark, { segment: 2, position: 8 });
  const kept = segments.place([Buffer.from('cccccccc')]);
  assert.deepEqual(kept.mark, lost.mark);
  segments.advance(kept);
  assert.deepEqual(segments.mark, { segment: 2, position: 8 });
  assert.equal(segments.read(first.pointers[0]!).toString(), 'aaaaaaaa');
  assert.equal(segments.read(kept.pointers[0]!).toString(), 'cccccccc');
  const after = segments.place([Buffer.from('dd')]);
  assert.deepEqual(after.mark, { segment: 2, position: 10 }, 'appends go on in the segment advanced to');
});
