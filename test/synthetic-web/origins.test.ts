import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkPoliteness } from '../../synthetic-web/politeness.js';
import { originRobots } from '../../synthetic-web/origins.js';
import { originsWeb } from '../../synthetic-web/origins-web.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';
import { makeTestCertificates } from '../../synthetic-web/tls.js';

const T = 1_700_000_000_000;
const sites = originsWeb();
const site = (host: string) => sites.find((s) => s.host === host)!;

/** A log of [scheme, host, path] requests, each 10 ms long and 1.1 s after the previous one. */
function logOf(rows: [scheme: 'http' | 'https', host: string, path: string][]): RequestLogEntry[] {
  return rows.map(([scheme, host, path], i) => ({
    seq: i + 1,
    scheme,
    host,
    method: 'GET',
    path,
    start: T + i * 1_100,
    end: T + i * 1_100 + 10,
    status: 200,
    bytes: 10,
  }));
}

const kinds = (log: RequestLogEntry[]) => checkPoliteness(log, sites).violations.map((v) => `${v.kind} #${v.seq}`);

test('an http origin that redirects to https takes its robots.txt rules from where it redirects', () => {
  const http = originRobots(site('secure.test'), 'http');
  assert.equal(http.rules.kind, 'rules');
  assert.deepEqual(http.chain, [
    { scheme: 'http', host: 'secure.test', path: '/robots.txt' },
    { scheme: 'https', host: 'secure.test', path: '/robots.txt' },
  ]);
});

test('robots.txt after five redirects has rules; after six, or in a loop, it is unavailable', () => {
  assert.equal(originRobots(site('hops5.test'), 'http').rules.kind, 'rules');
  assert.equal(originRobots(site('hops5.test'), 'http').chain.length, 6);
  assert.equal(originRobots(site('hops6.test'), 'http').rules.kind, 'unavailable');
  assert.equal(originRobots(site('loop.test'), 'http').rules.kind, 'unavailable');
});

test('robots first is per origin: the https origin needs its own robots.txt before its pages', () => {
  assert.deepEqual(
    kinds(
      logOf([
        ['http', 'secure.test', '/robots.txt'],
        ['http', 'secure.test', '/'],
        ['https', 'secure.test', '/'],
      ]),
    ),
    ['robots-not-first #3'],
  );
  assert.deepEqual(
    kinds(
      logOf([
        ['http', 'secure.test', '/robots.txt'],
        ['https', 'secure.test', '/robots.txt'],
        ['http', 'secure.test', '/'],
        ['https', 'secure.test', '/'],
      ]),
    ),
    [],
  );
});

test("a path is judged by its own origin's robots.txt, redirects followed", () => {
  assert.deepEqual(
    kinds(
      logOf([
        ['http', 'secure.test', '/robots.txt'],
        ['https', 'secure.test', '/robots.txt'],
        ['https', 'secure.test', '/private/a.html'],
        // the http robots.txt redirects to the https one, whose rules then apply to http too
        ['http', 'secure.test', '/private/b.html'],
        ['http', 'hops5.test', '/robots.txt'],
        ...[1, 2, 3, 4, 5].map((i) => ['http', 'hops5.test', `/robots/step-${i}.txt`] as ['http', string, string]),
        ['http', 'hops5.test', '/secret/a.html'],
      ]),
    ),
    ['disallowed-fetched #3', 'disallowed-fetched #4', 'disallowed-fetched #11'],
  );
});

test('the hops of a robots.txt chain are robots requests; anything else of an unavailable origin is a violation', () => {
  const hops = [1, 2, 3, 4, 5].map((i) => ['http', 'hops6.test', `/robots/step-${i}.txt`] as ['http', string, string]);
  assert.deepEqual(kinds(logOf([['http', 'hops6.test', '/robots.txt'], ...hops])), []);
  assert.deepEqual(kinds(logOf([['http', 'hops6.test', '/robots.txt'], ...hops, ['http', 'hops6.test', '/']])), [
    'robots-unavailable-fetched #7',
  ]);
});

test('timing stays per host across its origins', () => {
  const log = logOf([
    ['http', 'secure.test', '/robots.txt'],
    ['https', 'secure.test', '/robots.txt'],
  ]);
  log[1]!.start = log[0]!.end + 200;
  assert.deepEqual(kinds(log), ['gap #2']);
});

// a site of another shape than the test web's: an https robots.txt that redirects to http
test('an https robots.txt redirected to http on the same host takes the http rules', () => {
  const spec: SiteSpec = {
    host: 'down.test',
    robots: { status: 200, body: 'User-agent: *\nDisallow: /old/\n' },
    origins: { httpsRobots: { status: 308, body: '', location: 'http://down.test/robots.txt' } },
    pages: {},
  };
  const r = originRobots(spec, 'https');
  assert.equal(r.rules.kind, 'rules');
  const log = logOf([
    ['https', 'down.test', '/robots.txt'],
    ['http', 'down.test', '/robots.txt'],
    ['https', 'down.test', '/old/x'],
  ]);
  assert.deepEqual(
    checkPoliteness(log, [spec]).violations.map((v) => v.kind),
    ['disallowed-fetched'],
  );
});

test('a robots.txt redirect to another host is followed there; its request counts as a robots request of that host', () => {
  const shop = originRobots(site('shop.test'), 'http', sites);
  assert.equal(shop.rules.kind, 'rules');
  assert.deepEqual(shop.chain, [
    { scheme: 'http', host: 'shop.test', path: '/robots.txt' },
    { scheme: 'https', host: 'www.shop.test', path: '/robots.txt' },
  ]);
  assert.deepEqual(
    kinds(
      logOf([
        ['http', 'shop.test', '/robots.txt'],
        ['https', 'www.shop.test', '/robots.txt'],
        ['http', 'shop.test', '/item.html'],
        ['http', 'shop.test', '/cart/add.html'],
      ]),
    ),
    ['disallowed-fetched #4'],
  );
});

test('the test web serves the https origin and sends the whole http origin there, logging each scheme', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-origins-'));
  const certs = makeTestCertificates(dir, ['secure.test']);
  const web = await SyntheticWeb.start({ sites: [site('secure.test')], tls: certs });
  try {
    const get = (mod: typeof http | typeof https, port: number, path: string) =>
      new Promise<{ status: number; location?: string; body: string }>((resolve, reject) => {
        const req = mod.request(
          {
            host: '127.0.0.1',
            port,
            path,
            servername: 'secure.test',
            headers: { host: 'secure.test' },
            ca: certs.caPem,
          },
          (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, location: res.headers.location, body }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    const moved = await get(http, web.port, '/robots.txt?x=1');
    assert.equal(moved.status, 301);
    assert.equal(moved.location, web.httpsUrl('secure.test', '/robots.txt?x=1'));
    const robots = await get(https, web.httpsPort, '/robots.txt');
    assert.equal(robots.body, 'User-agent: *\nDisallow: /private/\n');
    assert.deepEqual(
      web.requests().map((e) => [e.scheme, e.path, e.status]),
      [
        ['http', '/robots.txt?x=1', 301],
        ['https', '/robots.txt', 200],
      ],
    );
  } finally {
    await web.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
