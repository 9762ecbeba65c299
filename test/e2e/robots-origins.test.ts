import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { originsExpectations, originsWeb } from '../../synthetic-web/origins-web.js';
import { makeTestCertificates } from '../../synthetic-web/tls.js';
import { crawlArgs, exportPageRecords, removeDir, startCli, tempDir, writeSeeds } from './harness.js';

test(
  'robots.txt per origin on a web of https, an http → https host and robots.txt redirect chains',
  { timeout: 300_000 },
  async (t) => {
    const dir = tempDir('robots-origins');
    const sites = originsWeb();
    const certs = makeTestCertificates(
      dir,
      sites.map((s) => s.host),
    );
    const web = await SyntheticWeb.start({ sites, tls: certs });
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const { exited } = startCli(crawlArgs(seeds, join(dir, 'data'), ['--ca-file', certs.caFile]));
      const run = await exited;
      assert.equal(run.code, 0, `crawl exited ${run.code}\n${run.stderr}`);
      assert.match(run.stdout, /crawl stopped \(idle\)/);

      const log = web.requests();
      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
      const requested = new Set(log.map((e) => `${e.scheme ?? 'http'} ${e.host} ${e.path}`));
      for (const r of originsExpectations.fetch) assert.ok(requested.has(r), `${r} was never requested`);
      for (const r of originsExpectations.never) assert.ok(!requested.has(r), `${r} must not be requested`);

      // a parked origin (more than five redirects, a loop) gets nothing but its robots.txt chain
      for (const host of ['hops6.test', 'loop.test']) {
        const paths = log.filter((e) => e.host === host).map((e) => e.path);
        assert.ok(
          paths.every((p) => p === '/robots.txt' || p.startsWith('/robots/')),
          `${host} got ${paths.join(', ')}`,
        );
      }

      // the https pages were fetched over TLS, trusted through --ca-file, and recorded
      const records = exportPageRecords(join(dir, 'data'));
      const home = records.find((r) => r.url === web.httpsUrl('secure.test'));
      assert.equal(home?.status, 200, 'the https home page has no 200 page record');
      t.diagnostic(`${log.length} requests, ${records.length} page records`);
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
