import assert from 'node:assert/strict';
import { request, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { hammingDistance, simhash64 } from '../../processors/parser/simhash.js';
import {
  ATOM_PATH,
  canRevalidate,
  freshWeb,
  RSS_PATH,
  SITEMAP_INDEX,
  SITEMAP_PATHS,
  type FreshPage,
  type FreshWeb,
} from '../../synthetic-web/fresh-web.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';

interface Fetched {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function get(server: SyntheticWeb, host: string, path: string, headers: Record<string, string> = {}): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        agent: false,
        headers: { host: `${host}:${server.port}`, ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

// requests made now fall at web time t to t + 1 (see jumpTo: to compare Last-Modified across a
// jump, jump from late in one version to early in the next)
const at = (web: FreshWeb, t: number): void => web.jumpTo(t);

const text = (html: string): string => html.replace(/<[^>]+>/g, ' ');
const distance = (a: string, b: string): number => hammingDistance(simhash64(text(a))!, simhash64(text(b))!);
const hrefs = (html: string): string[] => [...html.matchAll(/<a\s[^>]*href="([^"]*)"/g)].map((m) => m[1]!);
const locs = (xml: string): string[] => [...xml.matchAll(/<loc>([^<]*)<\/loc>/g)].map((m) => m[1]!);
const byClass = (web: FreshWeb, cls: FreshPage['changeClass'], validators = 'both'): FreshPage =>
  web.layout.pages.find((p) => p.changeClass === cls && p.validators === validators && p.reach === 'linked')!;

describe('fresh web over http', () => {
  const web = freshWeb({ seed: 1 });
  let server: SyntheticWeb;
  before(async () => {
    server = await SyntheticWeb.start({ sites: web.sites });
  });
  after(() => server.close());

  test('a page answers 200 with a strong ETag and Last-Modified, then 304 with no body to either validator', async () => {
    at(web, 2);
    const page = byClass(web, 'never');
    const first = await get(server, page.host, page.path);
    assert.equal(first.status, 200);
    const etag = first.headers.etag!;
    assert.match(etag, /^"[^"]+"$/);
    assert.equal(first.headers['last-modified'], new Date(web.epoch).toUTCString());
    const byTag = await get(server, page.host, page.path, { 'if-none-match': etag });
    assert.equal(byTag.status, 304);
    assert.equal(byTag.body.length, 0);
    assert.equal(byTag.headers.etag, etag);
    const byDate = await get(server, page.host, page.path, { 'if-modified-since': first.headers['last-modified']! });
    assert.equal(byDate.status, 304);
    const weak = await get(server, page.host, page.path, { 'if-none-match': `"nope", W/${etag}` });
    assert.equal(weak.status, 304, 'If-None-Match compares weakly and takes any tag of a list');

    const log = server.requests().filter((e) => e.path === page.path);
    assert.deepEqual(
      log.map((e) => [e.status, e.bytes, e.ifNoneMatch, e.ifModifiedSince]),
      [
        [200, first.body.length, undefined, undefined],
        [304, 0, etag, undefined],
        [304, 0, undefined, first.headers['last-modified']],
        [304, 0, `"nope", W/${etag}`, undefined],
      ],
    );
  });

  test('If-None-Match takes precedence over If-Modified-Since', async () => {
    at(web, 2);
    const page = byClass(web, 'never');
    const first = await get(server, page.host, page.path);
    const reply = await get(server, page.host, page.path, {
      'if-none-match': '"other"',
      'if-modified-since': first.headers['last-modified']!,
    });
    assert.equal(reply.status, 200);
    assert.equal(reply.body.length, first.body.length);
  });

  test('pages send the validators their spec names, and one without any never answers 304', async () => {
    at(web, 2);
    for (const page of web.layout.pages) {
      const reply = await get(server, page.host, page.path);
      assert.equal(reply.headers.etag !== undefined, page.validators === 'both' || page.validators === 'etag');
      assert.equal(
        reply.headers['last-modified'] !== undefined,
        page.validators === 'both' || page.validators === 'last-modified',
      );
    }
    const bare = web.layout.pages.find((p) => p.validators === 'none')!;
    assert.equal(canRevalidate(bare), false);
    const reply = await get(server, bare.host, bare.path, {
      'if-modified-since': new Date(Date.now() + 3_600_000).toUTCString(),
    });
    assert.equal(reply.status, 200);
  });

  test('a fast page changes content, ETag and Last-Modified at its scheduled times', async () => {
    const page = byClass(web, 'fast');
    const change = (k: number): number => page.phaseSec + k * page.periodSec;
    at(web, change(2) - 3);
    const one = await get(server, page.host, page.path);
    assert.equal(one.headers['last-modified'], new Date(web.epoch + change(1) * 1000).toUTCString());
    at(web, change(2) + 1);
    const two = await get(server, page.host, page.path, { 'if-none-match': one.headers.etag! });
    assert.equal(two.status, 200);
    assert.notEqual(two.headers.etag, one.headers.etag);
    assert.equal(two.headers['last-modified'], new Date(web.epoch + change(2) * 1000).toUTCString());
    assert.ok(distance(one.body.toString(), two.body.toString()) > 3);
    const stale = await get(server, page.host, page.path, { 'if-modified-since': one.headers['last-modified']! });
    assert.equal(stale.status, 200);
  });

  test('robots.txt names the sitemap index, whose children are a plain, a gzipped and a text sitemap', async () => {
    at(web, 2);
    const host = web.layout.hosts[1]!;
    const robots = (await get(server, host, '/robots.txt')).body.toString();
    assert.match(robots, new RegExp(`^Sitemap: http://${host}:${server.port}${SITEMAP_INDEX}$`, 'm'));
    const index = (await get(server, host, SITEMAP_INDEX)).body.toString();
    assert.deepEqual(
      locs(index),
      Object.values(SITEMAP_PATHS).map((p) => server.url(host, p)),
    );
    const plain = await get(server, host, SITEMAP_PATHS.xml);
    assert.equal(plain.headers['content-type'], 'application/xml');
    const gz = await get(server, host, SITEMAP_PATHS.gz, { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-type'], 'application/gzip');
    assert.equal(gz.headers['content-encoding'], undefined);
    const unzipped = gunzipSync(gz.body).toString();
    const txt = (await get(server, host, SITEMAP_PATHS.txt)).body.toString();
    const listed = [...locs(plain.body.toString()), ...locs(unzipped), ...txt.trim().split('\n')];
    const expected = web.layout.pages.filter((p) => p.host === host).map((p) => server.url(host, p.path));
    assert.deepEqual([...listed].sort(), [...expected].sort());
    assert.match(unzipped, /<lastmod>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ<\/lastmod>/);
  });

  test('pages listed only in a sitemap are linked from no page; every other page is reachable from the home page', () => {
    for (const host of web.layout.hosts) {
      const pages = web.layout.pages.filter((p) => p.host === host);
      const seen = new Set(['/']);
      const queue = ['/'];
      while (queue.length > 0) {
        const path = queue.shift()!;
        for (const href of hrefs(web.htmlAt(web.page(host, path)!, 0, 80))) {
          if (href.startsWith('/') && !seen.has(href)) {
            seen.add(href);
            queue.push(href);
          }
        }
      }
      for (const p of pages) assert.equal(seen.has(p.path), p.reach === 'linked', `${host}${p.path}`);
    }
  });

  test('a bump changes a sitemap-only page and its lastmod at the bump time', async () => {
    const page = web.layout.pages.find((p) => p.reach === 'sitemap' && p.changeClass === 'never')!;
    const bumped = web.bump(page.host, page.path, 50);
    assert.equal(bumped, 50);
    assert.throws(() => web.bump(page.host, page.path, 0), /after the page's birth/);
    assert.throws(() => web.bump(page.host, '/nowhere.html', 60), /no page/);
    at(web, 48);
    const epochBefore = web.epoch;
    const before = await get(server, page.host, page.path);
    const sitemapBefore = (await get(server, page.host, SITEMAP_PATHS[page.sitemap!])).body.toString();
    at(web, 51);
    const afterBump = await get(server, page.host, page.path, { 'if-none-match': before.headers.etag! });
    const sitemapAfter = (await get(server, page.host, SITEMAP_PATHS[page.sitemap!])).body.toString();
    assert.equal(afterBump.status, 200);
    assert.equal(afterBump.headers['last-modified'], new Date(web.epoch + 50_000).toUTCString());
    assert.ok(distance(before.body.toString(), afterBump.body.toString()) > 3);
    const lastmod = (xml: string): string =>
      new RegExp(`<loc>${server.url(page.host, page.path)}</loc><lastmod>([^<]+)</lastmod>`).exec(xml)![1]!;
    assert.equal(lastmod(sitemapBefore), new Date(epochBefore).toISOString().replace('.000Z', 'Z'));
    assert.equal(lastmod(sitemapAfter), new Date(web.epoch + 50_000).toISOString().replace('.000Z', 'Z'));
    assert.deepEqual(web.versionAt(page, 49.9), { version: 0, sinceSec: 0 });
    assert.deepEqual(web.versionAt(page, 50), { version: 1, sinceSec: 50 });
  });

  test('the feeds gain an item every feedSec, whose page exists from then and is linked from the feeds only', async () => {
    const host = web.layout.feedHost;
    at(web, 2);
    const home = (await get(server, host, '/')).body.toString();
    assert.match(home, new RegExp(`<link rel="alternate" type="application/rss\\+xml"[^>]* href="${RSS_PATH}">`));
    assert.match(home, new RegExp(`<link rel="alternate" type="application/atom\\+xml"[^>]* href="${ATOM_PATH}">`));
    const rss = async (): Promise<{ links: string[]; etag: string }> => {
      const reply = await get(server, host, RSS_PATH);
      assert.equal(reply.headers['content-type'], 'application/rss+xml');
      return {
        links: [...reply.body.toString().matchAll(/<link>([^<]*)<\/link>/g)].map((m) => m[1]!).slice(1),
        etag: reply.headers.etag!,
      };
    };
    const empty = await rss();
    assert.deepEqual(empty.links, []);
    at(web, 2 * web.layout.feedSec + 1);
    const two = await rss();
    assert.equal(two.links.length, 2);
    assert.notEqual(two.etag, empty.etag);
    const atom = (await get(server, host, ATOM_PATH)).body.toString();
    assert.deepEqual(
      [...atom.matchAll(/<entry>.*?<link href="([^"]*)"/g)].map((m) => m[1]!),
      two.links,
    );
    const newest = new URL(two.links[0]!).pathname;
    assert.equal((await get(server, host, newest)).status, 200);
    assert.equal(web.page(host, newest)!.bornSec, 2 * web.layout.feedSec);
    assert.ok(
      web.layout.pages.every((p) => !hrefs(web.htmlAt(p, 100, server.port)).some((h) => h.includes('/stories/'))),
    );
    at(web, 2 * web.layout.feedSec - 1);
    assert.equal((await get(server, host, newest)).status, 404);
    assert.equal((await get(server, host, RSS_PATH, { 'if-none-match': two.etag })).status, 200);
  });
});

test('a cosmetic page’s ticks are near-duplicates (SimHash distance ≤ 3), a fast page’s versions are not', () => {
  for (const hosts of [1, 2, 3, 4, 12]) {
    const web = freshWeb({ hosts, epoch: 0 });
    for (const page of web.layout.pages.filter((p) => p.changeClass === 'cosmetic')) {
      const ticks = [0, 1, 2, 3].map((i) => web.htmlAt(page, i * web.layout.cosmeticSec, 80));
      for (let i = 1; i < ticks.length; i++) {
        assert.notEqual(ticks[i], ticks[0]);
        assert.ok(distance(ticks[0]!, ticks[i]!) <= 3, `${page.host}${page.path} tick ${i}`);
      }
    }
    for (const page of web.layout.pages.filter((p) => p.changeClass === 'fast')) {
      const v1 = web.htmlAt(page, page.phaseSec + page.periodSec, 80);
      const v2 = web.htmlAt(page, page.phaseSec + 2 * page.periodSec, 80);
      assert.ok(distance(v1, v2) > 3, `${page.host}${page.path}`);
    }
  }
});

test('equal seeds give equal schedules, and every class, validator kind and sitemap child is present', () => {
  const a = freshWeb({ seed: 7, epoch: 0 }).layout;
  const b = freshWeb({ seed: 7, epoch: 0 }).layout;
  assert.deepEqual(a, b);
  assert.notDeepEqual(a.pages, freshWeb({ seed: 8, epoch: 0 }).layout.pages);
  for (const cls of ['fast', 'slow', 'never', 'cosmetic']) assert.ok(a.pages.some((p) => p.changeClass === cls));
  for (const v of ['both', 'etag', 'last-modified', 'none']) assert.ok(a.pages.some((p) => p.validators === v));
  for (const c of ['xml', 'gz', 'txt']) assert.ok(a.pages.some((p) => p.reach === 'sitemap' && p.sitemap === c));
  for (const p of a.pages.filter((p) => p.changeClass === 'fast')) assert.ok(p.periodSec >= 15 && p.periodSec <= 30);
});

test('a bursty page serves a new version, ETag and Last-Modified at each change of a burst, and 304s between bursts', async () => {
  // seed 6 gives the bursty page phase 10: bursts at 60, 65, 70; 110, 115, 120
  const web = freshWeb({
    seed: 6,
    hosts: 1,
    perHost: { fast: 0, slow: 0, never: 0, cosmetic: 0, bursty: 1 },
    sitemapOnly: 0,
    burstySec: [50, 50],
    burstChanges: 3,
    burstGapSec: 5,
  });
  const page = web.layout.pages.find((p) => p.changeClass === 'bursty')!;
  assert.equal(page.phaseSec, 10);
  const server = await SyntheticWeb.start({ sites: web.sites });
  try {
    const etags: string[] = [];
    for (const [t, since] of [
      [58, 0],
      [61, 60],
      [66, 65],
      [71, 70],
    ] as const) {
      at(web, t);
      const reply = await get(server, page.host, page.path, etags.length > 0 ? { 'if-none-match': etags.at(-1)! } : {});
      assert.equal(reply.status, 200, `at ${t} s`);
      assert.equal(reply.headers['last-modified'], new Date(web.epoch + since * 1000).toUTCString());
      etags.push(reply.headers.etag!);
    }
    assert.equal(new Set(etags).size, 4);
    at(web, 105);
    assert.equal((await get(server, page.host, page.path, { 'if-none-match': etags.at(-1)! })).status, 304);
    at(web, 111);
    assert.equal((await get(server, page.host, page.path, { 'if-none-match': etags.at(-1)! })).status, 200);
  } finally {
    await server.close();
  }
});
