import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, closeSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { WarcWriter, type WarcLocation } from '../../../processors/parser/warc-writer.js';
import { completeMembersLength } from '../../../processors/parser/warc-recovery.js';
import { fetchOf, httpBody, listFiles, parseRecord, readAt, tempDir } from './warc-helpers.js';
import { assertWarcioCheckPasses, warcioIndex } from '../../python/warcio.js';

interface Crashed {
  dir: string;
  openPath: string;
  finalName: string;
  durableSize: number;
  locations: WarcLocation[];
  payloads: Buffer[];
}

/** Writes and flushes records, then abandons the writer without close(), as a crash would. */
function crashAfterFlush(dir: string, sizes = [2_000, 30_000, 500], partition = 7): Crashed {
  const w = new WarcWriter({ dir, partition });
  w.open();
  const locations: WarcLocation[] = [];
  const payloads: Buffer[] = [];
  sizes.forEach((size, i) => {
    const args = fetchOf(`http://example.com/crash/${i}`, size);
    const r = w.writeRequestResponse(args);
    locations.push(r.response, r.request);
    payloads.push(args.payload);
  });
  w.flush();
  const finalName = locations[0]!.file;
  const openPath = join(dir, `${finalName}.open`);
  return { dir, openPath, finalName, durableSize: statSync(openPath).size, locations, payloads };
}

/** A complete gzip member of a real record, to tear. */
function someMember(): Buffer {
  const rec = `WARC/1.1\r\nWARC-Type: metadata\r\nContent-Length: 4000\r\n\r\n${'m'.repeat(4000)}\r\n\r\n`;
  return gzipSync(Buffer.from(rec));
}

function recover(dir: string, partition = 7): WarcWriter {
  const w = new WarcWriter({ dir, partition });
  w.open();
  return w;
}

function assertRecovered(c: Crashed): void {
  const files = listFiles(c.dir);
  assert.ok(!files.includes(`${c.finalName}.open`), 'the .open file is gone');
  assert.ok(files.includes(c.finalName), 'the file has its final name');
  const path = join(c.dir, c.finalName);
  assert.equal(statSync(path).size, c.durableSize, 'cut back to the last complete member');
  assertWarcioCheckPasses(path);
  assert.equal(warcioIndex(path, ['warc-type']).length, 1 + c.locations.length);
  c.payloads.forEach((payload, i) => {
    const body = httpBody(parseRecord(readAt(c.dir, c.locations[2 * i]!)).block);
    assert.ok(body.equals(payload), `payload ${i} readable at its returned location`);
  });
}

test('a crashed file with a half-written trailing member is cut to its last complete member and renamed', (t) => {
  const c = crashAfterFlush(tempDir(t));
  const torn = someMember();
  appendFileSync(c.openPath, torn.subarray(0, Math.floor(torn.length / 2)));
  assert.equal(statSync(c.openPath).size > c.durableSize, true);
  recover(c.dir).close();
  assertRecovered(c);
});

test('a torn write that ends inside the gzip header is cut off', (t) => {
  const c = crashAfterFlush(tempDir(t));
  appendFileSync(c.openPath, someMember().subarray(0, 5));
  recover(c.dir).close();
  assertRecovered(c);
});

test('a trailing member with a bad CRC is cut off', (t) => {
  const c = crashAfterFlush(tempDir(t));
  const member = someMember();
  member[member.length - 8]! ^= 1;
  appendFileSync(c.openPath, member);
  recover(c.dir).close();
  assertRecovered(c);
});

test('trailing bytes that are not gzip at all are cut off', (t) => {
  const c = crashAfterFlush(tempDir(t));
  appendFileSync(c.openPath, Buffer.from('\0\0\0\0garbage after a crash'));
  recover(c.dir).close();
  assertRecovered(c);
});

test('a crash with no torn write keeps every flushed record', (t) => {
  const c = crashAfterFlush(tempDir(t));
  recover(c.dir).close();
  assertRecovered(c);
});

test('recovery handles members larger than its first read window', (t) => {
  // 3 MB of incompressible payload makes a member bigger than the 1 MiB first window
  const c = crashAfterFlush(tempDir(t), [3_000_000, 100]);
  const torn = someMember();
  appendFileSync(c.openPath, torn.subarray(0, torn.length - 3));
  recover(c.dir).close();
  assertRecovered(c);
});

test('a crashed file in which no record is complete is removed', (t) => {
  const dir = tempDir(t);
  const name = 'crawlstream-20240501120000000-00007-00000.warc.gz';
  writeFileSync(join(dir, `${name}.open`), someMember().subarray(0, 40));
  recover(dir).close();
  assert.deepEqual(listFiles(dir), []);
});

test('recovery only touches files of its own prefix and partition', (t) => {
  const dir = tempDir(t);
  const others = [
    'crawlstream-20240501120000000-00008-00000.warc.gz.open',
    'other-20240501120000000-00007-00000.warc.gz.open',
    'crawlstream-20240501120000000-00007-00000.warc.gz.open.bak',
  ];
  for (const name of others) writeFileSync(join(dir, name), 'half a member');
  recover(dir).close();
  assert.deepEqual(listFiles(dir), [...others].sort());
  for (const name of others) assert.equal(readFileSync(join(dir, name), 'utf8'), 'half a member');
});

test('after recovery the writer continues in a new file that sorts after the recovered one', (t) => {
  const c = crashAfterFlush(tempDir(t));
  appendFileSync(c.openPath, someMember().subarray(0, 100));
  const w = recover(c.dir);
  const loc = w.writeMetadata({ targetUri: 'http://example.com/next', date: new Date(), fields: { after: 'crash' } });
  w.close();
  assertRecovered(c);
  assert.notEqual(loc.file, c.finalName);
  assert.deepEqual(listFiles(c.dir), [c.finalName, loc.file]);
  assert.equal(loc.file.slice(-13, -8), '00001', 'the sequence number continues');
  assertWarcioCheckPasses(join(c.dir, loc.file));
});

test('completeMembersLength counts only whole members', (t) => {
  const dir = tempDir(t);
  const a = someMember();
  const b = someMember();
  const path = join(dir, 'members.bin');
  writeFileSync(path, Buffer.concat([a, b, b.subarray(0, b.length - 1)]));
  const fd = openSync(path, 'r');
  try {
    assert.equal(completeMembersLength(fd), a.length + b.length);
  } finally {
    closeSync(fd);
  }
});
