import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { crawlArgs, removeDir, startCli, tempDir, writeSeeds } from './harness.js';

const HOSTS = ['one.test', 'two.test', 'three.test', 'four.test', 'five.test', 'six.test'];

/**
 * A small site whose pages take 900 ms, so two fetches on the address do overlap when the limit
 * allows two (starts there are at least the gap + 130 ms apart: see ip-limiter.ts).
 */
function site(host: string): SiteSpec {
  return {
    host,
    seed: true,
    delayMs: 900,
    robots: { status: 200, body: 'User-agent: *\nDisallow: /private/\n' },
    pages: {
      '/': { title: host, links: ['/a.html', '/b.html', '/private/x.html'] },
      '/a.html': { title: `${host} a`, links: ['/c.html'] },
      '/b.html': { title: `${host} b`, links: [] },
      '/c.html': { title: `${host} c`, links: [] },
    },
  };
}

test(
  'six host names on one address: the judge finds no request beyond --ip-concurrency 2 or closer than --ip-gap 300 ms',
  {
    timeout: 180_000,
  },
  async () => {
    const web = await SyntheticWeb.start({ sites: HOSTS.map(site) });
    const dir = tempDir('per-ip-judged');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const run = await startCli(
        // one partition: the limiter's own rule, without shares among several partitions
        crawlArgs(seeds, join(dir, 'data'), [
          '--ip-concurrency',
          '2',
          '--ip-gap',
          '300',
          '--partitions',
          '1',
          // a host's own gap stays at the 1 s floor (not 10 × 900 ms), so the test stays short
          '--slow-factor',
          '1',
          '--quiet',
        ]),
      ).exited;
      assert.equal(run.code, 0, run.stderr);

      const log = web.requests();
      assert.deepEqual(new Set(log.map((e) => e.host)), new Set(HOSTS));
      assert.equal(log.length, HOSTS.length * 5, 'robots.txt and four pages per host');
      const judged = { userAgent: 'crawlstream', slowFactor: 1, ipOf: web.ipOf, ipConcurrency: 2, ipGapMs: 300 };
      const report = checkPoliteness(log, web.sites, judged);
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));

      // the log is not vacuous: the crawl used the room the limits gave it, so tighter ones are broken
      const kinds = (options: object) =>
        new Set(checkPoliteness(log, web.sites, { ...judged, ...options }).violations.map((v) => v.kind));
      assert.ok(kinds({ ipConcurrency: 1 }).has('ip-concurrency'), 'no two fetches were ever in flight at once');
      assert.ok(kinds({ ipGapMs: 1000 }).has('ip-gap'), 'no two starts were under 1 s apart');
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
