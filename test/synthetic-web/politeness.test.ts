import assert from 'node:assert/strict';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { checkPoliteness, formatPolitenessReport, type PolitenessReport } from '../../synthetic-web/politeness.js';
import { type SiteSpec } from '../../synthetic-web/sites.js';
import { standardWeb } from '../../synthetic-web/standard-web.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';

const T = 1_700_000_000_000;
const sites = standardWeb();

type Row = [host: string, path: string, start: number, end: number, extra?: Partial<RequestLogEntry>];

/** A log from rows of times relative to T; seq follows start order, as on a real server. */
function logOf(rows: Row[]): RequestLogEntry[] {
  return rows
    .slice()
    .sort((a, b) => a[2] - b[2])
    .map(([host, path, start, end, extra], i) => ({
      seq: i + 1,
      host,
      method: 'GET',
      path,
      start: T + start,
      end: T + end,
      status: 200,
      bytes: 100,
      ...extra,
    }));
}

/** A crawl that keeps every rule: 1 s gaps, Crawl-delay 2 on gamma, 10× a 200 ms fetch on slow, Retry-After on busy. */
const politeRows: Row[] = [
  ['www.alpha.test', '/robots.txt', 0, 10],
  ['www.alpha.test', '/', 1010, 1030],
  ['www.alpha.test', '/a.html', 2030, 2040],
  ['gamma.test', '/robots.txt', 0, 5],
  ['gamma.test', '/', 2005, 2015],
  ['gamma.test', '/g1.html', 4015, 4020],
  ['slow.test', '/robots.txt', 0, 5],
  ['slow.test', '/', 1005, 1205],
  ['slow.test', '/s1.html', 3205, 3405],
  ['busy.test', '/robots.txt', 0, 5],
  ['busy.test', '/', 1005, 1010, { status: 429, retryAfterSec: 2 }],
  ['busy.test', '/', 3010, 3015],
  ['down.test', '/robots.txt', 0, 5, { status: 503 }],
  ['down.test', '/robots.txt', 60_005, 60_010, { status: 503 }],
  ['nowhere.test', '/robots.txt', 0, 2, { status: 404 }],
];

/** The polite crawl with the row at `host path` replaced (or added when absent). */
function withRow(row: Row): RequestLogEntry[] {
  const [host, path] = row;
  const i = politeRows.findIndex((r) => r[0] === host && r[1] === path && r[4]?.status !== 429);
  const rows = politeRows.slice();
  if (i >= 0) rows[i] = row;
  else rows.push(row);
  return logOf(rows);
}

function found(report: PolitenessReport): Array<[string, string, string]> {
  return report.violations.map((v) => [v.kind, v.host, v.detail.split(' ')[0] ?? '']);
}

function onlyViolation(log: RequestLogEntry[], kind: string, host: string, path: string, options = {}): void {
  const report = checkPoliteness(log, sites, options);
  const culprit = log.find((e) => e.host === host && e.path === path && e.status !== 429);
  assert.deepEqual(
    report.violations.map((v) => [v.kind, v.host, v.seq]),
    [[kind, host, culprit?.seq]],
    formatPolitenessReport(report),
  );
}

describe('politeness checker on hand-built logs', () => {
  test('a crawl that keeps every rule, with gaps exactly at the limits, has no violations', () => {
    const report = checkPoliteness(logOf(politeRows), sites);
    assert.deepEqual(found(report), []);
    assert.equal(report.requests, politeRows.length);
    assert.equal(report.hosts, 6);
    assert.deepEqual(report.perHost['www.alpha.test'], { requests: 3, minGapMs: 1000 });
    assert.deepEqual(report.perHost['nowhere.test'], { requests: 1, minGapMs: null });
  });

  test('a request starting before the previous one to its host ended is an overlap, not also a gap', () => {
    onlyViolation(withRow(['www.alpha.test', '/a.html', 1020, 1040]), 'overlap', 'www.alpha.test', '/a.html');
  });

  test('a request 1 ms short of the 1 s gap is a gap violation', () => {
    onlyViolation(withRow(['www.alpha.test', '/a.html', 2029, 2040]), 'gap', 'www.alpha.test', '/a.html');
  });

  test('a Crawl-delay of 2 s raises the gap above the 1 s floor', () => {
    onlyViolation(withRow(['gamma.test', '/', 1505, 1515]), 'gap', 'gamma.test', '/');
  });

  test('after a 200 ms fetch the gap must be 10 times that', () => {
    onlyViolation(withRow(['slow.test', '/s1.html', 3204, 3404]), 'gap', 'slow.test', '/s1.html');
  });

  test('minGapMs and slowFactor options change the required gap', () => {
    const log = withRow(['www.alpha.test', '/a.html', 1530, 1540]);
    assert.equal(checkPoliteness(log, sites).violations.length, 1);
    assert.deepEqual(checkPoliteness(log, sites, { minGapMs: 500 }).violations, []);
    assert.equal(checkPoliteness(logOf(politeRows), sites, { slowFactor: 11 }).violations[0]?.kind, 'gap');
  });

  test('a host whose first request is not robots.txt is flagged robots-not-first', () => {
    onlyViolation(withRow(['beta.test', '/', 0, 5]), 'robots-not-first', 'beta.test', '/');
  });

  test('a robots.txt-disallowed path that was requested is flagged', () => {
    onlyViolation(
      withRow(['www.alpha.test', '/private/secret.html', 5000, 5010]),
      'disallowed-fetched',
      'www.alpha.test',
      '/private/secret.html',
    );
  });

  test('robots.txt groups are matched against the given user agent', () => {
    const host = 'agents.test';
    const site: SiteSpec = {
      host,
      pages: {},
      robots: { status: 200, body: 'User-agent: crawlstream\nDisallow: /x/\n\nUser-agent: *\nDisallow:\n' },
    };
    const log = logOf([
      [host, '/robots.txt', 0, 5],
      [host, '/x/1.html', 1005, 1010],
    ]);
    assert.deepEqual(checkPoliteness(log, [site]).violations, []);
    assert.deepEqual(
      checkPoliteness(log, [site], { userAgent: 'crawlstream' }).violations.map((v) => v.kind),
      ['disallowed-fetched'],
    );
  });

  test('a request before Retry-After has passed is flagged retry-after, even when the 1 s gap is kept', () => {
    onlyViolation(withRow(['busy.test', '/', 2500, 2505]), 'retry-after', 'busy.test', '/');
  });

  test('any page request to a host whose robots.txt answers 5xx is flagged', () => {
    onlyViolation(withRow(['down.test', '/', 2005, 2010]), 'robots-unavailable-fetched', 'down.test', '/');
  });

  test('the checker uses start order, not log order', () => {
    assert.deepEqual(found(checkPoliteness(logOf(politeRows).reverse(), sites)), []);
  });

  test('the report has a line per host and a verdict', () => {
    const clean = formatPolitenessReport(checkPoliteness(logOf(politeRows), sites));
    assert.match(clean, /^politeness: 15 requests to 6 hosts$/m);
    assert.match(clean, /^ {2}gamma\.test +3 requests {2}min gap 2000 ms {2}ok$/m);
    assert.match(clean, /^verdict: POLITE/m);
    const dirty = formatPolitenessReport(checkPoliteness(withRow(['www.alpha.test', '/a.html', 1020, 1040]), sites));
    assert.match(dirty, /^verdict: IMPOLITE \(1 violations: overlap 1\)$/m);
    assert.match(dirty, /^ {2}overlap www\.alpha\.test #\d+: /m);
  });
});

function get(web: SyntheticWeb, host: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: web.port, path, agent: false, headers: { host: `${host}:${web.port}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('politeness checker on a live server log', () => {
  test('a client that waits between requests is judged polite; one that rushes is not', async () => {
    const web = await SyntheticWeb.start();
    try {
      // a polite client: waits max(min gap, 10 × the last fetch's duration), with a margin (the gap counts from the server's end)
      for (const path of ['/robots.txt', '/', '/one.html']) {
        const started = Date.now();
        await get(web, 'beta.test', path);
        await sleep(Math.max(150, 12 * (Date.now() - started) + 20));
      }
      const gentle = checkPoliteness(web.requests(), web.sites, { minGapMs: 100 });
      assert.deepEqual(gentle.violations, [], formatPolitenessReport(gentle));

      await get(web, 'beta.test', '/two.html');
      await get(web, 'beta.test', '/three.html');
      await get(web, 'slow.test', '/robots.txt');
      await Promise.all([get(web, 'slow.test', '/s1.html'), get(web, 'slow.test', '/s2.html')]); // both wait 200 ms before headers
      const rushed = checkPoliteness(web.requests(), web.sites, { minGapMs: 100 });
      const kinds = rushed.violations.map((v) => `${v.kind} ${v.host}`);
      assert.ok(kinds.includes('gap beta.test'), formatPolitenessReport(rushed));
      assert.ok(kinds.includes('overlap slow.test'), formatPolitenessReport(rushed));
    } finally {
      await web.close();
    }
  });
});
