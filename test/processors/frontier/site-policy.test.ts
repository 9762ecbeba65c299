import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics } from '../../../core/metrics.js';
import { validateCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import { admitLinks } from '../../../processors/frontier/admission.js';
import { SitePolicy } from '../../../processors/frontier/site-policy.js';
import { DeferredSet } from '../../../processors/frontier/deferred-set.js';
import { memoryKv } from './memory-kv.js';
import type { KeyValueStore } from '../../../state/state-store.js';
import { SeenSet } from '../../../state/seen-set.js';
import type { LinkBatch, SiteState } from '../../../schemas/types.js';
import { MemoryFingerprintStore } from '../../state/seen-set-memory-store.js';

function siteStore(): KeyValueStore<string, SiteState> {
  const map = new Map<string, SiteState>();
  return {
    name: 'frontier-sites',
    get: (k) => map.get(k),
    getMany: (ks) => ks.map((k) => map.get(k)),
    put: (k, v) => void map.set(k, v),
    delete: (k) => void map.delete(k),
    *range() {
      yield* [...map].sort(([a], [b]) => (a < b ? -1 : 1));
    },
    flush() {},
    close() {},
  };
}

/**
 * The budget tests' hand-named URLs share one skeleton (url-templates.ts), which the template rule
 * counts too: an allowance no test reaches keeps them about the budget alone.
 */
const BUDGET_ONLY: Partial<CrawlConfig> = { templateAllowance: 1_000_000 };

function setup(partial: Partial<CrawlConfig> = {}) {
  const config = validateCrawlConfig(partial);
  const seen = new SeenSet(new MemoryFingerprintStore(), { expectedCount: 100_000, falsePositiveRate: 0.01 });
  seen.init();
  const metrics = new Metrics();
  const sites = new SitePolicy(siteStore(), config);
  const deferred = new DeferredSet(memoryKv<Buffer>('frontier-deferred'));
  const admit = (batch: LinkBatch) => admitLinks(batch, 1, config, seen, sites, deferred, metrics);
  return { config, admit, metrics, sites, deferred };
}

const batch = (site: string, from: string | null, urls: string[], depth = 1): LinkBatch => ({
  site,
  sourceUrl: from,
  discoveredAt: 1,
  links: urls.map((url) => ({ url, depth, redirectHops: 0 })),
});

/** How many of `n` new pages of `site` linked from `from` are admitted. */
function admitted(admit: ReturnType<typeof setup>['admit'], site: string, from: string | null, n: number, tag: string) {
  const urls = Array.from(
    { length: n },
    (_, i) =>
      `https://www.${site}/${tag}-${'abcdefghij'[i % 10]}${'klmnopqrst'[Math.floor(i / 10) % 10]}${'uvwxyzabcd'[Math.floor(i / 100) % 10]}`,
  );
  return admit(batch(site, from, urls)).entries.length;
}

test('a site linked by nobody but itself gets the small base budget: hundreds, not thousands; the rest wait', () => {
  const { config, admit, metrics, deferred } = setup(BUDGET_ONLY);
  assert.ok(config.sitePageBudget >= 100 && config.sitePageBudget < 1_000);
  assert.equal(admitted(admit, 'alone.test', 'https://www.alone.test/', 1_000, 'p'), config.sitePageBudget);
  assert.equal(
    admitted(admit, 'alone.test', 'https://www.alone.test/', 1_000, 'q'),
    0,
    'links from itself earned budget',
  );
  assert.equal(metrics.counter('urls_deferred', 'site-budget'), 2_000 - config.sitePageBudget);
  assert.equal(metrics.counter('urls_dropped', 'site-budget'), 0, 'a budget refusal was a drop');
  assert.equal(deferred.waiting('alone.test', 'site-budget'), 2_000 - config.sitePageBudget);
});

test('every distinct linking site raises the budget by the per-inlink amount; the same site twice counts once', () => {
  const { config, admit } = setup({ ...BUDGET_ONLY, sitePageBudget: 10, siteBudgetPerInlink: 5 });
  assert.equal(admitted(admit, 'x.test', 'https://a.test/', 100, 'a'), 15);
  assert.equal(admitted(admit, 'x.test', 'https://a.test/other', 100, 'b'), 0);
  assert.equal(admitted(admit, 'x.test', 'https://b.test/', 100, 'c'), config.siteBudgetPerInlink);
});

test('a seeded site has no budget cap unless --seed-budget sets one', () => {
  const { admit } = setup({ ...BUDGET_ONLY, sitePageBudget: 10, seedPageBudget: 40, siteBudgetPerInlink: 0 });
  assert.equal(admitted(admit, 'seeded.test', null, 100, 's'), 40);
  assert.equal(admitted(admit, 'unseeded.test', 'https://a.test/', 100, 'u'), 10);
  const plain = setup({ ...BUDGET_ONLY, sitePageBudget: 30, siteBudgetPerInlink: 0 });
  assert.equal(admitted(plain.admit, 'seeded.test', null, 1_000, 's'), 1_000);
  assert.equal(admitted(plain.admit, 'seeded.test', 'https://www.seeded.test/', 1_000, 't'), 1_000);
});

test('links more hops from a seed than the limit are dropped, by reason; many linking sites allow more hops', () => {
  const { config, admit, metrics, sites } = setup({ maxHops: 4 });
  const deep = (site: string, depth: number, path: string) =>
    admit(batch(site, 'https://a.test/', [`https://${site}/${path}`], depth)).entries.length;
  assert.equal(deep('d.test', 4, 'four'), 1);
  assert.equal(deep('d.test', 5, 'five'), 0);
  assert.equal(metrics.counter('urls_dropped', 'too-many-hops'), 1);
  for (const from of ['b', 'c', 'e']) sites.noteInlink('d.test', `${from}.test`);
  assert.equal(sites.maxHops('d.test'), config.maxHops + 3);
  assert.equal(deep('d.test', 7, 'seven'), 1);
  for (let i = 0; i < 50; i++) sites.noteInlink('d.test', `l${i}.test`);
  assert.equal(sites.maxHops('d.test'), 2 * config.maxHops, 'the deeper allowance is capped');
});

test('a host emitting new URLs of one template on its own pages: first queued, then demoted, then deferred', () => {
  const { config, admit, metrics } = setup({ templateAllowance: 10, templateAllowancePerInlink: 10 });
  const bands: number[] = [];
  let kept = 0;
  for (let month = 1; month <= 40; month++) {
    const url = `https://events.test/cal/${2030 + Math.floor(month / 12)}/${String((month % 12) + 1).padStart(2, '0')}/`;
    const r = admit(batch('events.test', 'https://events.test/cal/', [url]));
    kept += r.entries.length;
    bands.push(...r.bands);
  }
  assert.equal(kept, config.templateAllowance);
  assert.ok(
    bands.slice(0, 5).every((b) => b !== 3),
    'the first half was demoted',
  );
  assert.ok(
    bands.slice(5).every((b) => b === 3),
    'the second half was not demoted to the lowest band',
  );
  assert.equal(metrics.counter('urls_deferred', 'url-template'), 40 - config.templateAllowance);
  assert.equal(metrics.counter('urls_dropped', 'url-template'), 0);
  assert.equal(metrics.counter('urls_demoted', 'url-template'), config.templateAllowance / 2);
});

test('links into a template from other sites earn it more; hand-named pages count under their skeleton', () => {
  const { config, admit } = setup({ templateAllowance: 10, templateAllowancePerInlink: 10 });
  const own = (n: number, tag: string) =>
    admit(
      batch(
        'shop.test',
        'https://shop.test/list',
        Array.from({ length: n }, (_, i) => `https://shop.test/item/${tag}${i}`),
      ),
    ).entries.length;
  admit(batch('shop.test', 'https://blog.test/', ['https://shop.test/item/99999']));
  assert.equal(own(100, '1'), config.templateAllowance + config.templateAllowancePerInlink);
  const slugs = Array.from(
    { length: 100 },
    (_, i) => `https://shop.test/guide/${'abcdefghij'[i % 10]}-${'klmnopqrst'[Math.floor(i / 10)]}-tips`,
  );
  // a soft 404's word paths are hand-named too: past their skeleton's allowance they wait
  assert.equal(admit(batch('shop.test', 'https://shop.test/', slugs)).entries.length, config.templateAllowance);
});

test('all templated URLs of one host together get three template allowances', () => {
  const { config, admit, metrics } = setup({ templateAllowance: 10, templateAllowancePerInlink: 10 });
  let kept = 0;
  for (let t = 0; t < 10; t++) {
    const urls = Array.from(
      { length: 10 },
      (_, i) => `https://portal.test/s/${(0xa1b2c3 + 97 * (10 * t + i)).toString(16)}/section${'abcdefghij'[t]}`,
    );
    kept += admit(batch('portal.test', 'https://portal.test/', urls)).entries.length;
  }
  assert.equal(kept, 3 * config.templateAllowance);
  assert.equal(metrics.counter('urls_deferred', 'url-template'), 100 - 3 * config.templateAllowance);
});

test('a link from another site earns its template allowance once per URL: a page linked from fifty sites earns what one link does', () => {
  const { config, admit } = setup({ templateAllowance: 10, templateAllowancePerInlink: 10 });
  const own = (from: number, n: number) =>
    admit(
      batch(
        'shop.test',
        'https://shop.test/list',
        Array.from({ length: n }, (_, i) => `https://shop.test/item/${from + i}`),
      ),
    ).entries.length;
  assert.equal(own(100, 8), 8);
  for (let s = 0; s < 50; s++) admit(batch('shop.test', `https://blog${s}.test/`, ['https://shop.test/item/100']));
  assert.equal(own(200, 10), config.templateAllowance - 8, 'links to a known item earned allowance');
  admit(batch('shop.test', 'https://blog.test/', ['https://shop.test/item/999']));
  assert.equal(own(300, 20), config.templateAllowancePerInlink, 'a link to a new item earned nothing');
});

test('a site budget counts per cycle: once --recrawl-max has passed since the cycle began, the site may admit again', () => {
  const config = validateCrawlConfig({ sitePageBudget: 10, recrawlMinMs: 1_000, recrawlMaxMs: 60_000 });
  let now = 1_000_000;
  const sites = new SitePolicy(siteStore(), config, () => now);
  assert.deepEqual(sites.admitMany('cycle.test', 25), { admitted: 10, refused: 'site-budget' });
  now += 59_000;
  assert.equal(sites.admitMany('cycle.test', 5).admitted, 0, 'the budget reset before its cycle ended');
  now += 1_000;
  assert.equal(sites.admitMany('cycle.test', 25).admitted, 10, 'a new cycle did not reset the budget');
  assert.equal(sites.admitMany('cycle.test', 1).admitted, 0);
});
