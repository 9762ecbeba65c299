import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { deflatePayload, gzipMember } from '../../../processors/parser/warc-records.js';
import { WarcWriter, type WarcLocation } from '../../../processors/parser/warc-writer.js';
import { CrawlError, InvalidOptionError } from '../../../core/errors.js';
import { fetchOf, httpBody, httpHead, listFiles, parseRecord, readAt, tempDir } from './warc-helpers.js';
import { assertWarcioCheckPasses, warcioIndex } from '../../python/warcio.js';

const NAME = /^crawlstream-\d{17}-00003-\d{5}\.warc\.gz$/;

test('a WARC file of every record kind passes warcio check and indexes as written', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir, partition: 3, software: 'crawlstream/test', operator: 'ops@example.com' });
  w.open();
  const html = gzipSync(Buffer.from('<html><body>Hello, archive</body></html>'));
  const fetched = w.writeRequestResponse({
    targetUri: 'http://example.com/page',
    date: new Date('2024-05-01T12:00:00.123Z'),
    ip: '192.0.2.1',
    requestHeaders: 'GET /page HTTP/1.1\r\nHost: example.com\r\nAccept-Encoding: gzip\r\n\r\n',
    statusLine: 'HTTP/1.1 200 OK',
    responseHeaders: { 'content-type': 'text/html', 'content-encoding': 'gzip', 'transfer-encoding': 'chunked' },
    payload: html,
  });
  const revisit = w.writeRevisit({
    targetUri: 'http://example.com/copy',
    date: new Date('2024-05-01T12:00:05Z'),
    refersToUri: 'http://example.com/page',
    refersToDate: new Date('2024-05-01T12:00:00.123Z'),
    payloadDigest: fetched.payloadDigest,
    statusLine: 'HTTP/1.1 200 OK',
    responseHeaders: [['Content-Type', 'text/html']],
    profile: 'identical-payload-digest',
  });
  const notModified = w.writeRevisit({
    targetUri: 'http://example.com/page',
    date: new Date('2024-05-02T12:00:00Z'),
    refersToUri: 'http://example.com/page',
    refersToDate: new Date('2024-05-01T12:00:00.123Z'),
    payloadDigest: fetched.payloadDigest,
    statusLine: 'HTTP/1.1 304 Not Modified',
    responseHeaders: [['ETag', '"abc"']],
    profile: 'server-not-modified',
  });
  const meta = w.writeMetadata({
    targetUri: 'http://example.com/slow',
    date: new Date('2024-05-01T12:01:00Z'),
    fields: { code: 'CS_TIMEOUT', message: 'no response in 30 s\r\nWARC-Type: forged' },
  });
  w.close();

  const files = listFiles(dir);
  assert.equal(files.length, 1);
  assert.match(files[0]!, NAME);
  for (const loc of [fetched.request, fetched.response, revisit, notModified, meta]) assert.equal(loc.file, files[0]);

  const file = join(dir, files[0]!);
  assertWarcioCheckPasses(file);
  const index = warcioIndex(file, [
    'warc-type',
    'warc-target-uri',
    'warc-payload-digest',
    'http:status',
    'warc-profile',
  ]);
  assert.deepEqual(
    index.map((r) => [r['warc-type'], r['warc-target-uri'], r['http:status']]),
    [
      ['warcinfo', undefined, undefined],
      ['response', 'http://example.com/page', '200'],
      ['request', 'http://example.com/page', undefined],
      ['revisit', 'http://example.com/copy', '200'],
      ['revisit', 'http://example.com/page', '304'],
      ['metadata', 'http://example.com/slow', undefined],
    ],
  );
  const locations = [fetched.response, fetched.request, revisit, notModified, meta];
  assert.deepEqual(
    index.slice(1).map((r) => [Number(r.offset), Number(r.length)]),
    locations.map((l) => [l.offset, l.length]),
  );
  assert.equal(index[1]!['warc-payload-digest'], fetched.payloadDigest);
  assert.equal(index[3]!['warc-profile'], 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest');
  assert.equal(index[4]!['warc-profile'], 'http://netpreserve.org/warc/1.1/revisit/server-not-modified');
  assert.equal(statSync(file).size, meta.offset + meta.length);
});

test('a record read back at its location holds the payload and the digests returned', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir });
  w.open();
  const args = fetchOf('http://example.com/blob?id=1', 50_000);
  const result = w.writeRequestResponse({ ...args, payload: Buffer.from('hello') });
  const big = w.writeRequestResponse(args);
  w.close();

  const response = parseRecord(readAt(dir, result.response));
  assert.equal(response.headers.get('warc-type'), 'response');
  assert.equal(response.headers.get('warc-target-uri'), 'http://example.com/blob?id=1');
  assert.equal(response.headers.get('warc-date'), '2024-05-01T12:00:00.250Z');
  assert.equal(response.headers.get('warc-ip-address'), '192.0.2.10');
  assert.equal(httpBody(response.block).toString(), 'hello');
  // SHA-1 of "hello" in base32, computed independently with Python's hashlib and base64
  assert.equal(result.payloadDigest, 'sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N');
  assert.equal(response.headers.get('warc-payload-digest'), result.payloadDigest);
  assert.equal(response.headers.get('warc-block-digest'), result.blockDigest);

  const request = parseRecord(readAt(dir, result.request));
  assert.equal(request.headers.get('warc-type'), 'request');
  assert.equal(request.headers.get('warc-concurrent-to'), response.headers.get('warc-record-id'));
  assert.equal(response.headers.get('warc-concurrent-to'), request.headers.get('warc-record-id'));
  assert.match(request.block.toString('latin1'), /^GET \/blob\?id=1 HTTP\/1\.1\r\nHost: example\.com\r\n/);

  assert.ok(httpBody(parseRecord(readAt(dir, big.response)).block).equals(args.payload));
});

test('files rotate before a record would cross maxFileBytes, each starting with warcinfo', (t) => {
  const dir = tempDir(t);
  const maxFileBytes = 40_000;
  const w = new WarcWriter({ dir, partition: 3, maxFileBytes });
  w.open();
  const written: { request: WarcLocation; response: WarcLocation; payload: Buffer }[] = [];
  for (let i = 0; i < 24; i++) {
    const args = fetchOf(`http://example.com/r/${i}`, 3_000 + i * 500);
    written.push({ ...w.writeRequestResponse(args), payload: args.payload });
  }
  const huge = fetchOf('http://example.com/huge', 3 * maxFileBytes);
  const hugeLoc = w.writeRequestResponse(huge);
  const after = w.writeMetadata({ targetUri: 'http://example.com/after', date: new Date(), fields: { n: '1' } });
  w.close();

  const files = listFiles(dir);
  assert.ok(files.length >= 5, `expected several files, got ${files.length}`);
  for (const f of files) assert.match(f, NAME);
  const seqs = files.map((f) => Number(f.slice(-13, -8)));
  assert.deepEqual(
    seqs,
    seqs.map((_, i) => i),
    'sequence numbers count up from 0 in name order',
  );

  for (const f of files) {
    const path = join(dir, f);
    assertWarcioCheckPasses(path);
    const index = warcioIndex(path, ['warc-type', 'warc-filename']);
    assert.equal(index[0]!['warc-type'], 'warcinfo');
    assert.equal(index[0]!['warc-filename'], f);
    assert.equal(index.filter((r) => r['warc-type'] === 'warcinfo').length, 1);
    if (f !== hugeLoc.response.file)
      assert.ok(statSync(path).size <= maxFileBytes, `${f} is ${statSync(path).size} bytes`);
  }
  // the oversized pair gets a file of its own, and the next record starts a new one
  assert.notEqual(hugeLoc.response.file, written.at(-1)!.response.file);
  assert.notEqual(after.file, hugeLoc.response.file);
  assert.ok(httpBody(parseRecord(readAt(dir, hugeLoc.response)).block).equals(huge.payload));

  for (const { request, response, payload } of written) {
    assert.equal(request.file, response.file, 'a request and its response share a file');
    assert.ok(files.includes(response.file));
    assert.ok(httpBody(parseRecord(readAt(dir, response)).block).equals(payload));
  }
});

test('a chunked or truncated response is stored with a Content-Length that matches its payload', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir });
  w.open();
  const chunked = w.writeRequestResponse({
    ...fetchOf('http://example.com/chunked', 10),
    responseHeaders: [
      ['Transfer-Encoding', 'chunked'],
      ['Content-Type', 'text/plain'],
    ],
    payload: Buffer.from('0123456789'),
  });
  const truncated = w.writeRequestResponse({
    ...fetchOf('http://example.com/big', 10),
    responseHeaders: [['Content-Length', '99999999']],
    payload: Buffer.from('partial'),
    truncated: 'length',
  });
  w.close();
  assertWarcioCheckPasses(join(dir, chunked.response.file));

  const a = parseRecord(readAt(dir, chunked.response));
  assert.equal(
    httpHead(a.block),
    'HTTP/1.1 200 OK\r\nX-Crawlstream-Original-Transfer-Encoding: chunked\r\nContent-Type: text/plain\r\nContent-Length: 10',
  );
  const b = parseRecord(readAt(dir, truncated.response));
  assert.equal(b.headers.get('warc-truncated'), 'length');
  assert.equal(
    httpHead(b.block),
    'HTTP/1.1 200 OK\r\nX-Crawlstream-Original-Content-Length: 99999999\r\nContent-Length: 7',
  );
});

test('CR and LF in header values cannot forge WARC or HTTP fields', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir });
  w.open();
  const loc = w.writeRequestResponse({
    ...fetchOf('http://example.com/evil', 4),
    responseHeaders: [['X-Evil', 'a\r\nSet-Cookie: injected\r\n\r\nbody']],
  });
  const meta = w.writeMetadata({
    targetUri: 'http://example.com/m',
    date: new Date(),
    fields: { 'a\r\nb': 'c\nWARC-Type: x' },
  });
  w.close();
  assertWarcioCheckPasses(join(dir, loc.response.file));
  assert.equal(
    httpHead(parseRecord(readAt(dir, loc.response)).block),
    'HTTP/1.1 200 OK\r\nX-Evil: a Set-Cookie: injected body',
  );
  assert.equal(parseRecord(readAt(dir, meta)).block.toString(), 'a b: c WARC-Type: x\r\n');
});

test('warcio check rejects a record whose payload digest does not match', (t) => {
  // proves the validator used above can fail: a digest mismatch must be reported
  const dir = tempDir(t);
  const w = new WarcWriter({ dir });
  w.open();
  w.writeRevisit({
    targetUri: 'http://example.com/',
    date: new Date(),
    refersToUri: 'http://example.com/',
    refersToDate: new Date(),
    payloadDigest: 'sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    statusLine: 'HTTP/1.1 200 OK',
    responseHeaders: {},
    profile: 'identical-payload-digest',
  });
  const good = w.writeRequestResponse(fetchOf('http://example.com/x', 100));
  w.close();
  const record = readAt(dir, good.response);
  const forged = Buffer.from(
    record.toString('latin1').replace(good.payloadDigest, 'sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB'),
    'latin1',
  );
  const path = join(dir, 'forged.warc.gz');
  writeFileSync(path, gzipSync(forged));
  assert.throws(() => assertWarcioCheckPasses(path), /warcio check failed/);
});

test('invalid options are refused with InvalidOptionError naming the option', () => {
  const cases: [object, RegExp][] = [
    [{ dir: '' }, /dir/],
    [{ dir: '/tmp/x', prefix: 'a b' }, /prefix/],
    [{ dir: '/tmp/x', prefix: '../up' }, /prefix/],
    [{ dir: '/tmp/x', partition: 100_000 }, /partition/],
    [{ dir: '/tmp/x', partition: -1 }, /partition/],
    [{ dir: '/tmp/x', maxFileBytes: 0 }, /maxFileBytes/],
    [{ dir: '/tmp/x', maxFileBytes: 1.5 }, /maxFileBytes/],
    [{ dir: '/tmp/x', gzipLevel: 0 }, /gzipLevel/],
    [{ dir: '/tmp/x', gzipLevel: 10 }, /gzipLevel/],
  ];
  for (const [options, message] of cases) {
    assert.throws(
      () => new WarcWriter(options as never),
      (err: unknown) => err instanceof InvalidOptionError && message.test(err.message),
    );
  }
});

test('writing before open() or after close() throws CS_INTERNAL, and close() is idempotent', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir });
  const write = () => w.writeMetadata({ targetUri: 'http://e.com/', date: new Date(), fields: {} });
  assert.throws(write, (err: unknown) => err instanceof CrawlError && err.code === 'CS_INTERNAL');
  w.open();
  write();
  w.close();
  w.close();
  assert.throws(write, (err: unknown) => err instanceof CrawlError && err.code === 'CS_INTERNAL');
  assert.equal(listFiles(dir).filter((f) => f.endsWith('.open')).length, 0);
});

test('a writer that never wrote a record leaves no file behind', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir });
  w.open();
  w.flush();
  w.close();
  assert.deepEqual(listFiles(dir), []);
});

test('while a file is written it carries the .open suffix, and locations name the final file', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir });
  w.open();
  const loc = w.writeMetadata({ targetUri: 'http://e.com/', date: new Date(), fields: { a: 'b' } });
  w.flush();
  assert.deepEqual(listFiles(dir), [`${loc.file}.open`]);
  w.close();
  assert.deepEqual(listFiles(dir), [loc.file]);
});

test('gzip level 1 (the default) writes records warcio reads back, larger than at level 6', (t) => {
  const dir = tempDir(t);
  const page = Buffer.from(
    '<html><body>' + '<p>the same words over and over, as HTML often is</p>'.repeat(2_000) + '</body></html>',
  );
  const sizes: number[] = [];
  for (const gzipLevel of [1, 6]) {
    const w = new WarcWriter({ dir, prefix: `level${gzipLevel}`, gzipLevel });
    w.open();
    const written = w.writeRequestResponse({
      ...fetchOf('http://example.com/big', 0),
      payload: page,
      responseHeaders: [['Content-Type', 'text/html']],
    });
    w.close();
    assert.deepEqual(httpBody(parseRecord(readAt(dir, written.response)).block), page);
    sizes.push(written.response.length);
    assertWarcioCheckPasses(join(dir, written.response.file));
  }
  assert.ok(sizes[0]! > sizes[1]!, `level 1 (${sizes[0]} B) should compress less than level 6 (${sizes[1]} B)`);
});

test('a payload that arrives compressed is stored in the gzip member as is, and reads back byte for byte', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir, gzipLevel: 6 });
  w.open();
  // 150 KB of incompressible bytes: three stored blocks, as a gzip- or br-encoded body would need
  const encoded = gzipSync(randomBytes(150_000));
  const written = w.writeRequestResponse({
    ...fetchOf('http://example.com/big.html', 0),
    payload: encoded,
    responseHeaders: [
      ['Content-Type', 'text/html'],
      ['Content-Encoding', 'gzip'],
    ],
  });
  const image = randomBytes(2_000);
  const picture = w.writeRequestResponse({
    ...fetchOf('http://example.com/a.png', 0),
    payload: image,
    responseHeaders: [['Content-Type', 'image/png']],
  });
  w.close();
  assertWarcioCheckPasses(join(dir, written.response.file));
  assert.deepEqual(httpBody(parseRecord(readAt(dir, written.response)).block), encoded);
  assert.deepEqual(httpBody(parseRecord(readAt(dir, picture.response)).block), image);
  // stored: the member is the payload plus its record and HTTP heads, compressed, and a few bytes per 64 KB
  assert.ok(
    written.response.length < encoded.length + 1_000,
    `member of ${written.response.length} B for a ${encoded.length} B payload`,
  );
  assert.ok(written.response.length > encoded.length, 'compressed bytes do not shrink');
});

test('gzipMember with a stored part inflates to exactly the parts joined, at every boundary', () => {
  const text = Buffer.from('WARC/1.1\r\nWARC-Type: response\r\n\r\n'.repeat(20));
  for (const size of [0, 1, 65_534, 65_535, 65_536, 131_070, 131_071, 200_000]) {
    const payload = randomBytes(size);
    for (const parts of [
      [text, payload, Buffer.from('\r\n\r\n')],
      [payload, text],
      [text, payload],
    ]) {
      const storedPart = parts.indexOf(payload);
      const member = gzipMember(parts, 1, storedPart);
      assert.deepEqual(gunzipSync(member), Buffer.concat(parts), `payload of ${size} B at part ${storedPart}`);
    }
  }
  // nothing stored: a small record is stored whole, a large one deflated
  for (const record of [Buffer.alloc(0), text, Buffer.concat([text, text, text, text])]) {
    assert.deepEqual(
      gunzipSync(gzipMember([record, Buffer.from('\r\n\r\n')])),
      Buffer.concat([record, Buffer.from('\r\n\r\n')]),
    );
  }
  const large = Buffer.concat(Array.from({ length: 10 }, () => text));
  assert.ok(gzipMember(large).length < large.length / 2, 'a large record is deflated');
});

test('gzipMember with a part deflated beforehand inflates to exactly the parts joined, whatever the heads', () => {
  const prose = Buffer.from('<p>the same words over and over, as HTML often is</p>'.repeat(500));
  const small = Buffer.from('WARC/1.1\r\nWARC-Type: response\r\n\r\n');
  const big = Buffer.concat(Array.from({ length: 100 }, () => small));
  for (const payload of [Buffer.alloc(0), Buffer.from('x'), prose, randomBytes(70_000)]) {
    for (const head of [small, big]) {
      for (const level of [1, 6]) {
        const parts = [head, Buffer.from('HTTP/1.1 200 OK\r\n\r\n'), payload, Buffer.from('\r\n\r\n')];
        const member = gzipMember(parts, level, 2, deflatePayload(payload, level));
        assert.deepEqual(
          gunzipSync(member),
          Buffer.concat(parts),
          `${payload.length} B after ${head.length} B, level ${level}`,
        );
      }
    }
  }
  // two members back to back read as one gzip stream, as a WARC file is
  const one = [small, prose, Buffer.from('\r\n\r\n')];
  const both = Buffer.concat([gzipMember(one, 1, 1, deflatePayload(prose, 1)), gzipMember(one, 1, 1)]);
  assert.deepEqual(gunzipSync(both), Buffer.concat([...one, ...one]));
  assert.ok(gzipMember(one, 1, 1, deflatePayload(prose, 1)).length < prose.length / 10, 'the payload is compressed');
});

test('a response record written with its payload deflated beforehand is the same record, and warcio reads it', (t) => {
  const dir = tempDir(t);
  const page = Buffer.from('<html><body>' + '<p>words of a page, over and over</p>'.repeat(700) + '</body></html>');
  const lengths: number[] = [];
  for (const deflated of [undefined, deflatePayload(page, 1)]) {
    const w = new WarcWriter({ dir, prefix: deflated === undefined ? 'here' : 'ahead' });
    w.open();
    const written = w.writeRequestResponse({
      ...fetchOf('http://example.com/page', 0),
      payload: page,
      responseHeaders: [['Content-Type', 'text/html']],
      ...(deflated === undefined ? {} : { deflatedPayload: deflated }),
    });
    w.close();
    assertWarcioCheckPasses(join(dir, written.response.file));
    const record = parseRecord(readAt(dir, written.response));
    assert.deepEqual(httpBody(record.block), page);
    lengths.push(written.response.length);
  }
  // the heads are stored, not deflated, when the payload comes deflated: a few hundred bytes more
  assert.ok(lengths[1]! < lengths[0]! + 600, `member of ${lengths[1]} B vs ${lengths[0]} B deflated here`);
});

test('a revisit stores the response head as received: its Content-Length is the payload it replays with', (t) => {
  const dir = tempDir(t);
  const w = new WarcWriter({ dir });
  w.open();
  const loc = w.writeRevisit({
    targetUri: 'http://example.com/copy',
    date: new Date('2024-05-01T12:00:05Z'),
    refersToUri: 'http://example.com/page',
    refersToDate: new Date('2024-05-01T12:00:00Z'),
    payloadDigest: 'sha1:7KPTQ4X5DTVYSI5UJWNICV3KQY5RFLCT',
    statusLine: 'HTTP/1.1 200 OK',
    responseHeaders: [
      ['Content-Type', 'text/html'],
      ['Content-Length', '1257'],
      ['Transfer-Encoding', 'identity'],
    ],
    profile: 'identical-payload-digest',
  });
  w.close();
  assert.equal(
    httpHead(parseRecord(readAt(dir, loc)).block),
    'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1257\r\nX-Crawlstream-Original-Transfer-Encoding: identity',
  );
});
