import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import robotsParserModule from 'robots-parser';
import { calendarTrapSite, standardExpectations, standardWeb } from '../../synthetic-web/standard-web.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { readRequestLog } from '../../synthetic-web/request-log.js';
import { get } from './web-client.js';

const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default;

const hrefs = (html: string): string[] => [...html.matchAll(/<a\s[^>]*href="([^"]*)"/g)].map((m) => m[1]!);

describe('synthetic web server', () => {
  let web: SyntheticWeb;
  before(async () => {
    web = await SyntheticWeb.start();
  });
  after(() => web.close());

  test('every request is logged with host, method, path, times, status, bytes and user agent', async () => {
    const before = web.requests().length;
    const t0 = performance.timeOrigin + performance.now();
    const page = await get(web, 'beta.test', '/one.html?x=1', { headers: { 'user-agent': 'crawlstream-test/1.0' } });
    await get(web, 'beta.test', '/missing.html', { method: 'HEAD' });
    const t1 = performance.timeOrigin + performance.now();
    const [first, second] = web.requests().slice(before);
    assert.ok(first && second);
    assert.deepEqual(
      {
        host: first.host,
        method: first.method,
        path: first.path,
        status: first.status,
        bytes: first.bytes,
        userAgent: first.userAgent,
      },
      {
        host: 'beta.test',
        method: 'GET',
        path: '/one.html?x=1',
        status: 200,
        bytes: page.body.length,
        userAgent: 'crawlstream-test/1.0',
      },
    );
    assert.ok(t0 <= first.start && first.start <= first.end && first.end <= t1);
    assert.deepEqual([second.method, second.path, second.status, second.bytes], ['HEAD', '/missing.html', 404, 0]);
    assert.equal(second.seq, first.seq + 1);
    assert.equal(first.aborted, undefined);
  });

  test('virtual hosts answer by Host header, case-insensitively and without the port', async () => {
    const alpha = await get(web, 'WWW.Alpha.TEST', '/a.html');
    const beta = await get(web, 'beta.test', '/');
    assert.match(alpha.body.toString(), /<title>Alpha A<\/title>/);
    assert.match(beta.body.toString(), /<title>beta\.test \/<\/title>/);
    assert.equal(web.requests().at(-2)?.host, 'www.alpha.test');
  });

  test('an unknown host answers 404 and is logged', async () => {
    const res = await get(web, 'nowhere.test', '/robots.txt');
    assert.equal(res.status, 404);
    assert.deepEqual(
      web
        .requests()
        .filter((e) => e.host === 'nowhere.test')
        .map((e) => [e.path, e.status]),
      [['/robots.txt', 404]],
    );
  });

  test('links carry the server port, including the uppercase-host link', async () => {
    const links = hrefs((await get(web, 'www.alpha.test')).body.toString());
    assert.ok(links.includes(`HTTP://WWW.ALPHA.TEST:${web.port}/a.html`));
    assert.ok(links.includes(`http://blog.alpha.test:${web.port}/`));
    assert.ok(!links.some((l) => l.includes('{{PORT}}')));
  });

  test('mirror.test pages are byte-identical to www.alpha.test pages', async () => {
    assert.deepEqual((await get(web, 'mirror.test', '/')).body, (await get(web, 'www.alpha.test', '/a.html')).body);
    assert.deepEqual(
      (await get(web, 'mirror.test', '/c.html')).body,
      (await get(web, 'www.alpha.test', '/c.html')).body,
    );
  });

  test('news.test serves one article whose timestamp line changes with every response', async () => {
    const [a, b] = [
      (await get(web, 'news.test', '/')).body.toString(),
      (await get(web, 'news.test', '/story.html')).body.toString(),
    ];
    assert.notEqual(a, b);
    const strip = (s: string): string => s.replace(/<p class="updated">.*<\/p>/, '');
    assert.equal(strip(a), strip(b));
  });

  test('down.test robots.txt answers 503 every time', async () => {
    assert.equal((await get(web, 'down.test', '/robots.txt')).status, 503);
    assert.equal((await get(web, 'down.test', '/robots.txt')).status, 503);
  });

  test('the gzip page is gzip-encoded only when the request accepts gzip', async () => {
    const plain = await get(web, 'files.test', '/compressed.html');
    const zipped = await get(web, 'files.test', '/compressed.html', {
      headers: { 'accept-encoding': 'br, gzip;q=0.8' },
    });
    const refused = await get(web, 'files.test', '/compressed.html', {
      headers: { 'accept-encoding': 'gzip;q=0, deflate' },
    });
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(refused.headers['content-encoding'], undefined);
    assert.equal(zipped.headers['content-encoding'], 'gzip');
    assert.deepEqual(gunzipSync(zipped.body), plain.body);
    assert.equal(web.requests().at(-2)?.bytes, zipped.body.length);
  });

  test('files.test serves a PDF and a PNG with their content types', async () => {
    const pdf = await get(web, 'files.test', '/doc.pdf');
    const png = await get(web, 'files.test', '/image.png');
    assert.equal(pdf.headers['content-type'], 'application/pdf');
    assert.equal(pdf.body.subarray(0, 5).toString(), '%PDF-');
    assert.equal(png.headers['content-type'], 'image/png');
    assert.deepEqual([...png.body.subarray(1, 4)], [...Buffer.from('PNG')]);
  });

  test('slow.test waits 200 ms before page headers but serves robots.txt at once', async () => {
    // asked together, robots.txt is answered while the page still waits out its delay
    await Promise.all([get(web, 'slow.test', '/s1.html'), get(web, 'slow.test', '/robots.txt')]);
    const robots = web.requests().findLast((e) => e.host === 'slow.test' && e.path === '/robots.txt');
    const page = web.requests().findLast((e) => e.host === 'slow.test' && e.path === '/s1.html');
    assert.ok(robots && page);
    assert.ok(robots.end < page.end, 'robots.txt waited for the page delay');
    assert.ok(page.end - page.start >= 195, `page took ${page.end - page.start} ms`);
  });

  test('redirect.test answers /old with 301 to /new and bounces between /loop1 and /loop2', async () => {
    const old = await get(web, 'redirect.test', '/old');
    assert.deepEqual([old.status, old.headers.location], [301, `http://redirect.test:${web.port}/new`]);
    assert.deepEqual(
      [
        (await get(web, 'redirect.test', '/loop1')).headers.location,
        (await get(web, 'redirect.test', '/loop2')).headers.location,
      ],
      ['/loop2', '/loop1'],
    );
    assert.equal((await get(web, 'redirect.test', '/new')).status, 200);
  });

  test('trap pages keep linking deeper, longer and under fresh session ids', async () => {
    const home = hrefs((await get(web, 'trap.test')).body.toString());
    assert.ok(home.some((l) => l.length > 2000));
    assert.deepEqual(hrefs((await get(web, 'trap.test', '/a/a/a/a/')).body.toString()), ['a/']);
    assert.deepEqual(
      hrefs((await get(web, 'trap.test', '/deep/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/')).body.toString()),
      ['17/'],
    );
    const sids = [await get(web, 'trap.test', '/shop.html?sid=x'), await get(web, 'trap.test', '/shop.html?sid=y')].map(
      (r) => hrefs(r.body.toString())[0],
    );
    assert.match(sids[0]!, /^\/shop\.html\?sid=\w+$/);
    assert.notEqual(sids[0], sids[1]);
    assert.match(
      hrefs((await get(web, 'trap.test', '/cart.html;jsessionid=ABC')).body.toString())[0]!,
      /^cart\.html;jsessionid=\w+$/,
    );
  });

  test('one keep-alive connection serves consecutive requests to a host', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await get(web, 'gamma.test', '/robots.txt', { agent });
      const second = await get(web, 'gamma.test', '/', { agent });
      assert.deepEqual([first.reusedSocket, second.reusedSocket], [false, true]);
    } finally {
      agent.destroy();
    }
  });
});

describe('synthetic web server lifecycle', () => {
  test('busy.test answers its first two page requests 429 with Retry-After 2, then 200', async () => {
    const web = await SyntheticWeb.start();
    try {
      const statuses = [];
      for (const path of ['/robots.txt', '/', '/b1.html', '/', '/b1.html'])
        statuses.push((await get(web, 'busy.test', path)).status);
      assert.deepEqual(statuses, [200, 429, 429, 200, 200]);
      assert.deepEqual(
        web.requests().map((e) => e.retryAfterSec),
        [undefined, 2, 2, undefined, undefined],
      );
    } finally {
      await web.close();
    }
  });

  test(
    'close() ends an idle keep-alive socket itself: it waits neither for the keep-alive timeout nor for its force timer',
    { timeout: 10_000 }, // the keep-alive timeout is 15 s: waiting for it fails the test
    async (t) => {
      const web = await SyntheticWeb.start();
      const agent = new Agent({ keepAlive: true });
      await get(web, 'beta.test', '/', { agent });
      assert.equal(Object.values(agent.freeSockets).flat().length, 1, 'the keep-alive socket is idle in the agent');
      // the force timer (closeAllConnections after 1 s) never fires under mocked setTimeout
      t.mock.timers.enable({ apis: ['setTimeout'] });
      await web.close();
      t.mock.timers.reset();
      agent.destroy();
    },
  );

  test('the log file holds one JSON line per finished request, matching requests()', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'synthetic-web-'));
    try {
      const logFile = join(dir, 'requests.jsonl');
      const web = await SyntheticWeb.start({ logFile });
      await get(web, 'beta.test', '/robots.txt');
      await get(web, 'unknown.test', '/');
      await web.close();
      assert.deepEqual(readRequestLog(logFile), web.requests());
      assert.equal(readRequestLog(logFile).length, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('start() rejects a port out of range and a host outside .test', async () => {
    await assert.rejects(SyntheticWeb.start({ port: 70000 }), { code: 'CS_INVALID_OPTION' });
    await assert.rejects(SyntheticWeb.start({ sites: [{ host: 'example.com', pages: {} }] }), {
      code: 'CS_INVALID_OPTION',
    });
  });

  test('the calendar trap links the next month forever', async () => {
    const web = await SyntheticWeb.start({ sites: [calendarTrapSite()] });
    try {
      assert.deepEqual(hrefs((await get(web, 'calendar.test', '/cal/2026-12')).body.toString()), ['/cal/2027-01']);
      assert.deepEqual(hrefs((await get(web, 'calendar.test', '/cal/2999-01')).body.toString()), ['/cal/2999-02']);
    } finally {
      await web.close();
    }
  });
});

/**
 * A reference crawl, ignoring timing: robots.txt honoured (5xx = disallow all), rel=nofollow not
 * followed, session ids stripped, traps cut. Returns `host path` of every request it made.
 */
async function referenceCrawl(
  web: SyntheticWeb,
): Promise<{ fetched: Set<string>; nofollow: Set<string>; foreign: string[] }> {
  const fetched = new Set<string>();
  const nofollow = new Set<string>();
  const foreign: string[] = [];
  const robots = new Map<string, (url: string) => boolean>();
  const seen = new Set<string>();
  const queue = web.seedUrls();
  const admit = (raw: string, base: string, follow: boolean): void => {
    let url: URL;
    try {
      url = new URL(raw.trim(), base);
    } catch {
      return;
    }
    if (url.protocol !== 'http:') return;
    if (!url.hostname.endsWith('.test')) {
      foreign.push(url.href);
      return;
    }
    url.hash = '';
    url.searchParams.delete('sid');
    url.pathname = url.pathname.replace(/;jsessionid=[^/]*/i, '');
    const segments = url.pathname.split('/').filter(Boolean);
    const repeated = segments.some((s) => segments.filter((t) => t === s).length >= 3);
    if (url.href.length > 2000 || segments.length > 15 || repeated) return;
    if (!follow) nofollow.add(`${url.hostname} ${url.pathname}${url.search}`);
    else if (!seen.has(url.href)) {
      seen.add(url.href);
      queue.push(url.href);
    }
  };
  for (const url of queue) seen.add(url);
  while (queue.length > 0) {
    const url = new URL(queue.shift()!);
    if (!robots.has(url.hostname)) {
      const res = await get(web, url.hostname, '/robots.txt');
      fetched.add(`${url.hostname} /robots.txt`);
      const parsed = robotsParser(`${url.origin}/robots.txt`, res.body.toString());
      robots.set(
        url.hostname,
        res.status >= 500 ? () => false : res.status >= 400 ? () => true : (u) => parsed.isAllowed(u) !== false,
      );
    }
    if (!robots.get(url.hostname)!(url.href)) continue;
    let res = await get(web, url.hostname, url.pathname + url.search);
    for (let i = 0; i < 3 && res.status === 429; i++) res = await get(web, url.hostname, url.pathname + url.search);
    fetched.add(`${url.hostname} ${url.pathname}${url.search}`);
    if (res.headers.location !== undefined) admit(res.headers.location, url.href, true);
    if (!String(res.headers['content-type']).startsWith('text/html')) continue;
    const html = res.body.toString();
    const base = /<base\s+href="([^"]*)"/.exec(html)?.[1];
    for (const m of html.matchAll(/<a\s([^>]*)>/g)) {
      const href = /href="([^"]*)"/.exec(m[1]!)?.[1];
      if (href !== undefined) admit(href, new URL(base ?? url.href, url.href).href, !/rel="nofollow"/.test(m[1]!));
    }
  }
  return { fetched, nofollow, foreign };
}

describe('the standard web', () => {
  test('a reference crawl fetches exactly the expected URLs, and links only to .test hosts', async () => {
    const web = await SyntheticWeb.start();
    try {
      const { fetched, nofollow, foreign } = await referenceCrawl(web);
      const expectations = standardExpectations();
      const expected = new Set(Object.entries(expectations).flatMap(([host, e]) => e.fetch.map((p) => `${host} ${p}`)));
      assert.deepEqual([...fetched].sort(), [...expected].sort());
      assert.deepEqual([...nofollow], ['blog.alpha.test /nofollow.html']);
      assert.deepEqual(foreign, []);
      for (const [host, e] of Object.entries(expectations)) {
        assert.ok(e.fetch.length <= 9, `${host} needs ${e.fetch.length} requests`);
        for (const path of e.never.filter((p) => !p.endsWith('*'))) {
          assert.ok(!fetched.has(`${host} ${path}`));
        }
      }
      assert.deepEqual(new Set(standardWeb().map((s) => s.host)), new Set(Object.keys(expectations)));
    } finally {
      await web.close();
    }
  });

  test('pages a correct crawl must skip exist, so fetching one shows in the log', async () => {
    const web = await SyntheticWeb.start();
    try {
      for (const [host, path] of [
        ['www.alpha.test', '/private/secret.html'],
        ['blog.alpha.test', '/private/draft.html'],
        ['down.test', '/'],
      ] as const) {
        assert.equal((await get(web, host, path)).status, 200, `${host}${path}`);
      }
    } finally {
      await web.close();
    }
  });
});
