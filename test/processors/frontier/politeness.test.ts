import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  backoffAfter,
  GAP_SAFETY_MS,
  requiredGap as gapWithSlack,
  robotsVerdict,
  RobotsCache,
} from '../../../processors/frontier/politeness.js';
import { defaultCrawlConfig as config } from '../../../processors/common/crawl-config.js';

// the rule's value; every gap also carries the fixed clock slack, checked once below
const requiredGap = (...args: Parameters<typeof gapWithSlack>) => gapWithSlack(...args) - GAP_SAFETY_MS;

test('every gap carries a small positive slack against clock and timer disagreement', () => {
  assert.ok(GAP_SAFETY_MS > 0 && GAP_SAFETY_MS <= 50);
  assert.equal(gapWithSlack(config, 0, 0), 1000 + GAP_SAFETY_MS);
});

test('the gap is never below the min-delay floor', () => {
  assert.equal(requiredGap(config, 0, 0), 1000);
  assert.equal(requiredGap(config, 50, 0), 1000);
  assert.equal(requiredGap(config, -5, 0), 1000, 'a negative duration counts as 0');
  assert.equal(requiredGap(config, 0, 500), 1000, 'a Crawl-delay below the floor does not lower it');
});

test('frontier waits 10x a slow fetch before the next request to that host', () => {
  assert.equal(requiredGap(config, 350, 0), 3500);
  assert.equal(requiredGap(config, 2000, 5000), 20000);
});

test('Crawl-delay is honoured up to maxCrawlDelayMs and paced at the cap beyond it', () => {
  assert.equal(requiredGap(config, 100, 5000), 5000);
  assert.equal(requiredGap(config, 100, 60_000), 60_000);
  assert.equal(requiredGap(config, 100, 3_600_000), 60_000);
  assert.equal(requiredGap(config, 10_000, 3_600_000), 100_000, '10x a slow fetch may exceed the capped Crawl-delay');
});

test('Retry-After is honoured, up to the back-off cap', () => {
  assert.equal(backoffAfter(config, 120_000, 0), 120_000);
  assert.equal(backoffAfter(config, 5_000, 960_000), 5_000, 'Retry-After wins over the doubling');
  assert.equal(backoffAfter(config, 0, 0), 0);
  assert.equal(backoffAfter(config, 86_400_000, 0), 3_600_000);
});

test('without Retry-After the back-off starts at 60 s and doubles to the 1 h cap', () => {
  const seen: number[] = [];
  let b = 0;
  for (let i = 0; i < 9; i++) seen.push((b = backoffAfter(config, null, b)));
  assert.deepEqual(seen, [60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000, 3_600_000, 3_600_000]);
  assert.equal(backoffAfter(config, -1, 0), 60_000, 'a negative Retry-After is ignored');
});

test('robots.txt: 2xx is READY, 4xx other than 429 ALLOW_ALL, an unfollowed 3xx, 429, 5xx and errors UNAVAILABLE', () => {
  for (const s of [200, 204, 299]) assert.equal(robotsVerdict(s, null), 'READY', String(s));
  for (const s of [300, 301, 304, 308]) assert.equal(robotsVerdict(s, null), 'UNAVAILABLE', String(s));
  for (const s of [400, 401, 403, 404, 410, 451]) assert.equal(robotsVerdict(s, null), 'ALLOW_ALL', String(s));
  for (const s of [429, 500, 502, 503, 599]) assert.equal(robotsVerdict(s, null), 'UNAVAILABLE', String(s));
  assert.equal(robotsVerdict(0, null), 'UNAVAILABLE');
  assert.equal(robotsVerdict(0, 'CS_TIMEOUT'), 'UNAVAILABLE');
  assert.equal(robotsVerdict(200, 'CS_TOO_LARGE'), 'UNAVAILABLE', 'an error overrides the status');
});

const ORIGIN = 'https://www.example.com';
const ROBOTS = `# robots.txt for www.example.com
User-agent: crawlstream
Disallow: /private/
Allow: /private/open.html
Crawl-delay: 5

User-agent: otherbot
Crawl-delay: 0.25
Disallow: /tmp

User-agent: *
Disallow: /
`;

test('RobotsCache answers for the product token of the User-Agent', () => {
  const cache = new RobotsCache('crawlstream/0.1 (+https://crawlstream.invalid/bot)');
  assert.equal(cache.isAllowed(ORIGIN, ROBOTS, `${ORIGIN}/`), true);
  assert.equal(cache.isAllowed(ORIGIN, ROBOTS, `${ORIGIN}/public/page.html`), true);
  assert.equal(cache.isAllowed(ORIGIN, ROBOTS, `${ORIGIN}/private/secret.html`), false);
  assert.equal(cache.isAllowed(ORIGIN, ROBOTS, `${ORIGIN}/private/open.html`), true, 'the longer Allow wins');
  assert.equal(cache.crawlDelayMs(ORIGIN, ROBOTS), 5000);
});

test('RobotsCache applies the * group to an agent without its own group', () => {
  const cache = new RobotsCache('unknownbot/1.0');
  assert.equal(cache.isAllowed(ORIGIN, ROBOTS, `${ORIGIN}/public/page.html`), false);
  assert.equal(cache.crawlDelayMs(ORIGIN, ROBOTS), 0);
  const other = new RobotsCache('otherbot');
  assert.equal(other.isAllowed(ORIGIN, ROBOTS, `${ORIGIN}/tmp/x`), false);
  assert.equal(other.isAllowed(ORIGIN, ROBOTS, `${ORIGIN}/private/x`), true);
  assert.equal(other.crawlDelayMs(ORIGIN, ROBOTS), 250, 'fractional seconds');
});

test('RobotsCache allows everything for an empty robots.txt and for URLs of other origins', () => {
  const cache = new RobotsCache('crawlstream/0.1');
  assert.equal(cache.isAllowed(ORIGIN, '', `${ORIGIN}/anything`), true);
  assert.equal(cache.crawlDelayMs(ORIGIN, ''), 0);
  assert.equal(cache.isAllowed(ORIGIN, 'User-agent: *\nDisallow: /', 'https://other.example.org/'), true);
});

test('RobotsCache re-parses when the stored body of an origin changes, and survives eviction', () => {
  const cache = new RobotsCache('crawlstream/0.1', 2);
  assert.equal(cache.isAllowed(ORIGIN, 'User-agent: *\nDisallow: /a', `${ORIGIN}/a`), false);
  assert.equal(cache.isAllowed(ORIGIN, 'User-agent: *\nDisallow: /b', `${ORIGIN}/a`), true);
  for (const o of ['https://a.test', 'https://b.test', 'https://c.test'])
    assert.equal(cache.isAllowed(o, 'User-agent: *\nDisallow: /', `${o}/x`), false);
  assert.equal(cache.isAllowed(ORIGIN, 'User-agent: *\nDisallow: /b', `${ORIGIN}/b`), false);
});

test('RobotsCache holds parsed robots.txt within a byte bound as well as a count, and answers the same once past it', () => {
  // a robots.txt may be 500 KiB: ten thousand of them, the count bound alone, could fill a machine
  const maxBytes = 4 * 2 ** 20;
  const cache = new RobotsCache('crawlstream/0.1 (+https://crawlstream.invalid/bot)', 10_000, maxBytes);
  const body = `User-agent: *\nDisallow: /private/\n${'# padding\n'.repeat(40_000)}`;
  for (let i = 0; i < 40; i++) {
    const origin = `http://h${i}.test`;
    assert.equal(cache.isAllowed(origin, body, `${origin}/private/x`), false);
    assert.equal(cache.isAllowed(origin, body, `${origin}/public`), true);
    assert.ok(cache.bytes <= maxBytes, `${cache.bytes} bytes held after ${i + 1} origins`);
  }
  assert.ok(cache.bytes > 0);
});
