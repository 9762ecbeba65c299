import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { FetchRequest, FetchResult, LinkBatch, PageRecord, UrlHistory } from '../../../schemas/types.js';
import type { KeyValueStore } from '../../../state/state-store.js';
import { HISTORY_STORE } from '../../../processors/frontier/frontier-stores.js';
import { fetchResultFor } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

const SITE = 'fresh.test';
const URL_A = 'http://fresh.test/a';
// compressed time: revisits between 10 s and 600 s; the first interval is their geometric mean
const config = validateCrawlConfig({ recrawlMinMs: 10_000, recrawlMaxMs: 600_000, feedMaxIntervalMs: 20_000 });

function answer(r: FetchRequest, now: number, status = 200, robotsBody: string | null = null): FetchResult {
  return fetchResultFor(r, now, { status, robotsBody, remoteAddress: '127.0.0.1' });
}

function record(r: FetchRequest, fetchTime: number, over: Partial<PageRecord>): PageRecord {
  return {
    url: r.url,
    canonicalUrl: null,
    site: r.site,
    host: r.host,
    fetchTime,
    status: 200,
    contentType: 'text/html',
    contentLength: 100,
    payloadDigest: 'sha1:AAAA',
    simhash: Buffer.from('00000000000000ff', 'hex'),
    duplicateOf: null,
    warcFile: null,
    warcOffset: null,
    warcLength: null,
    outlinkCount: 0,
    depth: r.depth,
    errorCode: null,
    redirectTarget: null,
    charset: null,
    language: null,
    noindex: false,
    kind: r.kind,
    visit: r.visit ?? 0,
    changed: false,
    notModified: false,
    previousFetchTime: r.previousFetchTime ?? null,
    etag: '"v1"',
    lastModified: null,
    parserVersion: 1,
    reparsed: false,
    warcUri: null,
    ...over,
  };
}

/** Seeds URL_A at depth 2 (no importance bonus), answers robots.txt, and returns the first page lease. */
async function firstVisit(
  h: FrontierHarness,
  links = [{ url: URL_A, depth: 2, redirectHops: 0 }],
): Promise<FetchRequest> {
  const seeds: LinkBatch = { site: SITE, sourceUrl: null, discoveredAt: h.clock, links };
  h.feed(TOPICS.links, SITE, seeds);
  await h.advance(2_000);
  const robots = h.requests.find((r) => r.kind === 'ROBOTS')!;
  h.feed(TOPICS.fetchResults, SITE, answer(robots, h.clock, 200, 'User-agent: *\nAllow: /\n'));
  await h.advance(2_000);
  const page = h.requests.at(-1)!;
  assert.equal(page.url, links[0]!.url);
  return page;
}

/** Answers `r` with `status` and its page record, then returns the next lease of `url` within `withinMs`. */
async function visit(
  h: FrontierHarness,
  r: FetchRequest,
  status: number,
  over: Partial<PageRecord>,
  withinMs: number,
): Promise<{ next: FetchRequest | undefined; at: number; fetchedAt: number }> {
  const fetchedAt = h.clock;
  h.feed(TOPICS.fetchResults, SITE, answer(r, fetchedAt, status));
  h.feed(TOPICS.pageRecords, SITE, record(r, fetchedAt, { status, ...over }));
  const before = h.requests.length;
  for (let waited = 0; waited < withinMs; waited += 1_000) {
    await h.advance(1_000, 500);
    const next = h.requests.slice(before).find((q) => q.url === r.url);
    if (next) return { next, at: h.clock, fetchedAt };
  }
  return { next: undefined, at: h.clock, fetchedAt };
}

test('a fetched page falls due again after its first interval and its revisit carries the last visit’s validators', async () => {
  const h = await FrontierHarness.open(config);
  try {
    const first = await firstVisit(h);
    assert.equal(first.visit, 0);
    assert.equal(first.ifNoneMatch, null);
    const { next, at, fetchedAt } = await visit(
      h,
      first,
      200,
      { lastModified: 'Tue, 01 Dec 2026 10:00:00 GMT' },
      200_000,
    );
    assert.ok(next, 'the page never came due again');
    // first interval: √(10 s × 600 s) ≈ 77.5 s
    assert.ok(at - fetchedAt >= 77_000 && at - fetchedAt <= 80_000, `revisited after ${at - fetchedAt} ms`);
    assert.equal(next.visit, 1);
    assert.equal(next.ifNoneMatch, '"v1"');
    assert.equal(next.ifModifiedSince, 'Tue, 01 Dec 2026 10:00:00 GMT');
    assert.equal(next.previousDigest, 'sha1:AAAA');
    assert.equal(next.previousFetchTime, fetchedAt);
  } finally {
    await h.close();
  }
});

test('--recrawl-policy adaptive: a 304 lengthens the interval by half and a change halves it, within --recrawl-min and --recrawl-max', async () => {
  const h = await FrontierHarness.open(validateCrawlConfig({ ...config, recrawlPolicy: 'adaptive' }));
  try {
    const first = await firstVisit(h);
    let r = (await visit(h, first, 200, {}, 200_000)).next!;
    // not modified: 77.5 s × 1.5 ≈ 116 s
    const nm = await visit(h, r, 304, { notModified: true, payloadDigest: null, etag: null }, 200_000);
    assert.ok(nm.next, 'no revisit after the 304');
    assert.ok(nm.at - nm.fetchedAt >= 115_000 && nm.at - nm.fetchedAt <= 118_000, `after ${nm.at - nm.fetchedAt} ms`);
    assert.equal(nm.next.ifNoneMatch, '"v1"', 'a 304 without an ETag must keep the last one');
    assert.equal(nm.next.previousDigest, 'sha1:AAAA', 'a 304 must keep the last payload digest');
    r = nm.next;
    // changed (another payload, SimHash 8 bits away): 116 s × 0.5 ≈ 58 s
    const ch = await visit(
      h,
      r,
      200,
      { payloadDigest: 'sha1:BBBB', simhash: Buffer.from('000000000000ff00', 'hex') },
      200_000,
    );
    assert.ok(ch.next);
    assert.ok(ch.at - ch.fetchedAt >= 57_000 && ch.at - ch.fetchedAt <= 60_000, `after ${ch.at - ch.fetchedAt} ms`);
    r = ch.next;
    // a near-identical payload (SimHash 1 bit away: a timestamp) is no change: × 1.5 ≈ 87 s
    const near = await visit(
      h,
      r,
      200,
      { payloadDigest: 'sha1:CCCC', simhash: Buffer.from('000000000000ff01', 'hex') },
      200_000,
    );
    assert.ok(near.next);
    assert.ok(
      near.at - near.fetchedAt >= 86_000 && near.at - near.fetchedAt <= 89_000,
      `after ${near.at - near.fetchedAt} ms`,
    );
    assert.equal(h.task.metrics.counter('revisit_outcomes', 'not-modified'), 1);
    assert.equal(h.task.metrics.counter('revisit_outcomes', 'changed'), 1);
    assert.equal(h.task.metrics.counter('revisit_outcomes', 'unchanged'), 1);
  } finally {
    await h.close();
  }
});

test('the schedule survives a crash: a URL whose visit was committed still falls due after a restart', async () => {
  const h = await FrontierHarness.open(config);
  try {
    const first = await firstVisit(h);
    const fetchedAt = h.clock;
    h.feed(TOPICS.fetchResults, SITE, answer(first, fetchedAt));
    h.feed(TOPICS.pageRecords, SITE, record(first, fetchedAt, {}));
    h.commit();
    await h.advance(5_000);
    await h.crash();
    const before = h.requests.length;
    await h.advance(100_000, 1_000);
    const again = h.requests.slice(before).filter((q) => q.url === URL_A);
    assert.equal(again.length, 1, 'the committed schedule was lost in the crash');
    assert.equal(again[0]!.visit, 1);
  } finally {
    await h.close();
  }
});

test('a sitemap lastmod newer than the last fetch makes a known URL due at once, an older one does not', async () => {
  const h = await FrontierHarness.open(config);
  try {
    const first = await firstVisit(h);
    const fetchedAt = h.clock;
    h.feed(TOPICS.fetchResults, SITE, answer(first, fetchedAt));
    h.feed(TOPICS.pageRecords, SITE, record(first, fetchedAt, {}));
    await h.advance(3_000);
    const sitemapBatch = (lastmod: number): LinkBatch => ({
      site: SITE,
      sourceUrl: 'http://fresh.test/sitemap.xml',
      discoveredAt: h.clock,
      fromFeed: true,
      links: [{ url: URL_A, depth: 1, redirectHops: 0, kind: 'PAGE', lastmod }],
    });
    const before = h.requests.length;
    h.feed(TOPICS.links, SITE, sitemapBatch(fetchedAt - 60_000));
    await h.advance(5_000);
    assert.equal(h.requests.length, before, 'an older lastmod made the URL due');
    h.feed(TOPICS.links, SITE, sitemapBatch(h.clock - 1_000));
    await h.advance(5_000);
    const again = h.requests.slice(before).filter((q) => q.url === URL_A);
    assert.equal(again.length, 1, 'a newer lastmod did not make the URL due now');
    assert.equal(again[0]!.visit, 1);
  } finally {
    await h.close();
  }
});

test('a robots.txt Sitemap: line of the site is queued as a sitemap, and sitemaps revisit in their faster lane', async () => {
  const h = await FrontierHarness.open(config);
  try {
    const seeds: LinkBatch = {
      site: SITE,
      sourceUrl: null,
      discoveredAt: h.clock,
      links: [{ url: URL_A, depth: 0, redirectHops: 0 }],
    };
    h.feed(TOPICS.links, SITE, seeds);
    await h.advance(2_000);
    const robots = h.requests.find((r) => r.kind === 'ROBOTS')!;
    const body =
      'User-agent: *\nAllow: /\nSitemap: http://fresh.test/sitemap.xml\nSitemap: http://other.example/sitemap.xml\n';
    h.feed(TOPICS.fetchResults, SITE, answer(robots, h.clock, 200, body));
    await h.advance(2_000);
    // the host's single flight: the page leased first, then the sitemap
    const pageLease = h.requests.find((r) => r.kind === 'PAGE')!;
    h.feed(TOPICS.fetchResults, SITE, answer(pageLease, h.clock));
    await h.advance(3_000);
    const sitemap = h.requests.find((r) => r.kind === 'SITEMAP');
    assert.ok(sitemap, `no sitemap lease in ${h.requests.map((r) => `${r.kind} ${r.url}`).join(', ')}`);
    assert.equal(sitemap.url, 'http://fresh.test/sitemap.xml');
    assert.ok(!h.requests.some((r) => r.url.includes('other.example')), 'a sitemap of another site was queued');
    const fetchedAt = h.clock;
    h.feed(TOPICS.fetchResults, SITE, answer(sitemap, fetchedAt));
    h.feed(TOPICS.pageRecords, SITE, record(sitemap, fetchedAt, { contentType: 'application/xml' }));
    const before = h.requests.length;
    // a sitemap's first interval is the geometric mean of its lane, [--recrawl-min / 2, --feed-max-interval]: 10 s here
    await h.advance(8_000, 500);
    assert.equal(h.requests.slice(before).filter((q) => q.kind === 'SITEMAP').length, 0, 'the sitemap came due early');
    await h.advance(4_000, 500);
    const again = h.requests.slice(before).filter((q) => q.kind === 'SITEMAP');
    assert.equal(again.length, 1, 'the sitemap did not come due in its lane (half --recrawl-min)');
  } finally {
    await h.close();
  }
});

test('--until-idle waits for URLs due within --recrawl-min and not for later ones', async () => {
  const h = await FrontierHarness.open(config);
  try {
    const first = await firstVisit(h);
    h.feed(TOPICS.fetchResults, SITE, answer(first, h.clock));
    h.feed(TOPICS.pageRecords, SITE, record(first, h.clock, {}));
    await h.advance(3_000);
    // due in ≈ 77 s: beyond the 10 s --recrawl-min, so a run --until-idle may end
    assert.equal(h.task.isIdle(), true);
    await h.advance(70_000, 1_000);
    assert.equal(h.task.isIdle(), false, 'a URL due within --recrawl-min must keep the crawl going');
  } finally {
    await h.close();
  }
});

test('with --no-sitemaps a robots.txt Sitemap: line is not followed', async () => {
  const h = await FrontierHarness.open(validateCrawlConfig({ ...config, sitemaps: false }));
  try {
    const seeds: LinkBatch = {
      site: SITE,
      sourceUrl: null,
      discoveredAt: h.clock,
      links: [{ url: URL_A, depth: 0, redirectHops: 0 }],
    };
    h.feed(TOPICS.links, SITE, seeds);
    await h.advance(2_000);
    const robots = h.requests.find((r) => r.kind === 'ROBOTS')!;
    h.feed(
      TOPICS.fetchResults,
      SITE,
      answer(robots, h.clock, 200, 'User-agent: *\nSitemap: http://fresh.test/sitemap.xml\n'),
    );
    await h.advance(2_000);
    h.feed(TOPICS.fetchResults, SITE, answer(h.requests.at(-1)!, h.clock));
    await h.advance(5_000);
    assert.deepEqual(
      h.requests.map((r) => r.kind),
      ['ROBOTS', 'PAGE'],
    );
  } finally {
    await h.close();
  }
});

test('--recrawl-policy optimal: a page seen changing comes back soon while its host has budget; one seen unchanged waits longer, at most twice what was watched', async () => {
  const h = await FrontierHarness.open(config);
  try {
    const first = await firstVisit(h);
    // first interval: √(10 s × 600 s) ≈ 77.5 s, as with no evidence there is nothing better
    const a = await visit(h, first, 200, {}, 200_000);
    assert.ok(a.at - a.fetchedAt >= 77_000 && a.at - a.fetchedAt <= 80_000, `after ${a.at - a.fetchedAt} ms`);
    // unchanged (a 304): no change seen in ~79 s, so the interval is twice what was watched: ~158 s
    const b = await visit(h, a.next!, 304, { notModified: true, payloadDigest: null, etag: null }, 400_000);
    assert.ok(b.at - b.fetchedAt >= 154_000 && b.at - b.fetchedAt <= 163_000, `after ${b.at - b.fetchedAt} ms`);
    // changed: one page alone on its host fits its budget (half of a fetch a second), so it is
    // fetched OVERPOLL (16) times per expected change: one change in ~240 s watched (with its
    // site's prior, the same evidence) estimates a period of ~200 s, so ~12.5 s
    const c = await visit(
      h,
      b.next!,
      200,
      { payloadDigest: 'sha1:BBBB', simhash: Buffer.from('000000000000ff00', 'hex') },
      400_000,
    );
    assert.ok(c.at - c.fetchedAt >= 11_000 && c.at - c.fetchedAt <= 16_000, `after ${c.at - c.fetchedAt} ms`);
    // the history keeps the evidence: two revisits observed (the older weighing 0.9), one change
    const history = (h.task.stores.get(HISTORY_STORE) as KeyValueStore<Buffer, UrlHistory>).range(
      Buffer.alloc(0),
      Buffer.alloc(9, 0xff),
    );
    const kept = [...history][0]![1];
    assert.ok(Math.abs(kept.rateVisits! - 1.9) < 1e-9 && kept.rateChanges === 1, JSON.stringify(kept));
    assert.ok(kept.rateBucket! > 0);
  } finally {
    await h.close();
  }
});

test('--recrawl-policy optimal: a page that never changes lengthens to --recrawl-max', async () => {
  const h = await FrontierHarness.open(config);
  try {
    let r = await firstVisit(h);
    const gaps: number[] = [];
    for (let i = 0; i < 5; i++) {
      const v = await visit(h, r, 200, {}, 700_000);
      assert.ok(v.next, `no revisit after visit ${i + 1}`);
      gaps.push(Math.round((v.at - v.fetchedAt) / 1000));
      r = v.next;
    }
    // 77.5 s, then twice the time watched (decayed: change-rate.ts EVIDENCE_DECAY) up to the
    // 600 s cap: about 155 s, 460 s, 600 s, 600 s (each gap a second or two after its due time)
    let watched = 0;
    for (let i = 0; i < gaps.length; i++) {
      const due = i === 0 ? 77.5 : Math.min(600, 2 * watched);
      assert.ok(gaps[i]! >= due - 1 && gaps[i]! <= due + 4, `gap ${i + 1} of ${gaps.join(', ')} s, due after ${due} s`);
      watched = watched * 0.9 + gaps[i]!;
    }
    assert.equal(gaps.at(-1)! >= 600, true);
  } finally {
    await h.close();
  }
});

for (const itemsFirst of [true, false])
  test(`a feed's item dates set its polling from its first read (${itemsFirst ? "items before the feed's page record" : 'page record first'}): an item every 20 s, a poll about every 20 s`, async () => {
    // a wide feed lane, [5 s, 600 s]: with no dates a feed's first interval would be √(5 × 600) ≈ 55 s
    const h = await FrontierHarness.open(validateCrawlConfig({ ...config, feedMaxIntervalMs: 600_000 }));
    const FEED = 'http://fresh.test/feed.xml';
    try {
      const feed = await firstVisit(h, [
        { url: FEED, depth: 0, redirectHops: 0, kind: 'FEED' } as LinkBatch['links'][0],
      ]);
      assert.equal(feed.kind, 'FEED');
      const fetchedAt = h.clock;
      h.feed(TOPICS.fetchResults, SITE, answer(feed, fetchedAt));
      // the items (on another host, whose leases go unanswered here; newest 5 s before the read,
      // then every 20 s), then the feed's page record
      const items: LinkBatch = {
        site: SITE,
        sourceUrl: FEED,
        discoveredAt: fetchedAt,
        fromFeed: true,
        links: [5, 25, 45, 65].map((ago, i) => ({
          url: `http://items.fresh.test/item${i}`,
          depth: 1,
          redirectHops: 0,
          kind: 'PAGE' as const,
          lastmod: fetchedAt - ago * 1000,
        })),
      };
      const pageRecord = record(feed, fetchedAt, { contentType: 'application/rss+xml' });
      if (!itemsFirst) h.feed(TOPICS.pageRecords, SITE, pageRecord);
      h.feed(TOPICS.links, SITE, items);
      if (itemsFirst) h.feed(TOPICS.pageRecords, SITE, pageRecord);
      const before = h.requests.length;
      let next: FetchRequest | undefined;
      for (let waited = 0; waited < 60_000 && next === undefined; waited += 1_000) {
        await h.advance(1_000, 500);
        next = h.requests.slice(before).find((q) => q.url === FEED);
      }
      // 4 items over the 65 s up to the read: one every ~21.7 s (not a whole ms: stored rounded)
      assert.ok(
        next !== undefined && h.clock - fetchedAt >= 19_000 && h.clock - fetchedAt <= 25_000,
        `polled again after ${h.clock - fetchedAt} ms`,
      );
    } finally {
      await h.close();
    }
  });
