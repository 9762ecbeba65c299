import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { freshWeb } from '../../synthetic-web/fresh-web.js';
import { feedItemDelays, fetchDelay, fixedIntervalStaleness, staleness } from '../../synthetic-web/staleness.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { exportPageRecords, removeDir, startCli, tempDir, warcioCheck, writeSeeds } from './harness.js';
import { warcRevisits } from './duplicates.js';

// compressed time: revisits between 20 s and 600 s; sitemaps and feeds between 10 s and 12 s, so
// a sitemap's lastmod bump is seen within 12 s and its page fetched within one --recrawl-min. (With
// one request a second per host, a shorter --recrawl-min leaves a host's four sitemaps most of its
// politeness budget, and a bumped page waits behind them.)
const RUN_SECONDS = 120;
const RECRAWL_MIN = 20;
const FEED_MAX = 12;
// the staleness window starts once discovery is over (every page fetched once)
const WARM_UP_SECONDS = 40;
const BUMP_AT = 70;

test('a continuous crawl of a changing web keeps it fresher than a fixed interval with the same fetches, revalidates with 304s, and follows sitemaps and feeds', async (t) => {
  const web = freshWeb({ seed: 11, hosts: 3 });
  const server = await SyntheticWeb.start({ sites: web.sites });
  const dir = tempDir('fresh');
  try {
    web.epoch = Date.now();
    // on a host with room in its politeness budget: the feeds' host spends about all of its one
    // request a second on its two feeds and four sitemaps in this compressed time
    const bumped = web.layout.pages.find(
      (p) => p.reach === 'sitemap' && p.changeClass === 'never' && p.host !== web.layout.feedHost,
    )!;
    web.bump(bumped.host, bumped.path, BUMP_AT);
    const seeds = writeSeeds(dir, server.seedUrls());
    const { exited } = startCli([
      'crawl',
      '--seeds',
      seeds,
      '--data',
      join(dir, 'data'),
      '--resolve',
      '*.test=127.0.0.1',
      '--allow-ip',
      '127.0.0.1/32',
      '--duration',
      String(RUN_SECONDS),
      '--recrawl-min',
      String(RECRAWL_MIN),
      '--recrawl-max',
      '600',
      '--feed-max-interval',
      String(FEED_MAX),
    ]);
    const run = await exited;
    assert.equal(run.code, 0, `crawl exited ${run.code}\n${run.stderr}`);
    t.diagnostic(run.stdout.trim().split('\n').slice(-16).join('\n'));
    const log = server.requests();

    const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', ipOf: server.ipOf });
    assert.deepEqual(report.violations, [], formatPolitenessReport(report));

    const from = web.epoch + WARM_UP_SECONDS * 1000;
    const to = Math.max(...log.map((e) => e.end));
    const adaptive = staleness(log, web, { from, to });
    const fixed = fixedIntervalStaleness(web, adaptive.fetches, { from, to });
    const summary = `adaptive ${adaptive.totalSec.toFixed(0)} s stale with ${adaptive.fetches} fetches, fixed interval ${fixed.totalSec.toFixed(0)} s; by class ${JSON.stringify(adaptive.byClass)}`;
    t.diagnostic(summary);
    t.diagnostic(
      `304s of never-changing revisits: ${adaptive.neverNotModified}/${adaptive.neverRevisits} (the bumped page included)`,
    );
    const neverPaths = new Set(
      web.layout.pages.filter((p) => p.changeClass === 'never').map((p) => `${p.host}${p.path}`),
    );
    const seenOnce = new Set<string>();
    for (const e of log) {
      const key = `${e.host}${e.path}`;
      if (!neverPaths.has(key) || (e.status !== 200 && e.status !== 304)) continue;
      if (seenOnce.has(key) && e.status === 200)
        t.diagnostic(
          `never-changing ${key} answered 200 on a revisit (If-None-Match ${e.ifNoneMatch}, If-Modified-Since ${e.ifModifiedSince})`,
        );
      seenOnce.add(key);
    }
    assert.ok(adaptive.fetches > 0, summary);
    assert.ok(adaptive.totalSec <= fixed.totalSec / 2, summary);
    // the bumped page changed once: its revisit after the bump is rightly a 200
    const unbumped = staleness(log, web, { from, to, pages: (p) => p !== bumped });
    assert.ok(unbumped.neverRevisits >= 5, `too few revisits of never-changing pages to judge: ${summary}`);
    assert.ok(
      unbumped.neverNotModifiedShare >= 0.9,
      `${unbumped.neverNotModified} of ${unbumped.neverRevisits} revisits of never-changing pages were 304s`,
    );

    // pages only a sitemap names were crawled; a bumped lastmod brought its page back within a --recrawl-min
    for (const p of web.layout.pages.filter((q) => q.reach === 'sitemap'))
      assert.ok(fetchDelay(log, web, p, 0) !== undefined, `${p.host}${p.path}, only in a sitemap, was never fetched`);
    const delay = fetchDelay(log, web, bumped, BUMP_AT);
    t.diagnostic(`bumped sitemap page fetched ${delay} s after its bump`);
    assert.ok(delay !== undefined && delay <= RECRAWL_MIN, `the bumped page came back after ${delay} s`);
    // each feed item published while the crawl ran, early enough to be due, was fetched within one feed interval
    const items = feedItemDelays(log, web, { from: web.epoch, to: to - web.layout.feedSec * 1000 });
    assert.ok(items.length >= 2, `only ${items.length} feed items were published`);
    for (const { page, delaySec } of items)
      assert.ok(
        delaySec !== undefined && delaySec <= web.layout.feedSec,
        `feed item ${page.path} fetched ${delaySec} s after it was published`,
      );

    // the page records say what each revisit found
    const records = exportPageRecords(join(dir, 'data'));
    const notModified = records.filter((r) => r.notModified);
    assert.ok(notModified.length > 0, 'no page record says notModified');
    for (const r of notModified) {
      assert.equal(r.status, 304);
      assert.ok(r.visit > 0 && r.previousFetchTime !== null && r.changed === false);
    }
    assert.ok(
      records.some((r) => r.visit > 0 && r.changed),
      'no revisit found a change',
    );
    assert.ok(records.some((r) => r.kind === 'SITEMAP') && records.some((r) => r.kind === 'FEED'));
    // every 304 is a server-not-modified revisit record an independent reader accepts
    const warc = warcioCheck(join(dir, 'data', 'warc'));
    assert.equal(warc.status, 0, warc.output);
    const notModifiedRecords = warcRevisits(warc.files).filter((r) => r.profile.endsWith('/server-not-modified'));
    // one per 304 page record; --duration may stop the crawl between a 304's WARC record and its
    // page record (that record waits in parsed-pages for the next run), so a few more may be archived
    assert.ok(
      notModifiedRecords.length >= notModified.length && notModifiedRecords.length <= notModified.length + 3,
      `${notModifiedRecords.length} server-not-modified revisit records for ${notModified.length} notModified page records`,
    );
    for (const r of notModifiedRecords) assert.equal(r.refersTo, r.url, 'a 304 refers to its own last visit');
    assert.match(run.stdout, /revisits\s+[1-9]\d*\s+\(changed [1-9]/);
  } finally {
    await server.close();
    removeDir(dir);
  }
});
