import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import type { AddressLookup } from '../../../processors/frontier/host-addresses.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { ControlAction, FetchRequest } from '../../../schemas/types.js';
import { FakeFetcher, controlSite, seedLinks } from './fake-fetcher.js';
import { fetchResultFor } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

const FETCH_MS = 20;

/** One fetch as a fetcher makes it: starts at the lease's notBefore (or now), takes FETCH_MS. */
interface Fetch {
  readonly request: FetchRequest;
  readonly start: number;
  readonly end: number;
  answered: boolean;
}

function seed(h: FrontierHarness, host: string, paths: string[]): void {
  seedLinks(
    h,
    host,
    paths.map((p) => `http://${host}${p}`),
  );
}

function control(h: FrontierHarness, site: string, action: ControlAction, minGapMs: number | null = null): void {
  h.feed(TOPICS.control, site, { site, action, minGapMs, issuedAt: h.clock, issuedBy: 'test' });
}

/**
 * Plays fetchers for `ms` of frontier time: each lease starts at its notBefore, answers 404 for
 * robots.txt and 200 for pages after FETCH_MS (from `address`), and its result is fed back then.
 * `log` holds every fetch so far, in lease order (the harness's requests).
 */
async function fetchFor(h: FrontierHarness, ms: number, log: Fetch[], address = '127.0.0.1') {
  for (let t = 0; t < ms; t += 10) {
    await h.advance(10, 10);
    // lets a lookup that answers on a later turn of the event loop answer
    await new Promise(setImmediate);
    for (const r of h.requests.slice(log.length)) {
      const start = Math.max(r.notBefore, h.clock);
      log.push({ request: r, start, end: start + FETCH_MS, answered: false });
    }
    for (const f of log) {
      if (f.answered || f.end > h.clock) continue;
      f.answered = true;
      const result = fetchResultFor(f.request, f.start, { durationMs: FETCH_MS, remoteAddress: address });
      h.feed(TOPICS.fetchResults, f.request.site, result);
    }
  }
}

/** Gaps between the end of each fetch and the start of the next, per fetch after the first. */
const gaps = (log: Fetch[]) => log.slice(1).map((f, i) => f.start - log[i]!.end);

test('slow raises the gap before every later fetch of the site, not just the next; resume restores the normal gap', async () => {
  const config: CrawlConfig = validateCrawlConfig({});
  const h = await FrontierHarness.open(config);
  try {
    seed(
      h,
      'slow.test',
      Array.from({ length: 30 }, (_, i) => `/page-${'abcdefghijklmnopqrstuvwxyzABCD'[i]}`),
    );
    const log: Fetch[] = [];
    await fetchFor(h, 4_000, log);
    const before = log.slice(1); // robots.txt first
    const slowAt = h.clock;
    control(h, 'slow.test', 'SLOW', 3_000);
    await fetchFor(h, 16_000, log);
    const resumeAt = h.clock;
    control(h, 'slow.test', 'RESUME');
    await fetchFor(h, 5_000, log);

    assert.ok(before.length >= 3, 'too few fetches before slow to compare');
    assert.ok(gaps(before).every((g) => g < 3_000 && g >= config.minDelayMs));
    // every lease handed out after the command, and the fetch before each
    const slowed = log.filter((f) => f.request.issuedAt > slowAt && f.request.issuedAt <= resumeAt);
    assert.ok(slowed.length >= 4, `only ${slowed.length} fetches while slowed`);
    const slowGaps = slowed.map((f) => f.start - log[log.indexOf(f) - 1]!.end);
    assert.ok(
      slowGaps.every((g) => g >= 3_000),
      `gaps while slowed: ${slowGaps.join(', ')}`,
    );
    const resumed = log.filter((f) => f.request.issuedAt > resumeAt);
    const resumedGaps = gaps(resumed);
    assert.ok(resumedGaps.length >= 2, 'too few fetches after resume');
    assert.ok(
      resumedGaps.every((g) => g < 3_000),
      `gaps after resume: ${resumedGaps.join(', ')}`,
    );
  } finally {
    await h.close();
  }
});

async function twoNewHostsOnOneAddress(lookup: AddressLookup) {
  const config = validateCrawlConfig({ ipConcurrency: 1, ipGapMs: 700 });
  const h = await FrontierHarness.open(config, lookup);
  try {
    seed(h, 'one.test', ['/']);
    seed(h, 'two.test', ['/']);
    const log: Fetch[] = [];
    await fetchFor(h, 6_000, log, '127.0.0.9');
    return { config, log };
  } finally {
    await h.close();
  }
}

for (const [kind, lookup] of [
  ['answered at once', () => '127.0.0.9'],
  [
    'answered later',
    (host: string) =>
      new Promise<string>((r) => setImmediate(() => r(host.endsWith('.test') ? '127.0.0.9' : '127.0.0.1'))),
  ],
] as [string, AddressLookup][]) {
  test(`the per-IP limit covers two new hosts' first fetches (lookup ${kind})`, async () => {
    const { config, log } = await twoNewHostsOnOneAddress(lookup);
    const first = log.filter((f) => f.request.kind === 'ROBOTS');
    assert.deepEqual(first.map((f) => f.request.host).sort(), ['one.test', 'two.test']);
    const byStart = [...log].sort((a, b) => a.start - b.start);
    for (let i = 1; i < byStart.length; i++) {
      const [a, b] = [byStart[i - 1]!, byStart[i]!];
      assert.ok(b.start >= a.end, `${b.request.url} started while ${a.request.url} was in flight (concurrency 1)`);
      assert.ok(
        b.start - a.start >= config.ipGapMs,
        `${b.request.url} started ${b.start - a.start} ms after ${a.request.url}`,
      );
    }
  });
}

test('a host whose address lookup fails is fetched all the same, without a per-IP limit', async () => {
  const config = validateCrawlConfig({ ipConcurrency: 1, ipGapMs: 700 });
  const h = await FrontierHarness.open(config, () => Promise.reject(new Error('no such name')));
  try {
    seed(h, 'gone.test', ['/']);
    const log: Fetch[] = [];
    await fetchFor(h, 3_000, log);
    assert.deepEqual(
      log.map((f) => f.request.url),
      ['http://gone.test/robots.txt', 'http://gone.test/'],
    );
  } finally {
    await h.close();
  }
});

const pagesOf = (host: string, n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => `http://${host}/p${from + i}`);

test("block drops a site's queued URLs and admits none of its later links; resume admits new links again", async () => {
  const h = await FrontierHarness.open(validateCrawlConfig({}));
  try {
    const web = new FakeFetcher(h);
    seedLinks(h, 'blocked.test', pagesOf('blocked.test', 10));
    seedLinks(h, 'other.test', pagesOf('other.test', 5));
    await web.run(4_000);
    const blockedAt = h.clock;
    controlSite(h, 'blocked.test', 'BLOCK');
    await web.run(20_000);
    seedLinks(h, 'blocked.test', pagesOf('blocked.test', 3, 10));
    await web.run(10_000);

    const before = web.pages('blocked.test').filter((f) => f.request.issuedAt <= blockedAt);
    assert.ok(before.length >= 1 && before.length < 10, `${before.length} pages before the block: it cut nothing`);
    const after = web.of('blocked.test').filter((f) => f.request.issuedAt > blockedAt);
    assert.deepEqual(
      after.map((f) => f.request.url),
      [],
      'blocked.test was leased after its block',
    );
    assert.equal(web.pages('other.test').length, 5, 'another site was held by the block');
    assert.equal(h.task.isIdle(), true, 'the dropped URLs of a blocked site keep --until-idle from ending');

    const resumedAt = h.clock;
    controlSite(h, 'blocked.test', 'RESUME');
    seedLinks(h, 'blocked.test', pagesOf('blocked.test', 3, 20));
    await web.run(10_000);
    assert.deepEqual(
      web
        .pages('blocked.test')
        .filter((f) => f.request.issuedAt > resumedAt)
        .map((f) => f.request.url)
        .sort(),
      pagesOf('blocked.test', 3, 20),
    );
  } finally {
    await h.close();
  }
});

test('pause fetches nothing of a site, however long, and keeps its queued URLs; resume fetches them all', async () => {
  const h = await FrontierHarness.open(validateCrawlConfig({}));
  try {
    const web = new FakeFetcher(h);
    seedLinks(h, 'held.test', pagesOf('held.test', 8));
    await web.run(3_000);
    const pausedAt = h.clock;
    controlSite(h, 'held.test', 'PAUSE');
    await web.run(3_600_000, 5_000);
    assert.deepEqual(
      web.of('held.test').filter((f) => f.request.issuedAt > pausedAt),
      [],
      'held.test was leased while paused',
    );
    const before = web.pages('held.test').length;
    assert.ok(before < 8, 'held.test finished before the pause; the test proves nothing');
    assert.equal(h.task.isIdle(), true, 'a paused site keeps --until-idle from ending');
    controlSite(h, 'held.test', 'RESUME');
    await web.run(15_000);
    assert.deepEqual(
      web
        .pages('held.test')
        .map((f) => f.request.url)
        .sort(),
      pagesOf('held.test', 8).sort(),
    );
  } finally {
    await h.close();
  }
});
