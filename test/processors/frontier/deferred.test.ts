import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics } from '../../../core/metrics.js';
import { validateCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import { admitLinks } from '../../../processors/frontier/admission.js';
import {
  DeferredSet,
  decodeDeferred,
  encodeDeferred,
  type DeferredUrl,
} from '../../../processors/frontier/deferred-set.js';
import { releaseDeferred } from '../../../processors/frontier/deferred-release.js';
import { SitePolicy } from '../../../processors/frontier/site-policy.js';
import { SeenSet } from '../../../state/seen-set.js';
import type { LinkBatch, SiteState } from '../../../schemas/types.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import { MemoryFingerprintStore } from '../../state/seen-set-memory-store.js';
import { FakeFetcher } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';
import { memoryKv } from './memory-kv.js';

const waiting = (url: string, reason: DeferredUrl['reason'] = 'site-budget'): DeferredUrl => ({
  url,
  depth: 3,
  redirectHops: 1,
  kind: 'PAGE',
  discoveredAt: 1_700_000_000_123,
  reason,
  hostKey: reason === 'url-template' ? 0xdeadbeef : 0,
  templateKey: reason === 'url-template' ? 0x01020304 : 0,
});

test('a deferred URL is stored whole: encoding and decoding give it back', () => {
  for (const d of [waiting('https://a.test/p/1'), waiting('https://ä.test/ü?q=1', 'url-template')])
    assert.deepEqual(decodeDeferred(encodeDeferred(d)), d);
});

test('the deferred set persists: a new set on the same store has the same counts and gives URLs back oldest first', () => {
  const store = memoryKv<Buffer>('frontier-deferred');
  const first = new DeferredSet(store);
  first.defer('a.test', [waiting('https://a.test/1'), waiting('https://a.test/2', 'url-template')], 5_000);
  first.defer('a.test', [waiting('https://a.test/3')], 6_000);
  first.defer('b.test', [waiting('https://b.test/1')], 7_000);
  assert.equal(first.size, 4);

  const restored = new DeferredSet(store);
  assert.equal(restored.size, 4);
  assert.equal(restored.waiting('a.test', 'site-budget'), 2);
  assert.equal(restored.waiting('a.test', 'url-template'), 1);
  assert.deepEqual(
    new Map(restored.sites()),
    new Map([
      ['a.test', 6_000],
      ['b.test', 7_000],
    ]),
  );
  const oldest = [...restored.oldest('a.test', 'site-budget', 10)];
  assert.deepEqual(
    oldest.map(([, u]) => u.url),
    ['https://a.test/1', 'https://a.test/3'],
  );
  restored.release('a.test', 'site-budget', [oldest[0]![0]]);
  restored.defer('a.test', [waiting('https://a.test/4')], 6_000);
  // the sequence goes on after a restart: a URL deferred later is released later
  const again = new DeferredSet(store);
  assert.deepEqual(
    [...again.oldest('a.test', 'site-budget', 10)].map(([, u]) => u.url),
    ['https://a.test/3', 'https://a.test/4'],
  );
  assert.equal(again.size, 4);
  // a site with nothing left waiting leaves nothing behind, in RAM or in the store
  again.release(
    'b.test',
    'site-budget',
    [...again.oldest('b.test', 'site-budget', 10)].map(([k]) => k),
  );
  assert.equal(again.has('b.test'), false);
  assert.equal([...store.map.keys()].filter((k) => k.includes('b.test')).length, 0);
});

function setup(partial: Partial<CrawlConfig>) {
  const config = validateCrawlConfig(partial);
  const seen = new SeenSet(new MemoryFingerprintStore(), { expectedCount: 10_000, falsePositiveRate: 0.01 });
  seen.init();
  const metrics = new Metrics();
  const sites = new SitePolicy(memoryKv<SiteState>('frontier-sites'), config);
  const deferred = new DeferredSet(memoryKv<Buffer>('frontier-deferred'));
  const admit = (site: string, from: string | null, urls: string[]) => {
    const batch: LinkBatch = {
      site,
      sourceUrl: from,
      discoveredAt: 1,
      links: urls.map((url) => ({ url, depth: 1, redirectHops: 0 })),
    };
    return admitLinks(batch, 1, config, seen, sites, deferred, metrics).entries.map((e) => e.url);
  };
  /** What the evidence noted so far releases, as the frontier does at the end of a call. */
  const release = () =>
    deferred
      .takePending()
      .flatMap(([site, evidence]) => releaseDeferred(site, evidence, deferred, sites, metrics))
      .map((r) => r.entry.url);
  return { admit, release, metrics, sites, deferred };
}

const pages = (site: string, prefix: string, n: number) =>
  Array.from(
    { length: n },
    (_, i) => `https://${site}/${prefix}-${'abcdefghij'[i % 10]}${'klmnopqrst'[Math.floor(i / 10)]}`,
  );

test('URLs over a site budget wait, oldest first, and each new linking site releases its share; none is admitted twice', () => {
  const { admit, release, metrics, deferred } = setup({ sitePageBudget: 3, siteBudgetPerInlink: 2 });
  const urls = pages('big.test', 'doc', 10);
  assert.deepEqual(admit('big.test', 'https://a.test/', urls), urls.slice(0, 5));
  assert.equal(deferred.waiting('big.test', 'site-budget'), 5);
  assert.deepEqual(release(), [], 'nothing changed, yet URLs were released');
  // linked again from the same site and from itself: no news, not deferred again
  assert.deepEqual(admit('big.test', 'https://a.test/x', urls), []);
  assert.deepEqual(admit('big.test', 'https://big.test/', urls), []);
  assert.equal(deferred.waiting('big.test', 'site-budget'), 5);
  assert.deepEqual(release(), []);
  // another site links in (to a URL already seen): the budget grows by 2, the two oldest go
  assert.deepEqual(admit('big.test', 'https://b.test/', [urls[9]!]), []);
  assert.deepEqual(release(), urls.slice(5, 7));
  assert.deepEqual(admit('big.test', 'https://c.test/', []), []);
  assert.deepEqual(release(), urls.slice(7, 9));
  assert.deepEqual(admit('big.test', 'https://d.test/', []), []);
  assert.deepEqual(release(), urls.slice(9));
  assert.equal(deferred.size, 0);
  assert.deepEqual(admit('big.test', 'https://e.test/', urls), [], 'a released URL was admitted again');
  assert.deepEqual(release(), []);
  assert.equal(metrics.counter('urls_deferred', 'site-budget'), 5);
  assert.equal(metrics.counter('urls_released', 'site-budget'), 5);
  assert.equal(metrics.counter('urls_admitted'), 10);
});

test('template-deferred URLs of a discovered site are released by links into the template from other sites, not by its host running out', () => {
  const { admit, release, metrics, deferred } = setup({ templateAllowance: 4, templateAllowancePerInlink: 4 });
  const items = Array.from({ length: 20 }, (_, i) => `https://shop.test/item/${1000 + i}`);
  assert.equal(admit('shop.test', 'https://shop.test/list', items).length, 4);
  assert.equal(deferred.waiting('shop.test', 'url-template'), 16);
  // a trap's host runs out too: that alone proves nothing about an unseeded site
  deferred.mark('shop.test', { exhausted: true });
  assert.deepEqual(release(), []);
  // another site links to an item already deferred: a URL seen before earns nothing
  assert.deepEqual(admit('shop.test', 'https://blog.test/', [items[19]!]), []);
  assert.deepEqual(release(), []);
  // and to a new one, which goes in and earns its template 4 more
  assert.deepEqual(admit('shop.test', 'https://blog.test/', ['https://shop.test/item/5000']), [
    'https://shop.test/item/5000',
  ]);
  assert.deepEqual(release(), items.slice(4, 8));
  assert.equal(metrics.counter('urls_released', 'url-template'), 4);
  assert.equal(deferred.waiting('shop.test', 'url-template'), 12);
  assert.equal(metrics.counter('urls_dropped', 'url-template'), 0);
});

test('on a seeded site, template-deferred URLs are released once its host runs out: a seed is trusted to its hop limit', () => {
  const { admit, release, sites, deferred } = setup({ templateAllowance: 4 });
  admit('blog.test', null, ['https://blog.test/']);
  assert.equal(sites.seeded('blog.test'), true);
  const posts = Array.from({ length: 30 }, (_, i) => `https://blog.test/page/${i + 2}`);
  assert.equal(admit('blog.test', 'https://blog.test/', posts).length, 4);
  assert.deepEqual(release(), [], 'released before its host ran out');
  deferred.mark('blog.test', { exhausted: true });
  assert.deepEqual(release(), posts.slice(4));
  assert.equal(deferred.size, 0);
});

test('on a discovered site, template-deferred URLs are released once its host runs out and its counted pages stop naming new ones', () => {
  const { admit, release, deferred } = setup({ templateAllowance: 4 });
  admit('blog.test', 'https://elsewhere.test/', ['https://blog.test/']);
  const posts = Array.from({ length: 30 }, (_, i) => `https://blog.test/page/${i + 2}`);
  assert.equal(admit('blog.test', 'https://blog.test/', posts).length, 4);
  deferred.mark('blog.test', { exhausted: true });
  assert.deepEqual(release(), [], 'released before any page showed the site runs out');
  // the four admitted pages are fetched: each links its neighbours, all known already
  for (let i = 0; i < 4; i++) admit('blog.test', posts[i]!, [posts[i + 1]!, 'https://blog.test/']);
  assert.deepEqual(release(), [], 'released before its host ran out');
  deferred.mark('blog.test', { exhausted: true });
  assert.deepEqual(release(), posts.slice(4));
  assert.equal(deferred.size, 0);
});

test('a discovered trap is not released by running out: its counted pages keep naming new URLs', () => {
  const { admit, release, deferred } = setup({ templateAllowance: 4 });
  admit('cal.test', 'https://elsewhere.test/', ['https://cal.test/']);
  const day = (n: number) =>
    `https://cal.test/cal/2031/${String(1 + Math.floor(n / 28)).padStart(2, '0')}/${String(1 + (n % 28)).padStart(2, '0')}/`;
  let next = 0;
  let fetched = 0;
  const queue = [day(next++)];
  admit('cal.test', 'https://cal.test/', queue);
  // every page fetched names the next day, which is new; each time the host runs out, nothing more goes
  for (let round = 0; round < 20; round++) {
    while (queue.length > 0) {
      const page = queue.shift()!;
      fetched++;
      queue.push(...admit('cal.test', page, [day(next++), day(next++)]));
    }
    deferred.mark('cal.test', { exhausted: true });
    queue.push(...release());
  }
  assert.ok(fetched <= 3 * 4, `a discovered trap fetched ${fetched} pages`);
  assert.ok(deferred.waiting('cal.test', 'url-template') > 0);
});

test('a deferred URL is fetched after a link from a new site raises its site budget (it was seen, then dropped, before)', async () => {
  // one page per host, so each admitted URL shows up as its own host's requests
  const config = validateCrawlConfig({ sitePageBudget: 1, siteBudgetPerInlink: 2 });
  const h = await FrontierHarness.open(config);
  try {
    const web = new FakeFetcher(h);
    const urls = Array.from({ length: 6 }, (_, i) => `http://h${i}.many.test/`);
    const link = (from: string, to: string[]) =>
      h.feed(TOPICS.links, 'many.test', {
        site: 'many.test',
        sourceUrl: from,
        discoveredAt: h.clock,
        links: to.map((url) => ({ url, depth: 1, redirectHops: 0 })),
      } satisfies LinkBatch);
    link('http://a.test/', urls);
    await web.run(5_000);
    const fetched = () =>
      web
        .pages()
        .map((f) => f.request.url)
        .sort();
    assert.deepEqual(fetched(), urls.slice(0, 3), 'budget 1 + 2 for one linking site');
    // a second site links to a URL the budget held back: the budget grows by 2, two more are fetched
    link('http://b.test/', [urls[5]!]);
    await web.run(5_000);
    assert.deepEqual(fetched(), urls.slice(0, 5));
  } finally {
    await h.close();
  }
});

test('deferred URLs survive a restart of the frontier task: a link from a new site afterwards still releases them', async () => {
  const config = validateCrawlConfig({ sitePageBudget: 2, siteBudgetPerInlink: 1 });
  const h = await FrontierHarness.open(config);
  try {
    const urls = Array.from({ length: 6 }, (_, i) => `http://h${i}.wide.test/`);
    const link = (from: string, to: string[]) =>
      h.feed(TOPICS.links, 'wide.test', {
        site: 'wide.test',
        sourceUrl: from,
        discoveredAt: h.clock,
        links: to.map((url) => ({ url, depth: 1, redirectHops: 0 })),
      } satisfies LinkBatch);
    link('http://a.test/', urls);
    h.commit();
    await h.crash();
    const web = new FakeFetcher(h);
    await web.run(5_000);
    const fetched = () =>
      web
        .pages()
        .map((f) => f.request.url)
        .sort();
    assert.deepEqual(fetched(), urls.slice(0, 3));
    link('http://b.test/', []);
    h.commit();
    await h.crash();
    link('http://c.test/', [urls[0]!]);
    await web.run(5_000);
    assert.deepEqual(fetched(), urls.slice(0, 5));
  } finally {
    await h.close();
  }
});
