import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { freshWeb, type FreshWeb } from '../../synthetic-web/fresh-web.js';
import { removeDir, startCli, tempDir, writeSeeds, type Exited } from './harness.js';
import { ISSUE_MIX, LONG_TAIL_MIX, formatDelays, judgeMix, type FreshMix } from './freshness-mixes.js';

// Issue #33's Done-when: on the issue's mix and on one other, a continuous crawl keeps the web
// fresher than half a fixed interval's staleness with the same fetches, fetches feed items within
// 1.5 feed periods (median), answers ≥ 90 % of revisits of unchanged pages with 304s, finds the
// pages only a sitemap lists, and stays polite. Both crawls run at once (two servers, two CLI
// processes) so that CI waits about 7 minutes, not 12; each has only the flags a user would
// pass: no --feed-max-interval. How each mix's length and warm-up were chosen: freshness-mixes.ts.

interface MixRun {
  readonly mix: FreshMix;
  readonly web: FreshWeb;
  readonly server: SyntheticWeb;
  readonly dir: string;
}

function crawl({ mix, web, server, dir }: MixRun): Promise<Exited> {
  // web time 0 is the crawl's start: the warm-up counts from it
  web.epoch = Date.now();
  const seeds = writeSeeds(dir, server.seedUrls());
  return startCli([
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
    String(mix.runSec),
    ...mix.flags,
  ]).exited;
}

test('on two mixes of change rates, continuous crawls beat a fixed interval by half, follow feeds as they publish, revalidate with 304s and stay polite', async (t) => {
  const runs: MixRun[] = [];
  try {
    for (const mix of [ISSUE_MIX, LONG_TAIL_MIX]) {
      const web = freshWeb(mix.web);
      runs.push({ mix, web, server: await SyntheticWeb.start({ sites: web.sites }), dir: tempDir('freshmix') });
    }
    const exits = await Promise.all(runs.map(crawl));
    const judged = runs.map((run, i) => {
      const exit = exits[i]!;
      const figures = judgeMix(run.mix, run.web, run.server.requests(), run.server.ipOf);
      // one diagnostic a line: TAP escapes a newline inside one
      for (const line of [...figures.lines, ...exit.stdout.trim().split('\n').slice(-8)]) t.diagnostic(line);
      return { ...run, exit, figures };
    });

    for (const { mix, web, exit, figures } of judged) {
      const { adaptive, fixed } = figures;
      await t.test(`${mix.name}: the crawl ends cleanly at --duration`, () => {
        assert.equal(exit.code, 0, `crawl exited ${exit.code}\n${exit.stderr}`);
      });
      await t.test(`${mix.name}: the server-log judge finds no politeness violation`, () => {
        assert.equal(figures.violations, undefined, figures.violations);
      });
      await t.test(`${mix.name}: every page only a sitemap lists is fetched`, () => {
        assert.deepEqual(figures.sitemapOnlyUnfetched, []);
      });
      await t.test(
        `${mix.name}: staleness after the warm-up is at most half a fixed interval's with the same fetches`,
        () => {
          assert.ok(adaptive.fetches > 0, 'no page fetched in the window');
          assert.ok(
            adaptive.totalSec <= 0.5 * fixed.totalSec,
            `adaptive ${adaptive.totalSec.toFixed(0)} s, fixed ${fixed.totalSec.toFixed(0)} s with ${adaptive.fetches} fetches: ${figures.ratio.toFixed(3)} ×`,
          );
        },
      );
      await t.test(`${mix.name}: feed items are fetched a median of at most 1.5 feed periods after publication`, () => {
        assert.ok(figures.feedItems >= 3, `only ${figures.feedItems} feed items due to judge`);
        assert.ok(
          figures.feedMedianSec <= 1.5 * web.layout.feedSec,
          `median delay ${formatDelays([figures.feedMedianSec])} > ${1.5 * web.layout.feedSec} s; delays ${formatDelays(figures.feedDelays)}`,
        );
      });
      // never-changing pages are revisited at least once in the window (their first interval is
      // below it; they then lengthen toward --recrawl-max): the share is judged over those revisits
      await t.test(`${mix.name}: at least 90 % of revisits of never-changing pages are answered 304`, () => {
        assert.ok(adaptive.neverRevisits >= 10, `only ${adaptive.neverRevisits} revisits of never-changing pages`);
        assert.ok(
          adaptive.neverNotModifiedShare >= 0.9,
          `${adaptive.neverNotModified} of ${adaptive.neverRevisits} revisits were 304s`,
        );
      });
    }
  } finally {
    for (const run of runs) {
      await run.server.close();
      removeDir(run.dir);
    }
  }
});
