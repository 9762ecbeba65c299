import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { constants, gzipSync, inflateRawSync } from 'node:zlib';
import { defaultCrawlConfig } from '../../../processors/common/crawl-config.js';
import { analyzeHtml, type AnalysisRequest } from '../../../processors/parser/html-analysis.js';
import { ParsePool } from '../../../processors/parser/parse-pool.js';
import { OFFLOAD_MIN_BYTES, PARSER_LOOKAHEAD } from '../../../processors/parser/parser-processor.js';
import { CHARSET_VARIANTS, charsetWeb } from '../../../synthetic-web/charset-pages.js';
import { prose, renderPage } from '../../../synthetic-web/sites.js';
import type { FetchedPage, PageRecord } from '../../../schemas/types.js';
import { fetchedPageFor } from './fetched-page.js';
import { httpBody, parseRecord, readAt } from './warc-helpers.js';
import { deflatePayload } from '../../../processors/parser/warc-records.js';
import { ParserTasks } from './parser-tasks.js';

const PORT = 8080;

/** Pads an HTML body past the offload size with a comment after the document (no text, no links). */
function padded(body: Buffer, bytes = OFFLOAD_MIN_BYTES + 100): Buffer {
  const gap = Math.max(0, bytes - body.length - 9);
  return Buffer.concat([body, Buffer.from(`<!--${'x'.repeat(gap)}-->`, 'latin1')]);
}

function html(title: string, links: string[], words: number, head = ''): string {
  const items = links.map((l) => `<li><a href="${l}">${l}</a></li>`).join('\n');
  return `<!doctype html><html lang="en"><head><title>${title}</title>${head}</head><body><h1>${title}</h1><p>${prose(title, words)}</p><ul>${items}</ul></body></html>`;
}

/**
 * A varied set of fetches, most past OFFLOAD_MIN_BYTES: legacy charsets, gzip, canonical, meta
 * nofollow, a feed link, an exact copy on another site, a near copy, and a few small pages that
 * stay on the task's thread.
 */
function fetches(): FetchedPage[] {
  let clock = 1_700_000_000_000;
  const page = (url: string, body: Buffer, contentType: string | null, extra: Partial<FetchedPage> = {}) =>
    fetchedPageFor(url, {
      leaseId: `l-${url}`,
      fetchedAt: (clock += 1_000),
      headers: [
        ...(contentType === null ? [] : [{ name: 'Content-Type', value: contentType }]),
        ...(extra.headers ?? []),
      ],
      body,
      ...(extra.status !== undefined ? { status: extra.status } : {}),
    });
  const out: FetchedPage[] = [];
  const sites = charsetWeb();
  for (const v of CHARSET_VARIANTS) {
    const site = sites.find((s) => s.host === v.host)!;
    const spec = site.pages[v.path]!;
    const body = Buffer.from(renderPage(spec, { port: PORT, host: v.host, path: v.path, pageHits: 1 }));
    out.push(page(`http://${v.host}:${PORT}${v.path}`, padded(body), spec.contentType ?? null));
  }
  const links = (n: number) => Array.from({ length: n }, (_, i) => `/p${i}.html`);
  const big = (title: string, head = '') => Buffer.from(html(title, links(40), 1_500, head));
  out.push(page('http://big.test/a.html', big('Big A'), 'text/html; charset=utf-8'));
  out.push(page('http://big.test/canonical.html', big('Big C', '<link rel="canonical" href="/a.html">'), 'text/html'));
  out.push(page('http://big.test/nofollow.html', big('Big N', '<meta name="robots" content="nofollow">'), null));
  out.push(
    page(
      'http://big.test/feed-link.html',
      big('Big F', '<link rel="alternate" type="application/rss+xml" href="/feed.rss">'),
      'text/html',
    ),
  );
  out.push(
    page('http://big.test/gzip.html', gzipSync(padded(big('Big G'), 40_000)), 'text/html', {
      headers: [{ name: 'Content-Encoding', value: 'gzip' }],
    }),
  );
  // an exact copy of big.test/a.html on another site, and a near copy (one word more)
  out.push(page('http://mirror.test/a.html', big('Big A'), 'text/html; charset=utf-8'));
  out.push(
    page(
      'http://big.test/near.html',
      Buffer.from(html('Big A', links(40), 1_500).replace('<ul>', '<p>extra</p><ul>')),
      'text/html; charset=utf-8',
    ),
  );
  // a body that does not inflate: the decode error, found on a worker, is recorded as inline
  out.push(
    page('http://big.test/bad-gzip.html', padded(Buffer.from('not gzip at all')), 'text/html', {
      headers: [{ name: 'Content-Encoding', value: 'gzip' }],
    }),
  );
  for (let i = 0; i < 5; i++)
    out.push(page(`http://small.test/s${i}.html`, Buffer.from(html(`Small ${i}`, links(3), 30)), 'text/html'));
  out.push(page('http://big.test/missing.html', padded(Buffer.from('gone')), 'text/plain', { status: 404 }));
  return out;
}

/** The page records and link batches of parsing `pages` on `threads` threads, in a comparable form. */
async function parseAll(pages: FetchedPage[], threads: number): Promise<{ records: string[]; links: string[] }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-parse-threads-'));
  try {
    // one task: which of two near copies is "first" then depends on the order of the input alone
    // (across partitions it depends on which task finishes first, in any engine)
    const tasks = await ParserTasks.open(dir, 1, { ...defaultCrawlConfig, threads });
    for (const p of pages) tasks.fetched(p);
    if (threads > 1) await tasks.drainAhead(PARSER_LOOKAHEAD);
    else tasks.drain();
    tasks.commit();
    await tasks.close();
    // every response record holds its page's body, however its payload was deflated
    const bodies = new Map(pages.map((p) => [p.url, p.body]));
    let responses = 0;
    for (const r of tasks.records) {
      if (r.warcFile === null) continue;
      const loc = { file: r.warcFile, offset: r.warcOffset!, length: r.warcLength! };
      const record = parseRecord(readAt(tasks.warcDir, loc));
      if (record.headers.get('warc-type') !== 'response') continue;
      assert.deepEqual(httpBody(record.block), bodies.get(r.url), `the response record of ${r.url}`);
      responses++;
    }
    assert.ok(responses >= 15, `only ${responses} response records`);
    // WARC file names carry the time they were opened, and records random ids (so their gzip
    // lengths vary); everything else must be equal
    const show = (r: PageRecord) => JSON.stringify({ ...r, warcFile: null, warcOffset: null, warcLength: null });
    return {
      records: tasks.records.map(show).sort(),
      // discoveredAt is the time the harness handed the record in
      links: tasks.links.map((l) => JSON.stringify({ ...l, discoveredAt: 0 })).sort(),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('pages parsed on worker threads give the same page records and outlinks as on one thread', async () => {
  const pages = fetches();
  assert.ok(pages.filter((p) => p.body.length >= OFFLOAD_MIN_BYTES).length >= 15, 'too few pages to offload');
  const one = await parseAll(pages, 1);
  const before = ParsePool.answeredByWorkers;
  const three = await parseAll(pages, 3);
  const offloaded = ParsePool.answeredByWorkers - before;
  // every HTML page past the size but the exact copy (not parsed again) and the non-HTML 404
  assert.ok(offloaded >= 15, `only ${offloaded} pages were analysed on a worker`);
  assert.equal(one.records.length, pages.length, 'one record per page');
  assert.deepEqual(three.records, one.records);
  assert.deepEqual(three.links, one.links);
  assert.ok(
    one.links.some((l) => l.includes('/feed.rss')),
    'the feed link was followed',
  );
  const bad = one.records.map((r) => JSON.parse(r) as PageRecord).find((r) => r.url.endsWith('/bad-gzip.html'));
  assert.ok(bad?.errorCode, `the body that does not inflate was recorded without an error: ${JSON.stringify(bad)}`);
});

function request(body: Buffer): AnalysisRequest {
  return {
    body,
    contentEncoding: undefined,
    contentType: 'text/html',
    url: 'http://a.test/',
    maxDecodedBytes: 10 * 2 ** 20,
    mainTextChars: 256 * 1024,
    maxLinks: 1_000,
    robotsToken: 'crawlstream',
  };
}

test('a worker that dies has its requests answered on the calling thread, and is replaced', async () => {
  const pool = ParsePool.acquire(1);
  try {
    const bodies = Array.from({ length: 40 }, (_, i) =>
      Buffer.from(html(`Page ${i}`, [`/l${i}.html`, '/x.html'], 2_000)),
    );
    const answers = bodies.map((b) => pool.analyze(request(b)));
    // the worker is terminated with requests in flight, as an out-of-memory exit would end it
    const slots = (pool as unknown as { slots: { worker: { terminate(): Promise<number> } }[] }).slots;
    await slots[0]!.worker.terminate();
    const got = await Promise.all(answers);
    for (let i = 0; i < bodies.length; i++) {
      const expected = analyzeHtml(request(bodies[i]!));
      assert.deepEqual(got[i]?.analysis, expected, `request ${i} was lost or changed`);
    }
    // the replacement answers the next request
    const before = ParsePool.answeredByWorkers;
    const next = await pool.analyze(request(bodies[0]!));
    assert.deepEqual(next?.analysis, analyzeHtml(request(bodies[0]!)));
    assert.equal(ParsePool.answeredByWorkers, before + 1, 'the pool has no working worker after the loss');
  } finally {
    pool.release();
  }
});

test('a worker asked to deflates the payload for its WARC record: raw deflate that inflates to the body', async () => {
  const pool = ParsePool.acquire(1);
  try {
    const body = Buffer.from(html('Deflated', ['/d.html'], 3_000));
    const asked = await pool.analyze(request(body), 1);
    assert.ok(asked?.deflated, 'deflated on the worker');
    assert.deepEqual(asked.deflated, deflatePayload(body, 1));
    assert.deepEqual(inflateRawSync(asked.deflated, { finishFlush: constants.Z_SYNC_FLUSH }), body);
    assert.deepEqual(asked.analysis, analyzeHtml(request(body)));
    const plain = await pool.analyze(request(body));
    assert.equal(plain?.deflated, undefined, 'not asked, not deflated');
  } finally {
    pool.release();
  }
});

test('the pool is shared while acquired, and answers on the calling thread once released', async () => {
  const a = ParsePool.acquire(2);
  const b = ParsePool.acquire(5);
  assert.equal(a, b, 'one pool per process');
  assert.equal(a.size, 2);
  a.release();
  const body = Buffer.from(html('Shared', ['/s.html'], 500));
  assert.deepEqual((await b.analyze(request(body)))?.analysis, analyzeHtml(request(body)));
  b.release();
  const before = ParsePool.answeredByWorkers;
  assert.deepEqual(await b.analyze(request(body), 1), { analysis: analyzeHtml(request(body)) }, 'not deflated here');
  assert.equal(ParsePool.answeredByWorkers, before, 'a released pool sent work to a worker');
  const c = ParsePool.acquire(1);
  assert.notEqual(c, a, 'a released pool was handed out again');
  c.release();
});
