import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { Metrics } from '../../../core/metrics.js';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { FeedReader } from '../../../processors/parser/feed-reader.js';
import type { FetchedPage } from '../../../schemas/types.js';
import { fetchedPageFor } from './fetched-page.js';

function fetched(url: string, kind: FetchedPage['kind'], body: Buffer, headers: [string, string][] = []): FetchedPage {
  return fetchedPageFor(url, {
    leaseId: 'l',
    site: 'maps.test',
    depth: 0,
    fetchedAt: 0,
    durationMs: 1,
    requestHead: '',
    headers: headers.map(([name, value]) => ({ name, value })),
    body,
    remoteAddress: null,
    kind,
  });
}

const sitemap = (locs: string[]) =>
  Buffer.from(
    `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs
      .map((l) => `<url><loc>${l}</loc><lastmod>2026-11-30</lastmod></url>`)
      .join('')}</urlset>`,
  );

test('a sitemap is read into PAGE links with their lastmod, one level deeper, content-encoded or not', () => {
  const reader = new FeedReader(validateCrawlConfig({}), new Metrics());
  const body = sitemap(['https://maps.test/a', 'https://maps.test/b']);
  for (const page of [
    fetched('https://maps.test/sitemap.xml', 'SITEMAP', body),
    fetched('https://maps.test/sitemap.xml', 'SITEMAP', gzipSync(body), [['Content-Encoding', 'gzip']]),
  ]) {
    const read = reader.read(page, 'application/xml');
    assert.equal(read.errorCode, null);
    assert.deepEqual(
      read.links.map((l) => [l.url, l.kind, l.depth, l.lastmod]),
      [
        ['https://maps.test/a', 'PAGE', 1, Date.UTC(2026, 10, 30)],
        ['https://maps.test/b', 'PAGE', 1, Date.UTC(2026, 10, 30)],
      ],
    );
  }
});

test('one URL that does not normalize is skipped, not the end of the list; another origin is out of scope', () => {
  const metrics = new Metrics();
  const reader = new FeedReader(validateCrawlConfig({}), metrics);
  const read = reader.read(
    fetched(
      'https://maps.test/sitemap.xml',
      'SITEMAP',
      sitemap(['https://maps.test/a', 'https://[bad/', 'https://other.test/x', 'https://maps.test/c']),
    ),
    'application/xml',
  );
  assert.deepEqual(
    read.links.map((l) => l.url),
    ['https://maps.test/a', 'https://maps.test/c'],
  );
  assert.equal(read.errorCode, 'CS_FEED_BAD_ENTRY');
  assert.equal(metrics.counter('feed_errors', 'CS_FEED_BAD_ENTRY'), 1);
});

test('a body that is no sitemap or feed is a counted error with no links, never a throw', () => {
  const metrics = new Metrics();
  const reader = new FeedReader(validateCrawlConfig({}), metrics);
  const read = reader.read(fetched('https://maps.test/feed', 'FEED', Buffer.from('\u0000\u0001 junk <<<')), null);
  assert.deepEqual(read.links, []);
  assert.ok(read.errorCode?.startsWith('CS_FEED'));
  assert.equal(metrics.total('feed_errors'), 1);
});
