import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freshWeb, type FreshPage } from '../../synthetic-web/fresh-web.js';
import { feedItemDelays, fetchDelay, fixedIntervalStaleness, staleness } from '../../synthetic-web/staleness.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';

const EPOCH = Date.UTC(2026, 0, 1);
// seed 20 gives this one-host web's fast page (period 20 s) phase 5: changes at 25, 45, 65, 85, 105 s
const web = freshWeb({
  seed: 20,
  epoch: EPOCH,
  hosts: 1,
  perHost: { fast: 1, slow: 0, never: 1, cosmetic: 1 },
  sitemapOnly: 0,
  fastSec: [20, 20],
  feedSec: 1000,
});
const host = web.layout.hosts[0]!;
const pageOf = (cls: FreshPage['changeClass']): FreshPage =>
  web.layout.pages.find((p) => p.changeClass === cls && p.path !== '/')!;
const fast = pageOf('fast');
const never = pageOf('never');
const cosmetic = pageOf('cosmetic');
const notHome = (p: FreshPage): boolean => p.path !== '/';
const ms = (sec: number): number => EPOCH + sec * 1000;

let seq = 0;
function entry(page: FreshPage, sec: number, status: number, extra: Partial<RequestLogEntry> = {}): RequestLogEntry {
  const bytes = status === 304 ? 0 : 1000;
  return {
    seq: ++seq,
    host,
    method: 'GET',
    path: page.path,
    start: ms(sec),
    end: ms(sec) + 5,
    status,
    bytes,
    ...extra,
  };
}

const log: RequestLogEntry[] = [
  entry(fast, 5, 200),
  entry(never, 10, 200),
  entry(fast, 30, 200, { path: `${fast.path}?utm=1` }),
  entry(never, 40, 304),
  entry(fast, 50, 200),
  entry(fast, 55, 304),
  entry(never, 70, 200),
  entry(never, 80, 200, { method: 'HEAD', bytes: 0 }),
  entry(fast, 82, 200, { aborted: true }),
  entry(fast, 84, 503),
  entry(never, 90, 304),
  { ...entry(never, 95, 200), host: 'other.test' },
];

test('the schedule of the hand-made web is as the expectations below assume', () => {
  assert.deepEqual([fast.periodSec, fast.phaseSec], [20, 5]);
  assert.equal(never.validators, 'both');
});

test('staleness counts, per page, the seconds its latest copy (200 or 304) was out of date, from the log', () => {
  const report = staleness(log, web, { from: ms(0), to: ms(100), pages: notHome });
  const of = (p: FreshPage) => report.pages.find((r) => r.page === p)!;
  // fast: unfetched [0,5), then changes at 25, 45, 65 answered by fetches at 30, 50 and none: 5 + 5 + 5 + 35
  assert.equal(of(fast).staleSec, 50);
  assert.equal(of(fast).fetches, 4);
  assert.equal(of(fast).notModified, 1);
  assert.equal(of(fast).changes, 4);
  assert.equal(of(never).staleSec, 10);
  assert.equal(of(never).fetches, 4, 'the HEAD and the other host are not fetches of the page');
  assert.equal(of(cosmetic).staleSec, 100, 'never fetched: stale from its birth');
  assert.equal(report.totalSec, 160);
  assert.equal(report.fetches, 8);
  assert.deepEqual(report.byClass.fast, { pages: 1, staleSec: 50, fetches: 4, notModified: 1 });
  assert.deepEqual(report.byClass.slow, { pages: 0, staleSec: 0, fetches: 0, notModified: 0 });
  assert.equal(report.neverRevisits, 3);
  assert.equal(report.neverNotModified, 2);
  assert.equal(report.neverNotModifiedShare, 2 / 3);
});

test('requests before the window set the copy; only the window’s seconds and fetches count', () => {
  const report = staleness(log, web, { from: ms(60), to: ms(100), pages: notHome });
  const of = (p: FreshPage) => report.pages.find((r) => r.page === p)!;
  assert.equal(of(fast).staleSec, 35);
  assert.equal(of(fast).fetches, 0);
  assert.equal(of(never).staleSec, 0);
  assert.equal(of(cosmetic).staleSec, 40);
  assert.equal(report.totalSec, 75);
  assert.equal(report.neverRevisits, 2);
  assert.equal(report.neverNotModified, 1);
});

test('without staleBeforeFirstFetch a page is stale only after its first copy goes out of date', () => {
  const report = staleness(log, web, { from: ms(0), to: ms(100), pages: notHome, staleBeforeFirstFetch: false });
  assert.equal(report.totalSec, 45);
});

test('a page with no copy and no window is not stale; the home page counts unless filtered out', () => {
  const report = staleness([], web, { from: ms(0), to: ms(100) });
  assert.equal(report.totalSec, 400);
  assert.equal(report.pages.length, 4);
  assert.ok(Number.isNaN(report.neverNotModifiedShare));
  assert.equal(staleness([], web, { from: ms(30), to: ms(30) }).totalSec, 0);
});

test('the fixed-interval baseline fetches the pages round-robin at even intervals', () => {
  // fetches at 0 (fast), 25 (never), 50 (fast), 75 (never); fast stale [25,50) and [65,100), never [0,25)
  const report = fixedIntervalStaleness(web, 4, { from: ms(0), to: ms(100), pages: (p) => p === fast || p === never });
  assert.equal(report.fetches, 4);
  assert.equal(report.pages.find((r) => r.page === fast)!.staleSec, 60);
  assert.equal(report.pages.find((r) => r.page === never)!.staleSec, 25);
  assert.equal(report.totalSec, 85);
});

test('the fixed-interval baseline warms up from the epoch at the same interval, so its copies at the window’s start are current', () => {
  const pages = (p: FreshPage): boolean => p === fast || p === never;
  // two fetches in [50, 100] are 25 s apart; warm-up fetches at 0 (fast) and 25 (never), then 50 (fast) and 75 (never)
  const warm = fixedIntervalStaleness(web, 2, { from: ms(50), to: ms(100), pages });
  assert.equal(warm.fetches, 2);
  assert.equal(warm.totalSec, 35, 'fast is stale from its change at 65 s');
  const cold = fixedIntervalStaleness(web, 2, { from: ms(50), to: ms(100), pages, warmUp: false });
  // cold: 50 (fast, copy current), 75 (never); never unfetched until 75, fast stale from 65
  assert.equal(cold.totalSec, 35 + 25);
});

test('feed items count from their publication, in staleness and in the baseline', () => {
  const feedy = freshWeb({ seed: 3, epoch: EPOCH, hosts: 1, feedSec: 30 });
  const items = (p: FreshPage): boolean => p.reach === 'feed';
  // items published at 30, 60 and 90 s exist 70 + 40 + 10 seconds of [0, 100]
  assert.equal(staleness([], feedy, { from: ms(0), to: ms(100), pages: items }).totalSec, 120);
  const baseline = fixedIntervalStaleness(feedy, 10, { from: ms(0), to: ms(100), pages: items });
  // a fetch every 10 s, round-robin over the items published by then: none before 30, then
  // 30 a, 40 a, 50 a, 60 b, 70 a, 80 b, 90 c; each item is fetched when published
  assert.equal(baseline.fetches, 7);
  assert.deepEqual(
    baseline.pages.map((r) => r.fetches),
    [4, 2, 1],
  );
  assert.equal(baseline.totalSec, 0);
});

test('fetch delays: from a time (a bump) to the page’s next fetch, and from each feed item’s publication', () => {
  assert.equal(fetchDelay(log, web, never, 41), 29, 'the next GET answered 200 or 304 after 41 s is at 70 s');
  assert.equal(fetchDelay(log, web, never, 91), undefined);
  const feedy = freshWeb({ seed: 3, epoch: EPOCH, hosts: 1, feedSec: 30 });
  const [a, b] = [30, 60].map((sec) => feedy.pagesAt(sec).at(-1)!);
  const feedLog = [
    { ...entry(a!, 31, 200), host: a!.host },
    { ...entry(a!, 50, 304), host: a!.host },
    { ...entry(b!, 75, 200), host: b!.host },
  ];
  assert.deepEqual(
    feedItemDelays(feedLog, feedy, { from: ms(0), to: ms(100) }).map((d) => [d.page.bornSec, d.delaySec]),
    [
      [30, 1],
      [60, 15],
      [90, undefined],
    ],
  );
});

test('a bursty page is stale from each change of a burst to its next copy, and current through the quiet between bursts', () => {
  // seed 6 gives the bursty page phase 10: bursts at 60, 65, 70; 110, 115, 120
  const burstyWeb = freshWeb({
    seed: 6,
    epoch: EPOCH,
    hosts: 1,
    perHost: { fast: 0, slow: 0, never: 0, cosmetic: 0, bursty: 1 },
    sitemapOnly: 0,
    burstySec: [50, 50],
    burstChanges: 3,
    burstGapSec: 5,
    feedSec: 1000,
  });
  const page = burstyWeb.layout.pages.find((p) => p.changeClass === 'bursty')!;
  assert.equal(page.phaseSec, 10);
  const burstyLog = [entry(page, 2, 200), entry(page, 62, 200), entry(page, 100, 304), entry(page, 125, 200)];
  const report = staleness(burstyLog, burstyWeb, { from: ms(0), to: ms(130), pages: (p) => p === page });
  // unfetched [0,2); v1 at 60, copied at 62; v2, v3 at 65, 70, confirmed by the 304 at 100; v4..v6 from 110, copied at 125
  const [r] = report.pages;
  assert.deepEqual([r!.staleSec, r!.fetches, r!.notModified, r!.changes], [2 + 2 + 35 + 15, 4, 1, 6]);
  assert.deepEqual(report.byClass.bursty, { pages: 1, staleSec: 54, fetches: 4, notModified: 1 });
  assert.deepEqual(report.byClass.fast, { pages: 0, staleSec: 0, fetches: 0, notModified: 0 });
});
