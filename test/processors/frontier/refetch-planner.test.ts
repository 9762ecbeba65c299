import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { RefetchPlanner } from '../../../processors/frontier/refetch-planner.js';
import { emptySiteState } from '../../../processors/frontier/site-policy.js';
import type { PageRecord, SiteState, UrlHistory } from '../../../schemas/types.js';

const SECOND = 1000;
const config = validateCrawlConfig({ recrawlMinMs: 10 * SECOND, recrawlMaxMs: 3_600 * SECOND });
const SITE = 'mixed.test';

function sites(): { ratesOf(site: string): SiteState; ratesChanged(): void; states: Map<string, SiteState> } {
  const states = new Map<string, SiteState>();
  return {
    states,
    ratesOf: (site) => {
      let s = states.get(site);
      if (s === undefined) states.set(site, (s = emptySiteState(site)));
      return s;
    },
    ratesChanged: () => undefined,
  };
}

function page(url: string, fetchTime: number): PageRecord {
  return { url, site: SITE, host: SITE, fetchTime, kind: 'PAGE', depth: 3 } as PageRecord;
}

/** Visits `url` `n` times `everyMs` apart, each finding `changed`; returns its history. */
function visits(planner: RefetchPlanner, url: string, n: number, everyMs: number, changed: boolean): UrlHistory {
  let h: UrlHistory | undefined;
  for (let i = 0; i < n; i++) {
    const p = page(url, 1_000_000 + i * everyMs);
    const choice = planner.plan(p, h, changed, 1, 0.5 / SECOND);
    h = {
      url,
      kind: 'PAGE',
      depth: 3,
      lastFetch: p.fetchTime,
      status: 200,
      etag: null,
      lastModified: null,
      digest: null,
      simhash: null,
      intervalMs: choice.intervalMs,
      nextDue: p.fetchTime + choice.intervalMs,
      visits: i + 1,
      changes: 0,
      queuedAt: 0,
      rateVisits: choice.evidence.visits,
      rateChanges: choice.evidence.changes,
      rateExposureMs: choice.evidence.exposureMs,
      rateBucket: choice.bucket,
    };
  }
  return h!;
}

test("a new page starts from its URL template's evidence, not its site's, once the template has some", () => {
  const s = sites();
  const planner = new RefetchPlanner(config, s);
  // articles (/news/2026/{n}) change at every visit; docs pages (/docs/{word}) never
  for (let i = 0; i < 4; i++) visits(planner, `http://${SITE}/news/2026/${1000 + i}`, 6, 60 * SECOND, true);
  for (const name of ['intro', 'setup', 'usage', 'faq'])
    visits(planner, `http://${SITE}/docs/${name}`, 6, 60 * SECOND, false);
  const state = s.states.get(SITE)!;
  assert.ok(state.templateRates!.length >= 2, JSON.stringify(state.templateRates));
  const firstNews = planner.plan(page(`http://${SITE}/news/2026/2001`, 9e6), undefined, false, 1, 0.5 / SECOND);
  const firstDoc = planner.plan(page(`http://${SITE}/docs/install`, 9e6), undefined, false, 1, 0.5 / SECOND);
  assert.ok(
    firstNews.intervalMs * 10 < firstDoc.intervalMs,
    `a new article in ${firstNews.intervalMs} ms, a new docs page in ${firstDoc.intervalMs} ms`,
  );
  // the host's histogram counts each page once, in its rate's bucket: the eight and the two new ones
  assert.deepEqual(
    state.hostRates!.map((h) => [h.host, h.counts.reduce((a, b) => a + b, 0)]),
    [[SITE, 10]],
  );
});

test('the template table keeps its busiest templates and a new one takes the least-visited slot', () => {
  const s = sites();
  const planner = new RefetchPlanner(config, s);
  for (let t = 0; t < 20; t++)
    visits(planner, `http://${SITE}/t${t}/item/${100 + t}`, 2 + (t % 3), 60 * SECOND, t % 2 === 0);
  const table = s.states.get(SITE)!.templateRates!;
  assert.equal(table.length, 16);
  assert.equal(new Set(table.map((t) => t.key)).size, 16);
});

/** Polls a feed 30 times, each at the interval the planner chose; an item is published every `periodMs`. */
function pollFeed(periodMs: number): number[] {
  const planner = new RefetchPlanner(validateCrawlConfig({ ...config, feedMaxIntervalMs: 600 * SECOND }), sites());
  let h: UrlHistory | undefined;
  let at = 0;
  const intervals: number[] = [];
  for (let i = 0; i < 30; i++) {
    const p = { ...page(`http://${SITE}/feed.xml`, at), kind: 'FEED' as const };
    const changed = h === undefined ? false : Math.floor(at / periodMs) > Math.floor(h.lastFetch / periodMs);
    const c = planner.plan(p, h, changed, 1, 0.5 / SECOND);
    h = {
      ...(h ?? ({} as UrlHistory)),
      url: p.url,
      kind: 'FEED',
      lastFetch: at,
      rateVisits: c.evidence.visits,
      rateChanges: c.evidence.changes,
      rateExposureMs: c.evidence.exposureMs,
      rateBucket: c.bucket,
    };
    intervals.push(c.intervalMs);
    at += c.intervalMs;
  }
  return intervals;
}

test("a feed is polled at about its own change rate; one that never changes grows to its lane's longest", () => {
  // an item every 20 s: it starts at the lane's geometric mean, √(5 s × 600 s) ≈ 55 s
  const busy = pollFeed(20 * SECOND);
  assert.ok(Math.abs(busy[0]! - 54_772) < 1, `first interval ${busy[0]} ms`);
  for (const interval of busy.slice(-10))
    assert.ok(interval >= 10 * SECOND && interval <= 30 * SECOND, `polled every ${busy.join(', ')} ms`);
  const quiet = pollFeed(Infinity);
  assert.equal(quiet.at(-1), 600 * SECOND, `polled every ${quiet.join(', ')} ms`);
  assert.ok(quiet.indexOf(600 * SECOND) <= 3, `polled every ${quiet.join(', ')} ms`);
});

test("each host of a site spends its own budget: a busy host's pages do not slow a quiet host's", () => {
  const s = sites();
  const planner = new RefetchPlanner(config, s);
  // 200 pages of www. and one of blog., all changing at every visit, visited in rounds two minutes
  // apart: www. wants far more than its half a fetch a second, blog. far less
  const urls = [
    ...Array.from({ length: 200 }, (_, i) => `http://www.${SITE}/p${i}.html`),
    `http://blog.${SITE}/post.html`,
  ];
  const histories = new Map<string, UrlHistory>();
  for (let round = 0; round < 4; round++)
    for (const url of urls) {
      const h = histories.get(url);
      const p = { ...page(url, 1_000_000 + round * 120 * SECOND), host: new URL(url).host };
      const c = planner.plan(p, h, round > 0, 1, 0.5 / SECOND);
      histories.set(url, {
        ...(h ?? ({} as UrlHistory)),
        url,
        lastFetch: p.fetchTime,
        intervalMs: c.intervalMs,
        rateVisits: c.evidence.visits,
        rateChanges: c.evidence.changes,
        rateExposureMs: c.evidence.exposureMs,
        rateBucket: c.bucket,
      });
    }
  const quiet = histories.get(urls.at(-1)!)!.intervalMs;
  const busy = urls.slice(-40, -1).map((u) => histories.get(u)!.intervalMs);
  assert.ok(
    quiet * 4 < Math.min(...busy),
    `blog.'s page every ${quiet} ms, www.'s every ${Math.min(...busy)} ms or more`,
  );
  // and www.'s last pages together want about its budget
  const wanted = (200 * 1000) / busy[0]!;
  assert.ok(wanted <= 0.5 * 1.05, `www.'s pages want ${wanted.toFixed(2)} fetches/s`);
  assert.deepEqual(
    s.states.get(SITE)!.hostRates!.map((h) => h.host),
    [`www.${SITE}`, `blog.${SITE}`],
  );
});

test("a page's Last-Modified is evidence from its first visit: one unchanged for a year is let go sooner; one sent as of now says nothing", () => {
  const planner = new RefetchPlanner(config, sites());
  const fetchTime = Date.parse('2026-12-03T09:00:00Z');
  /** The interval after the first visit and after one unchanged revisit, `firstMs` later. */
  const twoVisits = (path: string, lastModified: string | null): number[] => {
    const first = { ...page(`http://${SITE}/${path}`, fetchTime), lastModified };
    const a = planner.plan(first, undefined, false, 1, 0.5 / SECOND);
    const previous = {
      url: first.url,
      lastFetch: fetchTime,
      intervalMs: a.intervalMs,
      rateVisits: a.evidence.visits,
      rateChanges: a.evidence.changes,
      rateExposureMs: a.evidence.exposureMs,
      rateBucket: a.bucket,
    } as UrlHistory;
    const b = planner.plan({ ...first, fetchTime: fetchTime + a.intervalMs }, previous, false, 1, 0.5 / SECOND);
    return [a.intervalMs, b.intervalMs];
  };
  const old = twoVisits('old.html', 'Tue, 03 Dec 2025 09:00:00 GMT');
  const none = twoVisits('none.html', null);
  const now = twoVisits('now.html', 'Thu, 03 Dec 2026 09:00:00 GMT');
  const garbled = twoVisits('garbled.html', 'yesterday-ish');
  assert.ok(old[0]! <= none[0]!, `first intervals ${old[0]} vs ${none[0]}`);
  assert.equal(old[1], config.recrawlMaxMs, `after a year unchanged and one revisit: ${old[1]} ms`);
  assert.ok(none[1]! < config.recrawlMaxMs / 4, `without Last-Modified: ${none[1]} ms`);
  assert.deepEqual(now, none);
  assert.deepEqual(garbled, none);
});
