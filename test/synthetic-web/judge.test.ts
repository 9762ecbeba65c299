import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, test } from 'node:test';
import { RobotsCache } from '../../processors/frontier/politeness.js';
import {
  checkPoliteness,
  formatPolitenessReport,
  type PolitenessOptions,
  type ViolationKind,
} from '../../synthetic-web/politeness.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';

const T = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;
const AGENT = 'crawlstream';

// "crawlstream bot" is not a valid product token: RFC 9309 and Google's parser read it as the
// group of crawlstream, robots-parser (the crawler's) as nobody's
const A_ROBOTS =
  'User-agent: *\nDisallow: /private/\n\nUser-agent: crawlstream bot\nDisallow: /private/\nDisallow: /bots-only/\n';

const sites: SiteSpec[] = [
  { host: 'a.test', robots: { status: 200, body: A_ROBOTS }, pages: {} },
  { host: 'b.test', robots: { status: 200, body: 'User-agent: *\nDisallow:\n' }, pages: {} },
  { host: 'c.test', robots: { status: 200, body: 'User-agent: *\nDisallow:\n' }, pages: {} },
  { host: 'delay.test', robots: { status: 200, body: 'User-agent: *\nCrawl-delay: 3\n' }, pages: {} },
  { host: 'down.test', robots: { status: 503, body: 'down\n' }, pages: {} },
  { host: 'busy.test', robots: { status: 429, body: 'slow down\n' }, pages: {} },
  { host: 'sub.a.test', robots: { status: 200, body: 'User-agent: *\nDisallow:\n' }, pages: {} },
  {
    host: 'moved.test',
    robots: { status: 301, body: '', location: 'http://moved.test/real-robots.txt' },
    pages: { '/real-robots.txt': { contentType: 'text/plain', body: 'User-agent: *\nDisallow: /x/\n' } },
  },
];

type Row = [host: string, path: string, start: number, end: number, extra?: Partial<RequestLogEntry>];

/** A log of rows with times relative to T; seq in start order, as a server numbers them. */
function logOf(rows: Row[]): RequestLogEntry[] {
  return rows
    .slice()
    .sort((a, b) => a[2] - b[2])
    .map(([host, path, start, end, extra], i) => ({
      seq: i + 1,
      host,
      scheme: 'http' as const,
      method: 'GET',
      path,
      start: T + start,
      end: T + end,
      status: 200,
      bytes: 100,
      ...extra,
    }));
}

/** The kinds reported, with the host and path of each offending request. */
function judged(rows: Row[], options: PolitenessOptions = {}): string[] {
  const log = logOf(rows);
  const report = checkPoliteness(log, sites, { userAgent: AGENT, ...options });
  return report.violations.map((v) => {
    const e = log.find((x) => x.seq === v.seq)!;
    return `${v.kind} ${e.host}${e.path}`;
  });
}

/** Asserts the rows break exactly `kind`, once, at `host path` (the last row of that host and path). */
function caught(kind: ViolationKind, at: string, rows: Row[], options: PolitenessOptions = {}): void {
  const log = logOf(rows);
  const report = checkPoliteness(log, sites, { userAgent: AGENT, ...options });
  assert.deepEqual(judged(rows, options), [`${kind} ${at}`], formatPolitenessReport(report));
}

const robots = (host: string, start: number, extra?: Partial<RequestLogEntry>): Row => [
  host,
  '/robots.txt',
  start,
  start + 10,
  extra,
];

/** Keeps every rule: robots.txt first, 1 s gaps, 10× a 200 ms fetch, Crawl-delay 3, a refetch after a day. */
const clean: Row[] = [
  robots('a.test', 0),
  ['a.test', '/', 1010, 1030],
  ['a.test', '/slow.html', 2030, 2230],
  ['a.test', '/next.html', 4230, 4240],
  robots('a.test', DAY),
  ['a.test', '/tomorrow.html', DAY + 1010, DAY + 1020],
  robots('delay.test', 100),
  ['delay.test', '/', 3110, 3120],
  ['delay.test', '/two.html', 6120, 6130],
  robots('b.test', 200),
  ['b.test', '/', 1210, 1220],
];

describe('the judge on hand-made logs: one rule broken, one violation of its kind', () => {
  test('a log that keeps every rule has no violations', () => {
    assert.deepEqual(judged(clean), []);
    assert.deepEqual(
      judged(clean, { ipOf: () => '127.0.0.1', ipConcurrency: 2, ipGapMs: 100, controls: [] }),
      [],
      'the per-IP rules hold too',
    );
  });

  test('overlap: a request starts before the previous one to its host ended', () => {
    caught('overlap', 'a.test/next.html', [
      ...clean.slice(0, 3),
      ['a.test', '/next.html', 2200, 2240],
      ...clean.slice(4),
    ]);
  });

  test('gap: 1 ms short of the 1 s floor', () => {
    caught('gap', 'b.test/', [...clean.slice(0, 10), ['b.test', '/', 1209, 1220]]);
  });

  test('gap: 1 ms short of 10 times the previous request', () => {
    caught('gap', 'a.test/next.html', [...clean.slice(0, 3), ['a.test', '/next.html', 4229, 4240], ...clean.slice(4)]);
  });

  test("gap: 1 ms short of the robots.txt's Crawl-delay of 3 s", () => {
    caught('gap', 'delay.test/', [...clean.slice(0, 7), ['delay.test', '/', 3109, 3120], ...clean.slice(8)]);
  });

  test('robots-not-first: a page before any robots.txt answer of its origin', () => {
    caught('robots-not-first', 'c.test/', [...clean, ['c.test', '/', 0, 10]]);
  });

  test('robots-expired: a crawler that fetched robots.txt once and never again (issue fooling case)', () => {
    const once = clean.filter((r) => !(r[0] === 'a.test' && r[2] === DAY));
    caught('robots-expired', 'a.test/tomorrow.html', once);
    assert.deepEqual(judged(once, { robotsTtlMs: 2 * DAY }), [], 'robotsTtlMs sets the expiry');
  });

  test('robots-refetched: a crawler that fetches robots.txt again before every page (issue fooling case)', () => {
    const eager: Row[] = [...clean, robots('b.test', 2220), ['b.test', '/two.html', 3230, 3240]];
    caught('robots-refetched', 'b.test/robots.txt', eager);
    const bOnly = eager.filter((r) => r[0] === 'b.test');
    assert.deepEqual(judged(bOnly, { robotsTtlMs: 2000 }), [], 'robotsTtlMs sets when a refetch is due');
    const after503: Row[] = [robots('down.test', 0, { status: 503 }), robots('down.test', 60_010)];
    assert.deepEqual(judged(after503), [], 'an unavailable answer is retried, not refetched');
    // b.test's first answer: asked at 200, complete at 210
    assert.deepEqual(judged(bOnly, { crashes: [T + 215] }), [], 'a kill just after the answer may have lost it');
    assert.deepEqual(judged(bOnly, { crashes: [T + 205] }), [], 'so may a kill while it was on its way');
    caught('robots-refetched', 'b.test/robots.txt', eager, { crashes: [T + 100] });
    // asked again at 8000: a kill more than 5 s after the answer ended lost nothing of it
    const late: Row[] = [...clean, robots('b.test', 8_000), ['b.test', '/two.html', 9_010, 9_020]];
    assert.deepEqual(judged(late, { crashes: [T + 5_000] }), [], 'a kill within 5 s of the answer');
    caught('robots-refetched', 'b.test/robots.txt', late, { crashes: [T + 6_000] });
    assert.deepEqual(
      judged(late, { crashes: [T + 6_000], crashGraceMs: 6_000 }),
      [],
      'crashGraceMs sets how long after its end an answer may still be lost',
    );
  });

  test('robots-not-first: a page between a robots.txt redirect and the request it redirects to', () => {
    const moved: Row = ['moved.test', '/robots.txt', 0, 10, { status: 301 }];
    const hop = (start: number): Row => ['moved.test', '/real-robots.txt', start, start + 10];
    assert.deepEqual(judged([moved, hop(1010), ['moved.test', '/', 2020, 2030]]), []);
    caught('robots-not-first', 'moved.test/', [moved, ['moved.test', '/', 1010, 1020], hop(2020)]);
    caught('disallowed-fetched', 'moved.test/x/1', [moved, hop(1010), ['moved.test', '/x/1', 2020, 2030]]);
  });

  test('disallowed-fetched: a path the robots.txt disallows', () => {
    caught('disallowed-fetched', 'a.test/private/x.html', [...clean, ['a.test', '/private/x.html', 10_000, 10_010]]);
  });

  test("disallowed-fetched: a rule the crawler's robots-parser misreads still binds (issue fooling case)", () => {
    const url = 'http://a.test/bots-only/x.html';
    assert.equal(new RobotsCache(AGENT).isAllowed('http://a.test', A_ROBOTS, url), true, 'robots-parser allows it');
    caught('disallowed-fetched', 'a.test/bots-only/x.html', [
      ...clean,
      ['a.test', '/bots-only/x.html', 10_000, 10_010],
    ]);
  });

  test('robots-unavailable-fetched: a page after robots.txt answered 503', () => {
    caught('robots-unavailable-fetched', 'down.test/', [
      ...clean,
      robots('down.test', 0, { status: 503 }),
      ['down.test', '/', 1010, 1020],
    ]);
  });

  test('robots-unavailable-fetched: a robots.txt 429 is unavailable, not allow-all (issue fooling case)', () => {
    caught('robots-unavailable-fetched', 'busy.test/', [
      ...clean,
      robots('busy.test', 0, { status: 429 }),
      ['busy.test', '/', 1010, 1020],
    ]);
  });

  test('robots-unavailable-fetched: a robots.txt answer the log shows as 5xx is unavailable whatever the site serves', () => {
    caught('robots-unavailable-fetched', 'c.test/', [
      ...clean,
      robots('c.test', 0, { status: 500 }),
      ['c.test', '/', 1010, 1020],
    ]);
    caught('robots-unavailable-fetched', 'c.test/', [
      ...clean,
      robots('c.test', 0, { status: 0, aborted: true }),
      ['c.test', '/', 1010, 1020],
    ]);
  });

  test('robots-unavailable-fetched ends when robots.txt answers again', () => {
    const rows: Row[] = [
      ...clean,
      robots('c.test', 0, { status: 500 }),
      robots('c.test', 60_010),
      ['c.test', '/', 61_020, 61_030],
    ];
    assert.deepEqual(judged(rows), []);
  });

  test('robots-retry: robots.txt asked again before the first retry wait after a 503 passed', () => {
    const rows: Row[] = [
      ...clean,
      robots('down.test', 0, { status: 503 }),
      robots('down.test', 60_010, { status: 503 }),
    ];
    assert.deepEqual(judged(rows), []);
    caught('robots-retry', 'down.test/robots.txt', [
      ...clean,
      robots('down.test', 0, { status: 503 }),
      robots('down.test', 30_000, { status: 503 }),
    ]);
    // the wait doubles: 60 s, then 120 s
    caught('robots-retry', 'down.test/robots.txt', [...rows, robots('down.test', 60_020 + 100_000, { status: 503 })]);
  });

  test('retry-after: a request before Retry-After seconds have passed, though the 1 s gap is kept', () => {
    const throttled: Row = ['b.test', '/', 1210, 1220, { status: 429, retryAfter: '5', retryAfterSec: 5 }];
    assert.deepEqual(judged([...clean.slice(0, 10), throttled, ['b.test', '/', 6220, 6230]]), []);
    caught('retry-after', 'b.test/', [...clean.slice(0, 10), throttled, ['b.test', '/', 4220, 4230]]);
  });

  test('retry-after: an HTTP-date Retry-After binds too (issue fooling case: the server logged only seconds)', () => {
    const date = new Date(T + 30_000).toUTCString();
    const throttled: Row = ['b.test', '/', 1210, 1220, { status: 503, retryAfter: date }];
    assert.deepEqual(judged([...clean.slice(0, 10), throttled, ['b.test', '/', 30_000, 30_010]]), []);
    caught('retry-after', 'b.test/', [...clean.slice(0, 10), throttled, ['b.test', '/', 20_000, 20_010]]);
  });

  test('backoff: a 429/503 without Retry-After, then the next request within 60 s (issue fooling case)', () => {
    const throttled: Row = ['b.test', '/', 1210, 1220, { status: 503 }];
    caught('backoff', 'b.test/', [...clean.slice(0, 10), throttled, ['b.test', '/', 3220, 3230]]);
    assert.deepEqual(judged([...clean.slice(0, 10), throttled, ['b.test', '/', 61_220, 61_230]]), []);
    assert.deepEqual(
      judged([...clean.slice(0, 10), throttled, ['b.test', '/', 3220, 3230]], { backoffMs: 2000 }),
      [],
      'backoffMs sets the first wait',
    );
  });

  test('backoff: the wait doubles on a second 429/503 in a row, and an unusable Retry-After counts as none', () => {
    const rows: Row[] = [
      ...clean.slice(0, 10),
      ['b.test', '/', 1210, 1220, { status: 429, retryAfter: 'soon' }],
      ['b.test', '/', 61_220, 61_230, { status: 503 }],
    ];
    assert.deepEqual(judged(rows), []);
    caught('backoff', 'b.test/', [...rows, ['b.test', '/', 61_230 + 100_000, 61_240 + 100_000]]);
  });

  test('ip-concurrency: more requests in flight on one address than allowed, each host polite (issue fooling case)', () => {
    const rows: Row[] = [robots('a.test', 0), robots('b.test', 300), ['c.test', '/robots.txt', 600, 1000]];
    rows[0]![3] = 900;
    rows[1]![3] = 900;
    const options: PolitenessOptions = {
      ipOf: { 'a.test': '127.0.0.2', 'b.test': '127.0.0.2', 'c.test': '127.0.0.2' },
    };
    assert.deepEqual(judged(rows, options), [], 'three at once are within the default of 8');
    caught('ip-concurrency', 'c.test/robots.txt', rows, { ...options, ipConcurrency: 2 });
    assert.deepEqual(
      judged(rows, { ipOf: { 'a.test': '127.0.0.2', 'b.test': '127.0.0.3', 'c.test': '127.0.0.2' }, ipConcurrency: 2 }),
      [],
      'hosts on other addresses do not count',
    );
  });

  test('ip-gap: two starts on one address closer than the per-IP gap', () => {
    const rows: Row[] = [robots('a.test', 0), robots('b.test', 99)];
    const ipOf = (): string => '127.0.0.2';
    caught('ip-gap', 'b.test/robots.txt', rows, { ipOf });
    assert.deepEqual(judged(rows, { ipOf, ipGapMs: 99 }), []);
  });

  test('ip-gap: only what the stamps prove, the earlier start read as late as its startSlack allows (a stalled web stamps late)', () => {
    const ipOf = (): string => '127.0.0.2';
    const pair = (slack: number): Row[] => [
      ['a.test', '/robots.txt', 0, 10, { startSlack: slack }],
      robots('b.test', 70),
    ];
    assert.deepEqual(judged(pair(30), { ipOf }), [], 'stamped up to 30 ms late: maybe 100 ms apart');
    caught('ip-gap', 'b.test/robots.txt', pair(29.9), { ipOf });
    const report = checkPoliteness(logOf(pair(20)), sites, { userAgent: AGENT, ipOf });
    assert.match(
      report.violations[0]!.detail,
      /started 70 ms after #1 \(a\.test\) on 127\.0\.0\.2 \(stamped up to 20 ms late\); needs 100 ms/,
    );
    // a later start stamped late only makes a pair look further apart: its own slack forgives
    // nothing, until it is enough for that request to have started a full gap before the other
    caught(
      'ip-gap',
      'b.test/robots.txt',
      [robots('a.test', 0), ['b.test', '/robots.txt', 70, 80, { startSlack: 50 }]],
      { ipOf },
    );
    // a Kafka run's pair: b waited 210 ms for the web (a new connection's accept), stamped 7 ms
    // after a, which the crawler had sent 163 ms after b
    const reversed = (slack: number): Row[] => [
      ['a.test', '/robots.txt', 0, 1, { startSlack: 44.5 }],
      ['b.test', '/robots.txt', 7, 9, { startSlack: slack }],
    ];
    assert.deepEqual(judged(reversed(223.1), { ipOf }), [], 'b may have started 216 ms before a');
    assert.deepEqual(judged(reversed(107), { ipOf }), [], 'b may have started 100 ms before a');
    caught('ip-gap', 'b.test/robots.txt', reversed(106.9), { ipOf });
  });

  test('control-blocked: a request to a host of a blocked site after the grace', () => {
    const at = T + 1500;
    const rows: Row[] = [
      robots('a.test', 0),
      ['a.test', '/', 1010, 1030],
      ['sub.a.test', '/robots.txt', 11_499, 11_510],
      ['sub.a.test', '/', 12_510, 12_520],
    ];
    caught('control-blocked', 'sub.a.test/', rows, { controls: [{ at, site: 'a.test', action: 'BLOCK' }] });
    assert.deepEqual(
      judged(rows, { controls: [{ at, site: 'a.test', action: 'BLOCK' }], controlGraceMs: 20_000 }),
      [],
      'requests that start within the grace are leases already out',
    );
    assert.deepEqual(
      judged(rows, {
        controls: [
          { at, site: 'a.test', action: 'BLOCK' },
          { at: T + 11_000, site: 'a.test', action: 'RESUME' },
        ],
      }),
      [],
      'RESUME lifts it',
    );
  });

  test('control-paused: a request to a host of a paused site after the grace, until RESUME', () => {
    const controls = [{ at: T, site: 'b.test', action: 'PAUSE' as const }];
    const rows: Row[] = [robots('b.test', 9_000), ['b.test', '/', 10_010, 10_020]];
    caught('control-paused', 'b.test/', rows, { controls });
    assert.deepEqual(
      judged(rows, { controls: [...controls, { at: T + 10_000, site: 'b.test', action: 'RESUME' }] }),
      [],
    );
  });

  test('control-slow: a gap under the SLOW minimum, though above the usual one', () => {
    // binds from T + 6120 on: delay.test/two.html only
    const controls = [{ at: T - 3880, site: 'delay.test', action: 'SLOW' as const, minGapMs: 3005 }];
    caught('control-slow', 'delay.test/two.html', clean, { controls });
    assert.deepEqual(judged(clean, { controls: [{ ...controls[0]!, minGapMs: 3000 }] }), []);
  });

  test('the report names each violation and counts them by kind', () => {
    const log = logOf([...clean, ['c.test', '/', 0, 10]]);
    const text = formatPolitenessReport(checkPoliteness(log, sites, { userAgent: AGENT }));
    assert.match(
      text,
      /^ {2}robots-not-first c\.test #\d+: GET \/ before any robots\.txt answer of http:\/\/c\.test$/m,
    );
    assert.match(text, /^verdict: IMPOLITE \(1 violations: robots-not-first 1\)$/m);
  });
});

function get(web: SyntheticWeb, host: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: web.port, path, agent: false, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

test('the server logs Retry-After as sent, an HTTP-date as well as seconds, and the judge honours the date', async () => {
  const date = new Date(Date.now() + 60_000).toUTCString();
  const site: SiteSpec = {
    host: 'dated.test',
    pages: { '/': { status: 503, headers: { 'Retry-After': date }, body: 'later\n' } },
  };
  const web = await SyntheticWeb.start({ sites: [site] });
  try {
    await get(web, 'dated.test', '/robots.txt');
    await new Promise((r) => setTimeout(r, 1_100));
    assert.equal(await get(web, 'dated.test', '/'), 503);
    await new Promise((r) => setTimeout(r, 1_100));
    await get(web, 'dated.test', '/');
    const log = web.requests();
    assert.equal(log[1]!.retryAfter, date);
    assert.equal(log[1]!.retryAfterSec, undefined);
    const report = checkPoliteness(log, [site], { minGapMs: 1000 });
    assert.deepEqual(
      report.violations.map((v) => `${v.kind} #${v.seq}`),
      ['retry-after #3'],
      formatPolitenessReport(report),
    );
  } finally {
    await web.close();
  }
});
