import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import {
  MAX_STATUS_HOSTS,
  RecentOutcomes,
  SITE_QUERY,
  siteStatus,
  type SiteStatus,
  type SiteStatusSource,
} from '../../../processors/frontier/site-status.js';
import { newHost } from '../../../processors/frontier/host-state.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { FetchRequest, FetchResult, HostState } from '../../../schemas/types.js';
import { fetchResultFor, seedLinks } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

const config = validateCrawlConfig({ backoffJitterPercent: 0 });

function siteOf(h: FrontierHarness, site: string): SiteStatus {
  const answer = h.task.query('frontier', SITE_QUERY, site);
  assert.ok(answer, 'the frontier registers the site query');
  // what the ops server sends: it must survive JSON
  return JSON.parse(JSON.stringify(answer.value)) as SiteStatus;
}

/** Advances until the frontier has leased something new; returns it. */
async function nextLease(h: FrontierHarness): Promise<FetchRequest> {
  const before = h.requests.length;
  for (let i = 0; i < 400 && h.requests.length === before; i++) await h.advance(50, 50);
  assert.ok(h.requests.length > before, 'no lease');
  return h.requests[h.requests.length - 1]!;
}

function answer(h: FrontierHarness, request: FetchRequest, over: Partial<FetchResult>): void {
  h.feed(TOPICS.fetchResults, request.site, fetchResultFor(request, h.clock, over));
}

test('the frontier site query follows a host through queued, in flight, backed off and parked', async (t) => {
  const h = await FrontierHarness.open(config);
  t.after(() => h.close());

  assert.deepEqual(siteOf(h, 'a.test').hosts, [], 'an unknown site has no hosts');
  seedLinks(h, 'a.test', ['http://a.test/', 'http://a.test/x', 'http://www.a.test/y']);
  let s = siteOf(h, 'a.test');
  assert.deepEqual(
    s.hosts.map((x) => [x.host, x.phase, x.queued]),
    [
      ['a.test', 'waiting', 2],
      ['www.a.test', 'waiting', 1],
    ],
    'seeded hosts wait the restart gap',
  );
  assert.equal(s.queued, 3);
  assert.equal(s.budget?.admitted, 3);
  assert.equal(s.budget?.seeded, true);
  assert.ok(s.hosts[0]!.nextEligibleAt! > h.clock);

  const robots = await nextLease(h);
  assert.equal(robots.kind, 'ROBOTS');
  const host = robots.host;
  assert.equal(siteOf(h, 'a.test').hosts.find((x) => x.host === host)?.phase, 'in-flight');
  answer(h, robots, { status: 200, robotsBody: 'User-agent: *\nDisallow:\n' });
  s = siteOf(h, 'a.test');
  const ready = s.hosts.find((x) => x.host === host)!;
  assert.equal(ready.robots[0]?.state, 'READY');
  assert.equal(ready.robots[0]?.due, false);
  assert.equal(ready.lastOutcomes.at(-1)?.status, 200);

  // a 429 with Retry-After: backed off until then, and the reason says so
  let page = await nextLease(h);
  while (page.host !== host || page.kind !== 'PAGE') {
    answer(h, page, page.kind === 'ROBOTS' ? { status: 404 } : {});
    page = await nextLease(h);
  }
  const at = h.clock;
  answer(h, page, { status: 429, retryAfterMs: 30_000 });
  const backedOff = siteOf(h, 'a.test').hosts.find((x) => x.host === host)!;
  assert.equal(backedOff.phase, 'backed-off');
  assert.equal(backedOff.backoff?.active, true);
  assert.equal(backedOff.backoff?.since, at);
  assert.ok(backedOff.backoff!.until >= at + 30_000);
  assert.equal(backedOff.backoff?.why, 'HTTP 429 with Retry-After 30 s');
  assert.ok(backedOff.nextEligibleAt! >= at + 30_000);

  // a robots.txt answering 503: parked, with the reason
  seedLinks(h, 'b.test', ['http://b.test/']);
  let lease = await nextLease(h);
  while (lease.host !== 'b.test') {
    answer(h, lease, {});
    lease = await nextLease(h);
  }
  answer(h, lease, { status: 503 });
  const parked = siteOf(h, 'b.test').hosts[0]!;
  assert.equal(parked.phase, 'parked');
  assert.match(parked.parkedReason!, /^robots\.txt unavailable \(http:\/\/b\.test\)/);
  assert.deepEqual(
    parked.robots.map((r) => [r.state, r.failures, r.due]),
    [['UNAVAILABLE', 1, true]],
  );

  // an operator's pause holds the site's hosts at their next turn
  h.feed(TOPICS.control, 'a.test', {
    site: 'a.test',
    action: 'PAUSE',
    minGapMs: null,
    issuedAt: h.clock,
    issuedBy: 't',
  });
  assert.equal(siteOf(h, 'a.test').control?.paused, true);
  assert.ok(
    siteOf(h, 'a.test').hosts.every((x) => x.phase === 'held' || x.phase === 'in-flight'),
    'held from the command on',
  );
  await h.advance(40_000, 500);
  const held = siteOf(h, 'a.test').hosts.filter((x) => x.phase === 'held');
  assert.ok(held.length > 0, JSON.stringify(siteOf(h, 'a.test').hosts));
  assert.equal(held[0]!.parkedReason, 'site paused by an operator');
});

test('the site view lists at most MAX_STATUS_HOSTS hosts, counting the rest', () => {
  const hosts = new Map<string, HostState>();
  for (let i = 0; i < 3 * MAX_STATUS_HOSTS; i++) {
    const s = newHost(`h${i}.big.test`, `http://h${i}.big.test`, 'big.test');
    s.tailSeq = 1;
    hosts.set(s.host, s);
  }
  hosts.set('other.test', newHost('other.test', 'http://other.test', 'other.test'));
  const src: SiteStatusSource = {
    now: 5_000,
    robotsTtlMs: 1_000,
    activeHosts: new Set(hosts.keys()),
    host: (h) => hosts.get(h),
    isParked: () => false,
    isHeld: () => false,
    eligibleAt: () => 0,
    site: () => undefined,
    budget: () => 0,
    templateAllowance: { base: 10, perInlink: 1 },
    control: () => undefined,
    outcomes: () => [],
    frontBands: () => [1, 2, 0, 0, 3],
    backQueued: 7,
  };
  const s = siteStatus(src, 'big.test');
  assert.equal(s.hosts.length, MAX_STATUS_HOSTS);
  assert.equal(s.hostsTotal, 3 * MAX_STATUS_HOSTS);
  assert.ok(s.hosts.every((x) => x.phase === 'ready' && x.host.endsWith('.big.test')));
  assert.deepEqual(s.deferred, {
    partitionTotal: 6,
    byBand: { seed: 1, important: 2, normal: 0, suspect: 0, revisit: 3 },
  });
  assert.equal(s.budget, null);
});

test('recent outcomes keep the last five of each host and forget the least recently answered host', () => {
  const o = new RecentOutcomes();
  const result = (host: string, status: number) =>
    ({ host, url: `http://${host}/`, kind: 'PAGE', status, errorCode: null, retryAfterMs: null }) as FetchResult;
  for (let i = 0; i < 8; i++) o.note(result('a.test', 200 + i), i);
  assert.deepEqual(
    o.of('a.test').map((x) => x.status),
    [203, 204, 205, 206, 207],
  );
  for (let i = 0; i < 4_096; i++) o.note(result(`h${i}.test`, 200), i);
  assert.equal(o.of('a.test').length, 0, 'the oldest host is forgotten past 4096');
  assert.equal(o.of('h0.test').length, 1);
});
