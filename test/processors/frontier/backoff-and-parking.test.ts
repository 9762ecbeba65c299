import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { FakeFetcher, gapsOf, seedLinks } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

// the frontier runs on the harness's clock: hours pass in a second, and no wait is a real sleep
const MINUTE = 60_000;
const STEP = 500;
/** How late after its due time a fetch may start here: a result is seen, and a lease issued, once a step. */
const LATE = 2 * STEP + 50;

const config = validateCrawlConfig({ backoffJitterPercent: 0 });

function assertWaited(gap: number, wait: number, what: string): void {
  assert.ok(gap >= wait && gap <= wait + LATE, `${what}: ${gap} ms, not ${wait} ms`);
}

test('a host answering 429 is asked again only after the back-off, doubling from 60 s, until the URL runs out of attempts', async () => {
  const h = await FrontierHarness.open(config);
  try {
    const web = new FakeFetcher(h, (r) => (r.kind === 'PAGE' ? { status: 429 } : {}));
    seedLinks(h, 'busy.test', ['http://busy.test/']);
    await web.run(20 * MINUTE, STEP);
    const pages = web.pages();
    assert.equal(pages.length, config.maxAttempts, 'the URL was not retried up to --max-attempts, or beyond it');
    gapsOf(pages).forEach((gap, i) => assertWaited(gap, MINUTE * 2 ** i, `wait after 429 #${i + 1}`));
  } finally {
    await h.close();
  }
});

test("a host's back-off is forgiven after ten quiet minutes: a 429 then waits 60 s again, not double the last", async () => {
  const h = await FrontierHarness.open(config);
  try {
    // every URL answers 429 the first time and 200 after
    const asked = new Set<string>();
    const web = new FakeFetcher(h, (r) => {
      if (r.kind === 'ROBOTS' || asked.has(r.url)) return {};
      asked.add(r.url);
      return { status: 429 };
    });
    seedLinks(h, 'flaky.test', ['http://flaky.test/a']);
    await web.run(3 * MINUTE, STEP);
    seedLinks(h, 'flaky.test', ['http://flaky.test/b']);
    await web.run(4 * MINUTE, STEP);
    const second429 = web.pages().find((f) => f.request.url.endsWith('/b'))!;
    // quiet for longer than --backoff-quiet (10 min) after the second 429's 2 min wait ended
    const quietUntil = second429.end + 2 * MINUTE + config.backoffQuietMs + MINUTE;
    await web.run(quietUntil - h.clock, 10 * STEP);
    seedLinks(h, 'flaky.test', ['http://flaky.test/c']);
    await web.run(3 * MINUTE, STEP);
    const pages = web.pages();
    assert.deepEqual(
      pages.map((f) => new URL(f.request.url).pathname),
      ['/a', '/a', '/b', '/b', '/c', '/c'],
    );
    const gaps = gapsOf(pages);
    assertWaited(gaps[0]!, MINUTE, 'first 429');
    assertWaited(gaps[2]!, 2 * MINUTE, 'a 429 within the quiet period doubles');
    assertWaited(gaps[4]!, MINUTE, 'a 429 after the quiet period starts again');
  } finally {
    await h.close();
  }
});

test('five connection errors in a row park a host for an hour, idle meanwhile; it is fetched again after', async () => {
  const h = await FrontierHarness.open(config);
  try {
    let pageFetches = 0;
    const web = new FakeFetcher(h, (r) =>
      r.kind === 'PAGE' && ++pageFetches <= config.connErrorsToPark ? { errorCode: 'CS_CONNECT' } : {},
    );
    seedLinks(h, 'down.test', ['http://down.test/1', 'http://down.test/2']);
    await web.run(10 * MINUTE, STEP);
    const failed = web.pages();
    assert.equal(failed.length, config.connErrorsToPark);
    // the first error waits the usual gap; from the second on the wait doubles from --backoff
    gapsOf(failed)
      .slice(1)
      .forEach((gap, i) => assertWaited(gap, MINUTE * 2 ** i, `wait after connection error #${i + 2}`));
    await web.run(30 * MINUTE, 10 * STEP);
    assert.equal(web.pages().length, config.connErrorsToPark, 'a parked host was fetched');
    assert.equal(h.task.isIdle(), true, 'a parked host keeps --until-idle from ending');
    await web.run(30 * MINUTE, STEP);
    const pages = web.pages();
    assert.deepEqual(
      pages.slice(config.connErrorsToPark).map((f) => f.request.url),
      ['http://down.test/2', 'http://down.test/1'],
    );
    const parked = pages[config.connErrorsToPark]!.start - failed[failed.length - 1]!.end;
    assertWaited(parked, config.backoffMaxMs, 'parked');
  } finally {
    await h.close();
  }
});

test('an unavailable robots.txt holds its host, asked again after 1, 2 and 4 minutes; then its rules apply', async () => {
  const h = await FrontierHarness.open(config);
  try {
    let robotsFetches = 0;
    const web = new FakeFetcher(h, (r) => {
      if (r.kind !== 'ROBOTS') return {};
      return ++robotsFetches <= 3 ? { status: 503 } : { status: 200, robotsBody: 'User-agent: *\nDisallow: /x\n' };
    });
    seedLinks(h, 'shy.test', ['http://shy.test/x', 'http://shy.test/y']);
    await web.run(2 * MINUTE, STEP);
    assert.equal(h.task.isIdle(), true, 'a host waiting on its robots.txt keeps --until-idle from ending');
    await web.run(8 * MINUTE, STEP);
    const fetches = web.of('shy.test');
    assert.deepEqual(
      fetches.map((f) => f.request.url),
      [...Array<string>(4).fill('http://shy.test/robots.txt'), 'http://shy.test/y'],
    );
    gapsOf(fetches.slice(0, 4)).forEach((gap, i) => assertWaited(gap, MINUTE * 2 ** i, `robots.txt retry #${i + 1}`));
  } finally {
    await h.close();
  }
});
