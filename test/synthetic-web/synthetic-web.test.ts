import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { gunzipSync } from 'node:zlib';
import robotsParserModule from 'robots-parser';
import { calendarTrapSite, standardExpectations, standardWeb } from '../../synthetic-web/sites.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { readRequestLog } from '../../synthetic-web/request-log.js';
import { makeTestCertificates } from '../../synthetic-web/tls.js';

const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default;

interface Fetched {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  reusedSocket: boolean;
}

/** GET (or `method`) `path` from the server at 127.0.0.1 with `Host: host:port`. */
function get(
  web: SyntheticWeb,
  host: string,
  path = '/',
  init: { headers?: Record<string, string>; agent?: Agent; method?: string } = {},
): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: web.port,
        path,
        method: init.method ?? 'GET',
        agent: init.agent ?? false,
        headers: { host: `${host}:${web.port}`, ...init.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            reusedSocket: req.reusedSocket,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

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
  test("a request that waited for the web's stalled loop is stamped late, and its startSlack covers the wait", async () => {
    const web = await SyntheticWeb.start({
      sites: [{ host: 'stalled.test', pages: { '/': { title: 't', links: [] } } }],
    });
    try {
      // the loop turns a few times first, as it does in every crawl
      await new Promise((resolve) => setTimeout(resolve, 20));
      const socket = connect(web.port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      const answered = new Promise((resolve) => socket.once('data', resolve));
      socket.write('GET / HTTP/1.1\r\nHost: stalled.test\r\nConnection: close\r\n\r\n');
      // the request is on the server's socket now; this process (the web's too) stalls 80 ms
      const sentAt = performance.timeOrigin + performance.now();
      const until = performance.now() + 80;
      while (performance.now() < until);
      await answered;
      socket.destroy();
      const [entry] = web.requests();
      assert.ok(entry!.start - sentAt >= 80, `stamped ${entry!.start - sentAt} ms after the send`);
      // the turn before the stamp came right after the stall: only the one before that tells
      assert.ok(
        entry!.startSlack! >= entry!.start - sentAt,
        `startSlack ${entry!.startSlack} ms, but the stamp was ${(entry!.start - sentAt).toFixed(1)} ms late`,
      );
    } finally {
      await web.close();
    }
  });

  test("a request written with its connection's connect while the web stalls: startSlack covers the turn its accept took", async () => {
    // the judge's ip-gap verdicts on the Kafka real-pages bench (pairs 13–65 ms apart, each first a
    // robots.txt on a new http connection, stamped after a stall with startSlack ~20 ms) came from
    // such requests: accepted in one turn, read only in the next, so late by a turn more than the
    // stamp's own turns tell
    const web = await SyntheticWeb.start({
      sites: [{ host: 'fresh.test', pages: { '/': { title: 't', links: [] } } }],
    });
    // the client has a loop of its own, as a crawler does: it connects and writes mid-stall, and
    // says so in shared memory, which the stalled loop here can read
    const written = new Int32Array(new SharedArrayBuffer(4));
    const client = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       const { connect } = require('node:net');
       parentPort.once('message', () => {
         const socket = connect(workerData.port, '127.0.0.1', () => {
           socket.write('GET / HTTP/1.1\\r\\nHost: fresh.test\\r\\nConnection: close\\r\\n\\r\\n');
           parentPort.postMessage(performance.timeOrigin + performance.now());
           Atomics.store(workerData.written, 0, 1);
         });
         socket.on('data', () => undefined);
         socket.on('close', () => parentPort.close());
       });`,
      { eval: true, workerData: { port: web.port, written } },
    );
    try {
      const sent = new Promise<number>((resolve) => client.once('message', resolve));
      await new Promise((resolve) => setTimeout(resolve, 20));
      client.postMessage('go');
      // stall until the request is written (however long the client takes on a loaded machine), then 60 ms more
      const giveUp = performance.now() + 10_000;
      while (Atomics.load(written, 0) === 0 && performance.now() < giveUp);
      const until = performance.now() + 60;
      while (performance.now() < until);
      assert.equal(Atomics.load(written, 0), 1, 'the client did not write within 10 s');
      const sentAt = await sent;
      while (web.requests().length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      const [entry] = web.requests();
      assert.ok(entry!.start - sentAt >= 50, `stamped only ${(entry!.start - sentAt).toFixed(1)} ms after the send`);
      assert.ok(
        entry!.startSlack! >= entry!.start - sentAt,
        `startSlack ${entry!.startSlack} ms, but the stamp was ${(entry!.start - sentAt).toFixed(1)} ms late`,
      );
    } finally {
      await client.terminate();
      await web.close();
    }
  });

  test("a response's end is when its bytes went to the socket, not when the busy server got round to noticing, over http and https, short and 24 KiB", async () => {
    // on a loaded machine the client, woken by the write, can run for tens of ms before the server's
    // 'finish' callback does; logged then, a polite 1 s gap looked 1.2 ms short (a judge
    // violation in one of ten npm test runs under load). Here 80 ms of work queued before the
    // write delays that callback the same way. Over https the write goes through TLS first; a
    // 24 KiB reply spans two TLS records, which the TLS socket reports done only after the busy
    // spell, though the client has them (a real-pages Kafka run judged a polite gap 8.4 ms short so).
    const busy = (ms: number): void => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    const dir = mkdtempSync(join(tmpdir(), 'crawlstream-end-at-write-'));
    const certs = makeTestCertificates(dir, ['quick.test']);
    const web = await SyntheticWeb.start({
      sites: [
        {
          host: 'quick.test',
          pages: {},
          respond: (req) => {
            process.nextTick(() => busy(80));
            const body = req.path === '/big' ? 'x'.repeat(24 * 1024) : 'ok';
            return { status: 200, headers: { 'content-type': 'text/plain' }, body };
          },
        },
      ],
      tls: certs,
    });
    try {
      const overHttps = (path: string) =>
        new Promise<number>((resolve, reject) => {
          const req = httpsRequest(
            {
              host: '127.0.0.1',
              port: web.httpsPort,
              path,
              servername: 'quick.test',
              headers: { host: 'quick.test' },
              ca: certs.caPem,
              agent: false,
            },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode!));
            },
          );
          req.on('error', reject);
          req.end();
        });
      for (const path of ['/', '/big']) {
        assert.equal((await get(web, 'quick.test', path)).status, 200);
        assert.equal(await overHttps(path), 200);
      }
      const entries = web.requests();
      assert.deepEqual(
        entries.map((e) => `${e.scheme} ${e.path} ${e.bytes}`),
        ['http / 2', 'https / 2', 'http /big 24576', 'https /big 24576'],
      );
      for (const entry of entries)
        assert.ok(
          entry.end - entry.start < 40,
          `${entry.scheme} ${entry.path}: logged ${(entry.end - entry.start).toFixed(1)} ms for an immediate reply`,
        );
    } finally {
      await web.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

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
