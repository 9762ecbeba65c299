import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import zlib from 'node:zlib';
import { decodeBody, decodedSizeExceeds } from '../../../processors/common/decode.js';

const MiB = 1024 * 1024;
const page = Buffer.from('<html><body>' + 'crawl me gently. '.repeat(2000) + '</body></html>');

describe('decodeBody', () => {
  test('undoes each supported coding', () => {
    const cases: Array<[string | undefined, Buffer]> = [
      [undefined, page],
      ['', page],
      ['identity', page],
      ['gzip', zlib.gzipSync(page)],
      ['x-gzip', zlib.gzipSync(page)],
      ['GZip', zlib.gzipSync(page)],
      ['deflate', zlib.deflateSync(page)],
      ['deflate', zlib.deflateRawSync(page)],
      ['br', zlib.brotliCompressSync(page)],
    ];
    for (const [coding, raw] of cases) {
      const out = decodeBody(raw, coding, MiB);
      assert.equal(out.errorCode, undefined, `${coding}: ${out.message}`);
      assert.ok(out.body.equals(page), String(coding));
    }
  });

  test('undoes stacked codings last-applied first', () => {
    const raw = zlib.brotliCompressSync(zlib.gzipSync(page));
    const out = decodeBody(raw, 'gzip, identity,br', MiB);
    assert.equal(out.errorCode, undefined, out.message);
    assert.ok(out.body.equals(page));
  });

  test('a body decoding to exactly the cap is accepted', () => {
    const exact = Buffer.alloc(64 * 1024, 'z');
    const out = decodeBody(zlib.gzipSync(exact), 'gzip', exact.length);
    assert.equal(out.errorCode, undefined);
    assert.equal(out.body.length, exact.length);
  });

  test('a gzip, deflate or br bomb stops at the cap with CS_BOMB and an empty body', () => {
    const zeros = Buffer.alloc(32 * MiB);
    const bombs: Array<[string, Buffer]> = [
      ['gzip', zlib.gzipSync(zeros)],
      ['deflate', zlib.deflateSync(zeros)],
      ['br', zlib.brotliCompressSync(zeros)],
      // each layer alone is small; the inner one is the bomb
      ['gzip, gzip', zlib.gzipSync(zlib.gzipSync(zeros))],
    ];
    for (const [coding, raw] of bombs) {
      assert.ok(raw.length < MiB, `${coding} bomb is ${raw.length} bytes`);
      const before = process.memoryUsage().arrayBuffers;
      const out = decodeBody(raw, coding, 2 * MiB);
      const grewMiB = (process.memoryUsage().arrayBuffers - before) / MiB;
      assert.equal(out.errorCode, 'CS_BOMB', coding);
      assert.equal(out.body.length, 0);
      assert.match(out.message ?? '', /cap of 2097152 bytes/);
      assert.ok(grewMiB < 16, `${coding}: buffers grew ${grewMiB.toFixed(1)} MiB decoding a 32 MiB bomb`);
    }
  });

  test('a stream cut short yields its decodable prefix and CS_PARSE', () => {
    const gz = zlib.gzipSync(page);
    const out = decodeBody(gz.subarray(0, Math.floor(gz.length / 2)), 'gzip', MiB);
    assert.equal(out.errorCode, 'CS_PARSE');
    assert.match(out.message ?? '', /ends early/);
    assert.ok(out.body.length > 0 && out.body.length < page.length, `decoded ${out.body.length}`);
    assert.ok(page.subarray(0, out.body.length).equals(out.body));
  });

  test('a truncated bomb is still CS_BOMB', () => {
    const gz = zlib.gzipSync(Buffer.alloc(32 * MiB));
    const out = decodeBody(gz.subarray(0, gz.length - 100), 'gzip', MiB);
    assert.equal(out.errorCode, 'CS_BOMB');
  });

  test('corrupt data is CS_PARSE with an empty body', () => {
    for (const coding of ['gzip', 'deflate', 'br']) {
      const out = decodeBody(Buffer.from('this was never compressed, whatever the header says'), coding, MiB);
      assert.equal(out.errorCode, 'CS_PARSE', coding);
      assert.equal(out.body.length, 0);
      assert.match(out.message ?? '', new RegExp(`corrupt ${coding}`));
    }
  });

  test('an unknown or excessive coding is CS_PARSE with the raw bytes', () => {
    const unknown = decodeBody(page, 'compress', MiB);
    assert.equal(unknown.errorCode, 'CS_PARSE');
    assert.match(unknown.message ?? '', /unsupported content coding 'compress'/);
    assert.ok(unknown.body.equals(page));

    const stacked = decodeBody(page, 'gzip, gzip, gzip, gzip, gzip', MiB);
    assert.equal(stacked.errorCode, 'CS_PARSE');
    assert.match(stacked.message ?? '', /too many content codings \(5\)/);
  });
});

describe('decodedSizeExceeds', () => {
  const zeros = Buffer.alloc(8 * MiB);

  test('flags a body whose decoded size passes the cap, in every coding and stacked', async () => {
    const bombs: Array<[string, Buffer]> = [
      ['gzip', zlib.gzipSync(zeros)],
      ['deflate', zlib.deflateSync(zeros)],
      ['deflate', zlib.deflateRawSync(zeros)],
      ['br', zlib.brotliCompressSync(zeros)],
      ['gzip, br', zlib.brotliCompressSync(zlib.gzipSync(zeros))],
    ];
    for (const [coding, raw] of bombs) {
      assert.equal(await decodedSizeExceeds(raw, coding, MiB), true, coding);
      assert.equal(await decodedSizeExceeds(raw, coding, 8 * MiB), false, `${coding} at exactly the cap`);
    }
  });

  test('answers false for identity, corrupt, unknown and cut-short bodies under the cap', async () => {
    assert.equal(
      await decodedSizeExceeds(zeros, undefined, MiB),
      false,
      'identity is capped by the body cap, not this one',
    );
    assert.equal(await decodedSizeExceeds(Buffer.from('not gzip at all'), 'gzip', MiB), false);
    assert.equal(await decodedSizeExceeds(zlib.gzipSync(page), 'compress', 1), false);
    assert.equal(await decodedSizeExceeds(zlib.gzipSync(page).subarray(0, 100), 'gzip', MiB), false);
  });

  test('counts a cut-short bomb up to the cap', async () => {
    const cut = zlib.gzipSync(zeros).subarray(0, 4000);
    assert.equal(await decodedSizeExceeds(cut, 'gzip', 64 * 1024), true);
  });
});
