import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics } from '../../../core/metrics.js';
import { M } from '../../../core/metric-catalogue.js';
import { validateCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import { siteOf } from '../../../processors/common/normalize.js';
import { admitLinks } from '../../../processors/frontier/admission.js';
import { DeferredSet } from '../../../processors/frontier/deferred-set.js';
import { parseSiteOverride } from '../../../processors/common/site-overrides.js';
import { LinkScope, SeedScope, scopeHost } from '../../../processors/frontier/scope.js';
import { SitePolicy } from '../../../processors/frontier/site-policy.js';
import { parsedShape } from '../../../processors/frontier/url-shape.js';
import type { ControlCommand, LinkBatch, SiteState } from '../../../schemas/types.js';
import { SeenSet } from '../../../state/seen-set.js';
import { MemoryFingerprintStore } from '../../state/seen-set-memory-store.js';
import { memoryKv } from './memory-kv.js';

function setup(options: Partial<CrawlConfig>, scopeStore = memoryKv<Buffer>('frontier-scope')) {
  const config = validateCrawlConfig(options);
  const seen = new SeenSet(new MemoryFingerprintStore(), { expectedCount: 1_000, falsePositiveRate: 0.01 });
  seen.init();
  const metrics = new Metrics();
  const sites = new SitePolicy(memoryKv<SiteState>('frontier-sites'), config);
  const deferred = new DeferredSet(memoryKv<Buffer>('frontier-deferred'));
  const scope = new LinkScope(config, new SeedScope(config.scope, scopeStore), (site, url) =>
    sites.settings.forUrl(site, url),
  );
  const admit = (batch: LinkBatch) =>
    admitLinks(batch, 1, config, seen, sites, deferred, metrics, scope).entries.map((e) => e.url);
  return { admit, metrics, scopeStore, sites };
}

const seeds = (...urls: string[]): LinkBatch => ({
  site: siteOf(urls[0]!),
  sourceUrl: null,
  discoveredAt: 1,
  links: urls.map((url) => ({ url, depth: 0, redirectHops: 0 })),
});
const linked = (from: string, ...urls: string[]): LinkBatch => ({
  site: siteOf(urls[0]!),
  sourceUrl: from,
  discoveredAt: 1,
  links: urls.map((url) => ({ url, depth: 1, redirectHops: 0 })),
});

test('seed hosts compare without www. and with a non-default port', () => {
  const h = (url: string) => scopeHost(parsedShape(url)!);
  assert.equal(h('https://www.example.org/'), 'example.org');
  assert.equal(h('http://WWW.Example.org./a'), 'example.org');
  assert.equal(h('http://example.org:8080/'), 'example.org:8080');
  assert.equal(h('http://wwwx.example.org/'), 'wwwx.example.org');
  assert.equal(h('http://bücher.de/'), 'xn--bcher-kva.de');
});

test('seed-sites keeps links on the registered domains of the seeds, subdomains and ports included', () => {
  const { admit, metrics } = setup({ scope: 'seed-sites' });
  admit(seeds('https://www.example.co.uk/'));
  const from = 'https://www.example.co.uk/';
  assert.deepEqual(admit(linked(from, 'https://blog.example.co.uk/a', 'http://example.co.uk:8080/b')), [
    'https://blog.example.co.uk/a',
    'http://example.co.uk:8080/b',
  ]);
  assert.deepEqual(admit(linked(from, 'https://other.co.uk/')), []);
  assert.deepEqual(admit(linked(from, 'https://co.uk.example.org/')), []);
  assert.equal(metrics.counter(M.urlsRefused, 'scope'), 2);
});

test('seed-hosts keeps links on the hosts of the seeds: www. is the same host, a subdomain or another port is not', () => {
  const { admit } = setup({ scope: 'seed-hosts' });
  admit(seeds('http://www.example.org/', 'http://example.org:8080/start'));
  const from = 'http://example.org/';
  assert.deepEqual(
    admit(linked(from, 'http://example.org/a', 'https://www.example.org/b', 'http://example.org:8080/c')),
    ['http://example.org/a', 'https://www.example.org/b', 'http://example.org:8080/c'],
  );
  assert.deepEqual(admit(linked(from, 'http://blog.example.org/', 'http://example.org:9090/')), []);
});

test('seed-prefixes keeps links under the directory of a seed; sitemaps of a seed host are in scope anyway', () => {
  const { admit } = setup({ scope: 'seed-prefixes' });
  admit(seeds('https://example.org/news/index.html'));
  const from = 'https://example.org/news/';
  assert.deepEqual(admit(linked(from, 'https://example.org/news/2024/a', 'http://www.example.org/news/b')), [
    'https://example.org/news/2024/a',
    'http://www.example.org/news/b',
  ]);
  assert.deepEqual(admit(linked(from, 'https://example.org/newsletter', 'https://example.org/about')), []);
  const sitemap: LinkBatch = {
    site: 'example.org',
    sourceUrl: null,
    fromFeed: true,
    discoveredAt: 1,
    links: [{ url: 'https://example.org/sitemap.xml', depth: 0, redirectHops: 0, kind: 'SITEMAP', lastmod: null }],
  };
  assert.deepEqual(admit(sitemap), ['https://example.org/sitemap.xml']);
});

test('a link out of scope is not marked seen: once a new seed widens the scope, the same link is admitted', () => {
  const { admit, metrics } = setup({ scope: 'seed-sites' });
  admit(seeds('http://a.test/'));
  const out = 'http://b.test/page';
  assert.deepEqual(admit(linked('http://a.test/', out)), []);
  assert.deepEqual(admit(linked('http://a.test/x', out)), [], 'still out of scope');
  assert.equal(metrics.counter(M.urlsSeen), 0);
  admit(seeds('http://b.test/'));
  assert.deepEqual(admit(linked('http://a.test/', out)), [out]);
  assert.deepEqual(admit(linked('http://a.test/', out)), [], 'now it is seen');
});

test('the scope lives in its store: a new task over the same store keeps the seeds of the old one', () => {
  const first = setup({ scope: 'seed-hosts' });
  first.admit(seeds('http://a.test:81/'));
  const again = setup({ scope: 'seed-hosts' }, first.scopeStore);
  assert.deepEqual(again.admit(linked('http://a.test:81/', 'http://a.test:81/x', 'http://a.test/y')), [
    'http://a.test:81/x',
  ]);
});

test('under web nothing is recorded and every site is in scope; the filters still refuse', () => {
  const { admit, scopeStore, metrics } = setup({ denyRules: ['host:*.ads.test'], maxDepth: 1 });
  admit(seeds('http://a.test/'));
  assert.equal(scopeStore.map.size, 0);
  assert.deepEqual(admit(linked('http://a.test/', 'http://b.test/x', 'http://b.test/y.zip')), ['http://b.test/x']);
  assert.deepEqual(admit(linked('http://a.test/', 'http://x.ads.test/')), []);
  const deep: LinkBatch = {
    ...linked('http://a.test/', 'http://c.test/'),
    links: [{ url: 'http://c.test/', depth: 2, redirectHops: 0 }],
  };
  assert.deepEqual(admit(deep), []);
  assert.equal(metrics.counter(M.urlsRefused, 'extension'), 1);
  assert.equal(metrics.counter(M.urlsRefused, 'deny host:*.ads.test'), 1);
  assert.equal(metrics.counter(M.urlsRefused, 'max-depth'), 1);
});

test('seeds are in scope by definition, but the filters apply to them too', () => {
  const { admit, metrics } = setup({ scope: 'seed-prefixes', denyRules: ['re:/private/'] });
  assert.deepEqual(admit(seeds('http://a.test/docs/', 'http://a.test/private/x')), ['http://a.test/docs/']);
  assert.equal(metrics.counter(M.urlsRefused, 'deny re:/private/'), 1);
});

test("per-site max-depth replaces the crawl's for the URLs it covers; per-site allow/deny narrow them; live max-depth wins", () => {
  const { admit, metrics, sites } = setup({
    maxDepth: 1,
    sites: [
      parseSiteOverride('example.org', { 'max-depth': 3, deny: ['re:/private/'] }, 'test'),
      parseSiteOverride('news.example.org', { allow: ['re:/news/'] }, 'test'),
    ],
  });
  const at = (depth: number, ...urls: string[]): LinkBatch => ({
    site: siteOf(urls[0]!),
    sourceUrl: 'https://example.org/',
    discoveredAt: 1,
    links: urls.map((url) => ({ url, depth, redirectHops: 0 })),
  });
  // the site's hop limit (3), not the crawl's (1); another site keeps the crawl's
  assert.deepEqual(admit(at(3, 'https://example.org/deep')), ['https://example.org/deep']);
  assert.deepEqual(admit(at(4, 'https://example.org/deeper')), []);
  assert.deepEqual(admit(at(2, 'https://other.org/two')), []);
  assert.deepEqual(admit(at(1, 'https://other.org/one')), ['https://other.org/one']);
  // the domain's deny covers its hosts; the host's allow narrows that host only
  assert.deepEqual(admit(at(1, 'https://example.org/private/a', 'https://example.org/public/a')), [
    'https://example.org/public/a',
  ]);
  assert.deepEqual(admit(at(1, 'https://news.example.org/news/1', 'https://news.example.org/sport/1')), [
    'https://news.example.org/news/1',
  ]);
  assert.equal(metrics.counter(M.urlsRefused, 'max-depth'), 2);
  assert.equal(metrics.counter(M.urlsRefused, 'deny re:/private/'), 1);
  assert.equal(metrics.counter(M.urlsRefused, 'allow'), 1);
  // a live `control set example.org max-depth=5` wins over the file for every host of the site
  sites.apply({
    site: 'example.org',
    action: 'SET',
    minGapMs: null,
    issuedAt: 2,
    issuedBy: null,
    settings: { 'max-depth': '5' },
  } satisfies ControlCommand);
  assert.deepEqual(admit(at(5, 'https://example.org/five')), ['https://example.org/five']);
});

test('a sitemap or feed is admitted whatever its suffix (sitemap.xml.gz); a page with that suffix is not', () => {
  const { admit, metrics } = setup({});
  const batch = (kind: 'SITEMAP' | 'FEED' | undefined, path: string): LinkBatch => ({
    site: 'example.org',
    sourceUrl: 'https://example.org/robots.txt',
    discoveredAt: 1,
    links: [{ url: `https://example.org${path}`, depth: 1, redirectHops: 0, kind, lastmod: null }],
  });
  assert.deepEqual(admit(batch('SITEMAP', '/sitemap-2.xml.gz')), ['https://example.org/sitemap-2.xml.gz']);
  assert.deepEqual(admit(batch('FEED', '/feed.rss.gz')), ['https://example.org/feed.rss.gz']);
  assert.deepEqual(admit(batch(undefined, '/dump.gz')), []);
  assert.equal(metrics.counter(M.urlsRefused, 'extension'), 1);
});
