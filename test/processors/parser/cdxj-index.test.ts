import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CrawlError } from '../../../core/errors.js';
import { WarcWriter } from '../../../processors/parser/warc-writer.js';
import {
  CdxjIndexBuilder,
  cdxjEntryOf,
  cdxjLine,
  cdxjPathFor,
  writeCdxjIndex,
} from '../../../processors/parser/cdxj-index.js';
import { survivors } from '../../collectable.js';
import { fetchOf, listFiles, tempDir } from './warc-helpers.js';
import { python } from '../../python/python.js';

/** `cdxj-indexer --sort FILE` (pywb's indexer, PyPI cdxj-indexer): the reference output. */
function cdxjIndexer(path: string): string {
  const r = spawnSync(python(), ['-m', 'cdxj_indexer.main', '--sort', path], { encoding: 'utf8' });
  assert.equal(r.status, 0, `cdxj-indexer failed on ${path}: ${r.stderr}`);
  return r.stdout;
}

function indexOf(dir: string, warc: string): string {
  return readFileSync(cdxjPathFor(join(dir, warc)), 'utf8');
}

function lines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '');
}

/** Writes the kinds of records a crawl writes: responses (with fetch-facts metadata), both revisit profiles, an error. */
function writeMix(w: WarcWriter, n: number): void {
  const date = new Date('2026-12-02T10:11:12.345Z');
  for (let i = 0; i < n; i++) {
    const args = fetchOf(`http://www.Site-${i % 3}.test:8080/Page/${i}?b=2&a=1`, 3_000 + i * 100);
    args.responseHeaders = [
      ['Content-Type', 'text/html; charset=UTF-8'],
      ['Content-Length', String(args.payload.length)],
    ];
    const r = w.writeRequestResponse({ ...args, metadata: { fetchMs: String(i) } });
    w.writeRevisit({
      targetUri: `http://mirror.test/copy/${i}`,
      date,
      refersToUri: args.targetUri,
      refersToDate: args.date,
      refersToRecordId: r.response.recordId,
      payloadDigest: r.payloadDigest,
      statusLine: 'HTTP/1.1 200 OK',
      responseHeaders: [['Content-Type', 'text/html']],
      profile: 'identical-payload-digest',
    });
  }
  w.writeRevisit({
    targetUri: 'http://site-0.test:8080/not-modified',
    date,
    refersToUri: 'http://site-0.test:8080/not-modified',
    refersToDate: date,
    statusLine: 'HTTP/1.1 304 Not Modified',
    responseHeaders: [],
    profile: 'server-not-modified',
  });
  w.writeRequestResponse({
    ...fetchOf('http://site-0.test:8080/caf\u00e9?q=\u00fc', 10),
    statusLine: 'HTTP/1.1 404 Not Found',
  });
  w.writeMetadata({ targetUri: 'http://site-0.test:8080/failed', date, fields: { error: 'CS_TIMEOUT' } });
}

test('each file gets, when it closes, an index byte for byte what cdxj-indexer --sort writes', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir, cdxj: true, maxFileBytes: 15_000 });
  w.open();
  writeMix(w, 12);
  // a file still open has no index yet: an uploader never sees a WARC without its index
  const open = listFiles(dir).filter((f) => f.endsWith('.open'));
  assert.equal(open.length, 1);
  assert.ok(!listFiles(dir).includes(open[0]!.replace(/\.warc\.gz\.open$/, '.cdxj')));
  w.close();

  const warcs = listFiles(dir).filter((f) => f.endsWith('.warc.gz'));
  assert.ok(warcs.length >= 3, `rotation should have closed several files: ${warcs.join(' ')}`);
  assert.deepEqual(listFiles(dir), warcs.flatMap((f) => [f.replace(/\.warc\.gz$/, '.cdxj'), f]).sort());
  let total = 0;
  for (const warc of warcs) {
    const ours = indexOf(dir, warc);
    assert.equal(ours, cdxjIndexer(join(dir, warc)), `${warc}: not what cdxj-indexer writes`);
    total += lines(ours).length;
  }
  // 12 responses + 12 revisits + the 304 + the 404; the warc-fields metadata records are not indexed
  assert.equal(total, 26);
});

test('a file left open by a crash is indexed when the next writer recovers it, its torn tail left out', (t) => {
  const dir = tempDir(t);
  const crashed = new WarcWriter({ dir, partition: 4, cdxj: true });
  crashed.open();
  writeMix(crashed, 3);
  crashed.flush();
  const [openName] = listFiles(dir);
  assert.ok(openName!.endsWith('.open'));
  // the crash tore a record being written
  writeFileSync(join(dir, openName!), Buffer.from([0x1f, 0x8b, 0x08, 0, 1, 2, 3]), { flag: 'a' });

  const next = new WarcWriter({ dir, partition: 4, cdxj: true });
  next.open();
  const warc = openName!.replace(/\.open$/, '');
  assert.deepEqual(listFiles(dir), [warc.replace(/\.warc\.gz$/, '.cdxj'), warc]);
  assert.equal(indexOf(dir, warc), cdxjIndexer(join(dir, warc)));
  assert.equal(lines(indexOf(dir, warc)).length, 3 + 3 + 2);
  next.close();
});

test('open() indexes a closed file of its partition whose index is missing after an indexed one, not those from before indexing, and removes a torn temporary index', (t) => {
  const dir = tempDir(t);
  // two written before indexing was on (the first writer with it on indexes the newest of them
  // at open(), as a file that may have lost its index), then one with it on, then one whose index was lost
  for (const cdxj of [false, false, true, false]) {
    const w = new WarcWriter({ dir, partition: 2, cdxj });
    w.open();
    writeMix(w, 1);
    w.close();
  }
  const other = new WarcWriter({ dir, partition: 3 });
  other.open();
  writeMix(other, 1);
  other.close();
  const [older, before, indexed, lost, theirs] = listFiles(dir).filter((f) => f.endsWith('.warc.gz'));
  const cdxj = (f: string) => f.replace(/\.warc\.gz$/, '.cdxj');
  writeFileSync(join(dir, `${cdxj(lost!)}.tmp`), 'com,torn)/ 2026');
  assert.deepEqual(
    listFiles(dir),
    [older, cdxj(before!), before, cdxj(indexed!), indexed, lost, `${cdxj(lost!)}.tmp`, theirs].sort(),
  );

  const w = new WarcWriter({ dir, partition: 2, cdxj: true });
  w.open();
  w.close();
  // older files from before indexing are left alone: indexing a whole old archive at startup could take hours
  assert.deepEqual(
    listFiles(dir),
    [older, cdxj(before!), before, cdxj(indexed!), indexed, cdxj(lost!), lost, theirs].sort(),
  );
  assert.equal(indexOf(dir, lost!), cdxjIndexer(join(dir, lost!)));
});

test('a file whose index cannot be written still gets its final name; the error names the index, and the next open() writes it', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir, cdxj: true });
  w.open();
  const loc = w.writeRequestResponse(fetchOf('http://example.test/x', 500)).response;
  const index = cdxjPathFor(join(dir, loc.file));
  // something in the index's place: the rename onto it fails
  mkdirSync(index);
  writeFileSync(join(index, 'blocker'), '');
  assert.throws(
    () => w.close(),
    (err: unknown) =>
      err instanceof CrawlError &&
      err.code === 'CS_INTERNAL' &&
      err.message.includes(loc.file.replace(/\.warc\.gz$/, '.cdxj')),
  );
  assert.ok(statSync(join(dir, loc.file)).size > loc.offset + loc.length - 1, 'the WARC is whole under its final name');
  assert.ok(!listFiles(dir).some((f) => f.endsWith('.open') || f.endsWith('.tmp')));

  unlinkSync(join(index, 'blocker'));
  rmdirSync(index);
  const again = new WarcWriter({ dir, cdxj: true });
  again.open();
  assert.equal(indexOf(dir, loc.file), cdxjIndexer(join(dir, loc.file)));
  again.close();
});

test('a garbled record is left out of the index and every other record is indexed', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir });
  w.open();
  const locs = [0, 1, 2].map((i) => w.writeRequestResponse(fetchOf(`http://example.test/${i}`, 2_000)).response);
  w.close();
  const path = join(dir, locs[1]!.file);
  const bytes = readFileSync(path);
  // garble the middle of the second response's gzip member (its CRC no longer matches)
  bytes.fill(0x55, locs[1]!.offset + 100, locs[1]!.offset + 140);
  writeFileSync(path, bytes);

  const { lines: n } = writeCdxjIndex(path);
  const offsets = lines(readFileSync(cdxjPathFor(path), 'utf8')).map(
    (l) => (JSON.parse(l.slice(l.indexOf('{'))) as { offset: string }).offset,
  );
  assert.equal(n, 2);
  assert.deepEqual(offsets.sort(), [String(locs[0]!.offset), String(locs[2]!.offset)].sort());
});

test('writing the index again gives the same bytes; a writer without cdxj writes none', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir });
  w.open();
  writeMix(w, 2);
  w.close();
  const [warc] = listFiles(dir);
  assert.deepEqual(listFiles(dir), [warc]);
  writeCdxjIndex(join(dir, warc!));
  const first = indexOf(dir, warc!);
  writeCdxjIndex(join(dir, warc!));
  assert.equal(indexOf(dir, warc!), first);
  assert.equal(first, cdxjIndexer(join(dir, warc!)));
});

test("an open file's index holds its lines in chunks of its own, not the pool slabs they were made in", async () => {
  const builder = new CdxjIndexBuilder('f.warc.gz');
  const slabs: WeakRef<object>[] = [];
  let lineBytes = 0;
  for (let i = 0; i < 500; i++) {
    const uri = `http://site-${i}.test/page/${i}`;
    builder.add(
      'response',
      uri,
      '2026-12-02T10:11:12Z',
      'sha1:AAAA',
      Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n'),
      {
        offset: i * 1000,
        length: 1000,
      },
    );
    lineBytes += 200;
    // what a crawl allocates between two records: pooled buffers that are soon garbage
    slabs.push(new WeakRef(Buffer.from('g'.repeat(3000)).buffer));
  }
  // Node's current pool slab stays alive whatever the index does
  assert.ok((await survivors(slabs)) <= 2, 'the pool slabs the lines were made in are collectable');
  assert.ok(builder.bytes <= 2 * lineBytes, `${builder.bytes} bytes held for ~${lineBytes} bytes of lines`);
});

test('packed lines keep their bytes whole: a line longer than a chunk, lines that fill one to the end, non-ASCII URLs', (t) => {
  const dir = tempDir(t);
  const builder = new CdxjIndexBuilder('f.warc.gz');
  const head = Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n');
  const uris = [
    `http://long.test/${'a'.repeat(70_000)}`,
    ...Array.from({ length: 400 }, (_, i) => `http://caf\u00e9.test/\u00fc/${'x'.repeat(i)}?q=\u4e2d${i}`),
  ];
  const expected: string[] = [];
  for (const [i, uri] of uris.entries()) {
    const at = { offset: i * 1000, length: 1000 };
    builder.add('response', uri, '2026-12-02T10:11:12Z', 'sha1:AAAA', head, at);
    const fields = new Map([
      ['warc-target-uri', uri],
      ['warc-date', '2026-12-02T10:11:12Z'],
      ['content-type', 'application/http;msgtype=response'],
      ['warc-payload-digest', 'sha1:AAAA'],
    ]);
    expected.push(cdxjLine(cdxjEntryOf({ type: 'response', fields, block: head, ...at }, 'f.warc.gz')!));
  }
  const warc = join(dir, 'f.warc.gz');
  assert.deepEqual(builder.write(warc), { path: cdxjPathFor(warc), lines: uris.length });
  const sorted = expected.map((l) => Buffer.from(l, 'utf8')).sort(Buffer.compare);
  assert.deepEqual(readFileSync(cdxjPathFor(warc)), Buffer.concat(sorted));
});
