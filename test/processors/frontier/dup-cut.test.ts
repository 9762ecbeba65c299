import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { PageRecord } from '../../../schemas/types.js';
import { FakeFetcher, seedLinks } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

function pageRecord(site: string, i: number, duplicate: boolean): PageRecord {
  const url = `http://${site}/copy/${i}`;
  return {
    url,
    canonicalUrl: null,
    site,
    host: site,
    fetchTime: 0,
    status: 200,
    contentType: 'text/html',
    contentLength: 100,
    payloadDigest: null,
    simhash: null,
    duplicateOf: duplicate ? `http://${site}/` : null,
    warcFile: null,
    warcOffset: null,
    warcLength: null,
    outlinkCount: 0,
    depth: 1,
    errorCode: null,
    redirectTarget: null,
    charset: null,
    language: null,
    noindex: false,
    kind: 'PAGE',
    visit: 0,
    changed: false,
    notModified: false,
    previousFetchTime: null,
    etag: null,
    lastModified: null,
    parserVersion: 1,
    reparsed: false,
    warcUri: null,
  };
}

/** Feeds `window` page records of `site`, the first `copies` of them duplicates. */
function recordPages(h: FrontierHarness, site: string, window: number, copies: number): void {
  for (let i = 0; i < window; i++) h.feed(TOPICS.pageRecords, site, pageRecord(site, i, i < copies));
}

test('a site whose last --dup-cut-window pages are at least --dup-cut-percent copies admits no new URLs; one just below goes on', async () => {
  const config = validateCrawlConfig({ dupCutWindow: 50, dupCutPercent: 80 });
  const h = await FrontierHarness.open(config);
  try {
    recordPages(h, 'copies.test', 50, 40);
    recordPages(h, 'almost.test', 50, 39);
    // a site of originals, for contrast
    recordPages(h, 'fresh.test', 50, 0);
    const web = new FakeFetcher(h);
    for (const site of ['copies.test', 'almost.test', 'fresh.test'])
      seedLinks(
        h,
        site,
        [1, 2, 3].map((i) => `http://${site}/new/${i}`),
      );
    await web.run(10_000);
    assert.deepEqual(web.pages('copies.test'), [], 'a site cut for copies was crawled on');
    assert.equal(web.pages('almost.test').length, 3, '78 % copies cut the site');
    assert.equal(web.pages('fresh.test').length, 3);
  } finally {
    await h.close();
  }
});

test('the duplicate cut is decided per window: copies spread over two windows below the share do not cut', async () => {
  const h = await FrontierHarness.open(validateCrawlConfig({ dupCutWindow: 10, dupCutPercent: 80 }));
  try {
    // 14 copies in 20 pages (70 %), 7 in each window of 10
    for (let w = 0; w < 2; w++)
      for (let i = 0; i < 10; i++) h.feed(TOPICS.pageRecords, 'spread.test', pageRecord('spread.test', i, i < 7));
    const web = new FakeFetcher(h);
    seedLinks(h, 'spread.test', ['http://spread.test/a']);
    await web.run(5_000);
    assert.equal(web.pages('spread.test').length, 1);
    // then a window of 8 copies in 10 cuts
    for (let i = 0; i < 10; i++) h.feed(TOPICS.pageRecords, 'spread.test', pageRecord('spread.test', i, i < 8));
    seedLinks(h, 'spread.test', ['http://spread.test/b']);
    await web.run(5_000);
    assert.equal(web.pages('spread.test').length, 1, 'the window of 80 % copies did not cut the site');
  } finally {
    await h.close();
  }
});
