import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { PageSpec, SiteSpec } from '../../synthetic-web/sites.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { crawlArgs, firstFetchedAt, removeDir, startCli, tempDir, writeSeeds } from './harness.js';

const PAGES = 45;

test(
  'a seeded site of numbered pages (/p/1 … /p/45, past the template allowance) is fetched whole: the template rule defers, and the site running out releases',
  { timeout: 240_000 },
  async (t) => {
    const path = (n: number) => `/p/${n}`;
    const pages: Record<string, PageSpec> = {
      '/': { title: 'Numbered', links: Array.from({ length: PAGES }, (_, i) => path(i + 1)) },
    };
    for (let n = 1; n <= PAGES; n++)
      pages[path(n)] = {
        title: `Page ${n}`,
        links: ['/', ...(n > 1 ? [path(n - 1)] : []), ...(n < PAGES ? [path(n + 1)] : [])],
      };
    const site: SiteSpec = { host: 'numbered.test', seed: true, pages };
    const web = await SyntheticWeb.start({ sites: [site] });
    const dir = tempDir('deferred');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      // the trap rules run with their defaults: a template allowance of 12 per shape
      const run = await startCli(crawlArgs(seeds, join(dir, 'data'))).exited;
      assert.equal(run.code, 0, run.stderr);
      t.diagnostic(run.stdout.trim());
      assert.match(
        run.stdout,
        /deferred \{url-template\}\s+[1-9]/,
        'the template rule held nothing back: the test proves nothing',
      );
      assert.match(run.stdout, /released \{url-template\}\s+[1-9]/);
      const log = web.requests();
      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
      const fetched = firstFetchedAt(log);
      const missing = Object.keys(pages).filter((p) => !fetched.has(`numbered.test${p}`));
      assert.deepEqual(missing, [], 'pages of a seeded site never fetched');
      const twice = log.filter((e) => e.path !== '/robots.txt').length - Object.keys(pages).length;
      assert.equal(twice, 0, 'a page was fetched twice');
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
