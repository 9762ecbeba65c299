import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import { newHost } from '../../../processors/frontier/host-state.js';
import { applyFetchTiming, applyPageOutcome, applyRobotsOutcome } from '../../../processors/frontier/outcomes.js';
import { GAP_SAFETY_MS, RobotsCache } from '../../../processors/frontier/politeness.js';
import type { FetchResult, HostState } from '../../../schemas/types.js';
import { seededRandom } from '../../../synthetic-web/seeded-random.js';

const noJitter = validateCrawlConfig({ backoffJitterPercent: 0 });
const MINUTE = 60_000;

function result(overrides: Partial<FetchResult> = {}): FetchResult {
  return {
    leaseId: 'l',
    ownerEpoch: 1,
    url: 'http://host.test/page',
    host: 'host.test',
    site: 'host.test',
    kind: 'PAGE',
    status: 200,
    startedAt: 0,
    durationMs: 10,
    errorCode: null,
    errorMessage: null,
    retryAfterMs: null,
    redirectTarget: null,
    robotsBody: null,
    remoteAddress: null,
    ...overrides,
  };
}

const host = (): HostState => newHost('host.test', 'http://host.test', 'host.test');
const refused = (at: number) => result({ status: 0, errorCode: 'CS_CONNECT', startedAt: at, durationMs: 5 });

/** What the frontier does with a page result: timing first, then the page's consequences. */
function applyPage(state: HostState, r: FetchResult, now: number, config: CrawlConfig, random = () => 0.5) {
  const parked = applyFetchTiming(state, r, now, config);
  return { parked, wait: applyPageOutcome(state, r, now, config, random) };
}

/** 429s (or 503s) in a row, each as soon as the wait of the one before is over; the waits. */
function backoffRun(config: CrawlConfig, statuses: number[]): (number | undefined)[] {
  const state = host();
  const waits: (number | undefined)[] = [];
  let now = 1_000_000;
  for (const status of statuses) {
    const wait = applyPageOutcome(state, result({ status, startedAt: now }), now, config);
    waits.push(wait);
    assert.equal(state.nextEligibleAt, now + wait!, 'the host is due before its wait is over');
    now += wait!;
  }
  return waits;
}

test('without Retry-After, each 429 or 503 in a row doubles the wait from --backoff up to --backoff-max', () => {
  // a quiet period longer than any wait: the doubling alone decides
  const config = validateCrawlConfig({ backoffJitterPercent: 0, backoffQuietMs: 2 * 3_600_000 });
  assert.deepEqual(
    backoffRun(config, [429, 503, 429, 429, 503, 429, 429, 429]),
    [1, 2, 4, 8, 16, 32, 60, 60].map((m) => m * MINUTE),
  );
});

test('a back-off is not forgiven by its own wait: with the defaults a host answering 429 every time reaches the 1 h cap', () => {
  assert.deepEqual(
    backoffRun(noJitter, [429, 429, 429, 429, 429, 429, 429, 429]),
    [1, 2, 4, 8, 16, 32, 60, 60].map((m) => m * MINUTE),
  );
});

test("a host's back-off is forgiven after --backoff-quiet without a 429 or 503 past the end of its wait, and not before", () => {
  const quiet = noJitter.backoffQuietMs;
  const t0 = 1_000_000;
  const within = host();
  applyPageOutcome(within, result({ status: 429 }), t0, noJitter);
  applyPageOutcome(within, result(), t0 + quiet, noJitter);
  assert.equal(applyPageOutcome(within, result({ status: 503 }), t0 + quiet, noJitter), 2 * MINUTE);

  const after = host();
  applyPageOutcome(after, result({ status: 429 }), t0, noJitter);
  assert.equal(
    applyPageOutcome(after, result({ status: 429 }), t0 + quiet, noJitter),
    2 * MINUTE,
    'forgiven within its wait',
  );
  const later = host();
  applyPageOutcome(later, result({ status: 429 }), t0, noJitter);
  assert.equal(applyPageOutcome(later, result({ status: 429 }), t0 + MINUTE + quiet + 1, noJitter), MINUTE);

  // a success after the quiet period forgives as well, so a later 429 starts from the first wait
  const success = host();
  applyPageOutcome(success, result({ status: 429 }), t0, noJitter);
  applyPageOutcome(success, result({ status: 429 }), t0 + 1, noJitter);
  applyPageOutcome(success, result(), t0 + 1 + 2 * MINUTE + quiet + 1, noJitter);
  assert.equal(success.backoffMs, 0);
});

test('Retry-After is waited exactly, without jitter, and counts as the back-off a later 429 doubles', () => {
  const config = validateCrawlConfig({ backoffJitterPercent: 50 });
  const state = host();
  const now = 1_000_000;
  assert.equal(
    applyPageOutcome(state, result({ status: 503, retryAfterMs: 5_000 }), now, config, () => 0.99),
    5_000,
  );
  assert.equal(state.nextEligibleAt, now + 5_000);
  const next = applyPageOutcome(state, result({ status: 429 }), now + 5_000, config, () => 0);
  assert.equal(next, 10_000);
});

test('jitter lengthens our own back-offs by up to --backoff-jitter percent, never shortens them', () => {
  const config = validateCrawlConfig({ backoffJitterPercent: 20 });
  const random = seededRandom(20);
  const waits: number[] = [];
  for (let i = 0; i < 200; i++) {
    const state = host();
    waits.push(applyPageOutcome(state, result({ status: 429 }), 0, config, random)!);
  }
  assert.ok(
    waits.every((w) => w >= MINUTE && w <= 1.2 * MINUTE),
    `waits outside 60..72 s: ${waits.filter((w) => w < MINUTE || w > 1.2 * MINUTE).join(', ')}`,
  );
  assert.ok(new Set(waits).size > 100, 'the jitter is not drawn per back-off');
  assert.equal(
    applyPageOutcome(host(), result({ status: 429 }), 0, config, () => 0.5),
    66_000,
  );
});

test('connection errors in a row back off from the second, doubling from --backoff; a success ends the run', () => {
  const state = host();
  const waits: (number | undefined)[] = [];
  for (let i = 0; i < 4; i++) waits.push(applyPage(state, refused(i), i, noJitter).wait);
  assert.deepEqual(waits, [undefined, MINUTE, 2 * MINUTE, 4 * MINUTE]);
  applyPage(state, result({ startedAt: 10 }), 10, noJitter);
  assert.equal(state.connErrors, 0);
  assert.equal(applyPage(state, refused(11), 11, noJitter).wait, undefined, 'the run of errors starts again');
});

test('--conn-errors-to-park connection errors in a row park the host for --backoff-max', () => {
  const config = validateCrawlConfig({ backoffJitterPercent: 0, connErrorsToPark: 5 });
  const state = host();
  const parked: boolean[] = [];
  for (let i = 0; i < 5; i++) parked.push(applyPage(state, refused(1_000 + i), 1_000 + i, config).parked);
  assert.deepEqual(parked, [false, false, false, false, true]);
  assert.equal(state.parkedUntil, 1_004 + config.backoffMaxMs);

  // an error about the page itself (not the connection) breaks the run without resetting it
  const broken = host();
  for (let i = 0; i < 4; i++) applyPage(broken, refused(i), i, config);
  applyPage(broken, result({ status: 0, errorCode: 'CS_TOO_LARGE' }), 5, config);
  assert.equal(applyPage(broken, refused(6), 6, config).parked, true, 'only a success ends a run of errors');
  const reset = host();
  for (let i = 0; i < 4; i++) applyPage(reset, refused(i), i, config);
  applyPage(reset, result({ startedAt: 5 }), 5, config);
  assert.equal(applyPage(reset, refused(6), 6, config).parked, false);
  assert.equal(reset.parkedUntil, 0);
});

test('the gap counts from the end of the fetch, and a lease that expired unfetched changes nothing', () => {
  const state = host();
  applyFetchTiming(state, result({ startedAt: 5_000, durationMs: 300 }), 9_000, noJitter);
  assert.equal(state.gapMs, 3_000 + GAP_SAFETY_MS);
  assert.equal(state.nextEligibleAt, 5_300 + 3_000 + GAP_SAFETY_MS);
  const before = structuredClone(state);
  const parked = applyFetchTiming(
    state,
    result({ status: 0, errorCode: 'CS_LEASE_EXPIRED', startedAt: 20_000, durationMs: 0 }),
    20_000,
    noJitter,
  );
  assert.equal(parked, false);
  assert.deepEqual(state, before);
});

test('an unavailable robots.txt holds its host --robots-retry, doubling per failure up to --backoff-max; an answer resets the count', () => {
  const config = validateCrawlConfig({ backoffJitterPercent: 0, robotsRetryMs: MINUTE });
  const robots = new RobotsCache(config.userAgent);
  const state = host();
  const url = 'http://host.test/robots.txt';
  const waits: number[] = [];
  let now = 1_000_000;
  for (const [status, errorCode] of [
    [503, null],
    [500, null],
    [429, null],
    [0, 'CS_TIMEOUT'],
    [503, null],
    [503, null],
    [503, null],
    [503, null],
  ] as const) {
    const r = result({ kind: 'ROBOTS', url, status, errorCode, startedAt: now - 10 });
    assert.equal(applyRobotsOutcome(state, r, now, config, robots).verdict, 'UNAVAILABLE');
    waits.push(state.nextEligibleAt - now);
    now = state.nextEligibleAt;
  }
  assert.deepEqual(
    waits,
    [1, 2, 4, 8, 16, 32, 60, 60].map((m) => m * MINUTE),
  );
  const ok = result({ kind: 'ROBOTS', url, status: 200, robotsBody: 'User-agent: *\nDisallow: /x\n', startedAt: now });
  assert.equal(applyRobotsOutcome(state, ok, now + 10, config, robots).verdict, 'READY');
  assert.equal(state.robots[0]!.failures, 0);
  applyRobotsOutcome(state, result({ kind: 'ROBOTS', url, status: 503 }), now + 20, config, robots);
  assert.equal(state.nextEligibleAt - (now + 20), MINUTE, 'the doubling starts again after an answer');
});

test("a robots.txt retry's jitter comes from the random source and only lengthens the wait", () => {
  const config = validateCrawlConfig({ backoffJitterPercent: 20, robotsRetryMs: MINUTE });
  const robots = new RobotsCache(config.userAgent);
  const r = result({ kind: 'ROBOTS', url: 'http://host.test/robots.txt', status: 503 });
  const at = (random: () => number) => {
    const state = host();
    applyRobotsOutcome(state, r, 0, config, robots, null, random);
    return state.nextEligibleAt;
  };
  assert.equal(
    at(() => 0),
    MINUTE,
  );
  assert.equal(
    at(() => 0.5),
    66_000,
  );
  const random = seededRandom(9309);
  for (let i = 0; i < 100; i++) {
    const wait = at(random);
    assert.ok(wait >= MINUTE && wait <= 72_000, `${wait}`);
  }
});

test('a robots.txt request lost with its lease is not a failure: nothing is counted or held', () => {
  const config = validateCrawlConfig({});
  const state = host();
  for (const errorCode of ['CS_LEASE_EXPIRED', 'CS_LEASE_LOST'] as const) {
    const r = result({ kind: 'ROBOTS', url: 'http://host.test/robots.txt', status: 0, errorCode });
    assert.equal(applyRobotsOutcome(state, r, 5_000, config, new RobotsCache(config.userAgent)).verdict, 'EXPIRED');
  }
  assert.deepEqual(state.robots, []);
  assert.equal(state.nextEligibleAt, 0);
});
