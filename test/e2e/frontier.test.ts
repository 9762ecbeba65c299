import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { skewedWeb } from '../../synthetic-web/skewed-web.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { crawlArgs, firstFetchedAt, removeDir, sleep, startCli, tempDir, writeSeeds } from './harness.js';

const GAP_MS = 1000;

test(
  'on 100 sites of skewed size, 99 % of reachable pages arrive within 1.05 × the politeness floor; traps stay under 50 fetches',
  { timeout: 300_000 },
  async (t) => {
    const { sites, normalPages, trapHosts } = skewedWeb(100, 40);
    const web = await SyntheticWeb.start({ sites });
    const dir = tempDir('skewed');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      // every host is on 127.0.0.1 here, so the per-IP limit must not be what paces the crawl
      const run = await startCli(
        crawlArgs(seeds, join(dir, 'data'), [
          '--ip-concurrency',
          '1000',
          '--ip-gap',
          '0',
          // the trap rules run with their defaults: no budget tuned to this web's traps
          '--quiet',
        ]),
      ).exited;
      assert.equal(run.code, 0, run.stderr);
      const log = web.requests();
      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream' });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));

      // coverage: every normal page fetched, and when
      const fetchedAt = firstFetchedAt(log);
      const expected = [...normalPages].flatMap(([host, paths]) => paths.map((p) => `${host}${p}`));
      const missing = expected.filter((u) => !fetchedAt.has(u));
      assert.deepEqual(missing, [], 'normal pages not fetched');

      const largest = Math.max(...[...normalPages.values()].map((p) => p.length));
      const floorMs = (largest - 1) * GAP_MS;
      const start = Math.min(...log.map((e) => e.start));
      const ends = expected.map((u) => fetchedAt.get(u)! - start).sort((a, b) => a - b);
      const p99 = ends[Math.ceil(0.99 * ends.length) - 1]!;
      t.diagnostic(
        `${expected.length} normal pages on ${normalPages.size} sites, largest ${largest}; floor ${floorMs} ms; 99 % fetched after ${Math.round(p99)} ms (${(p99 / floorMs).toFixed(3)} × floor); all after ${Math.round(ends[ends.length - 1]!)} ms`,
      );
      assert.ok(p99 <= 1.05 * floorMs, `99 % of pages took ${Math.round(p99)} ms, more than 1.05 × ${floorMs} ms`);

      for (const host of trapHosts) {
        const n = log.filter((e) => e.host === host).length;
        t.diagnostic(`${host}: ${n} requests`);
        assert.ok(n <= 50, `trap ${host} got ${n} fetches`);
      }
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);

test(
  'an operator can block a site and pause another mid-crawl; the server sees it within seconds',
  { timeout: 240_000 },
  async (t) => {
    const t0 = Date.now();
    const step = (what: string) => t.diagnostic(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
    const web = await SyntheticWeb.start();
    const dir = tempDir('control');
    const data = join(dir, 'data');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const { exited } = startCli(crawlArgs(seeds, data, ['--duration', '90']));
      await sleep(2500);
      const control = (args: string[]) => startCli(['control', ...args, '--data', data]).exited;
      const blocked = await control(['block', 'beta.test']);
      assert.equal(blocked.code, 0, blocked.stderr);
      const paused = await control(['pause', 'gamma.test']);
      assert.equal(paused.code, 0, paused.stderr);
      const issuedAt = Date.now();
      step('block and pause issued');
      const run = await exited;
      step('first run ended');
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /crawl stopped \(idle\)/, run.stdout);
      const late = (host: string) => web.requests().filter((e) => e.host === host && e.start > issuedAt + 3000);
      assert.deepEqual(late('beta.test'), [], 'beta.test was fetched after it was blocked');
      assert.deepEqual(late('gamma.test'), [], 'gamma.test was fetched while paused');
      const gammaBefore = web.requests().filter((e) => e.host === 'gamma.test').length;
      assert.ok(gammaBefore < 5, 'gamma.test finished before the pause; the test proves nothing');

      // resume: the paused site's URLs were kept and are fetched by the next run
      assert.equal((await control(['resume', 'gamma.test'])).code, 0);
      step('resumed');
      const second = await startCli(crawlArgs(seeds, data, ['--duration', '90'])).exited;
      step('second run ended');
      assert.match(second.stdout, /crawl stopped \(idle\)/, second.stdout);
      assert.equal(second.code, 0, second.stderr);
      const gammaPaths = new Set(
        web
          .requests()
          .filter((e) => e.host === 'gamma.test')
          .map((e) => e.path),
      );
      for (const p of ['/', '/g1.html', '/g2.html', '/g3.html'])
        assert.ok(gammaPaths.has(p), `gamma.test${p} never fetched after resume`);
      const report = checkPoliteness(web.requests(), web.sites, { userAgent: 'crawlstream' });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
