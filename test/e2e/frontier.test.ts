import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { type PageSpec, type SiteSpec } from '../../synthetic-web/sites.js';
import { standardWeb } from '../../synthetic-web/standard-web.js';
import { skewedWeb } from '../../synthetic-web/skewed-web.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { crawlArgs, firstFetchedAt, removeDir, sleep, startCli, tempDir, writeSeeds } from './harness.js';

const GAP_MS = 1000;

test(
  'on 100 sites of skewed size, every reachable page is fetched politely, near the politeness floor; traps stay under 50 fetches',
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
      const report = checkPoliteness(log, web.sites, {
        userAgent: 'crawlstream',
        ipOf: web.ipOf,
        ipConcurrency: 1000,
        ipGapMs: 0,
      });
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
      // the 1.05 × floor promise is checked on the frontier's own clock (politeness-floor.test.ts);
      // on the wall clock of a shared machine only a gross loss of pace fails the crawl
      assert.ok(p99 <= 1.5 * floorMs, `99 % of pages took ${Math.round(p99)} ms, more than 1.5 × ${floorMs} ms`);

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

/** A seeded site of `n` pages, all linked from its home page: at a 1 s gap it takes n seconds. */
function longSite(host: string, n: number): SiteSpec {
  const paths = Array.from({ length: n }, (_, i) => `/p${i}.html`);
  const pages: Record<string, PageSpec> = { '/': { title: `${host} home`, links: paths } };
  for (const p of paths) pages[p] = { title: `${host} ${p}`, links: ['/'] };
  return { host, seed: true, pages };
}

/**
 * Follows a crawl's /metrics (its address from the --log-format json log) and notes when each
 * operator command was first counted as applied: from then on the frontier leases nothing it forbids.
 */
function watchControls(child: ChildProcess, exited: Promise<unknown>): Map<string, number> {
  const appliedAt = new Map<string, number>();
  let stderr = '';
  let address: string | undefined;
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    address ??= /"address":"([^"]+)"/.exec(stderr)?.[1];
  });
  let done = false;
  void exited.then(() => (done = true));
  void (async () => {
    while (!done) {
      if (address !== undefined) {
        try {
          const text = await (await fetch(`http://${address}/metrics`)).text();
          const now = Date.now();
          for (const [, action] of text.matchAll(/^crawlstream_control_commands_total\{action="(\w+)"\} [1-9]/gm))
            if (!appliedAt.has(action!)) appliedAt.set(action!, now);
        } catch {
          // the crawl closed its endpoints between two scrapes
        }
      }
      await sleep(100);
    }
  })();
  return appliedAt;
}

/** Waits for `done`; no deadline of its own: a crawl that never gets there ends by the test's timeout. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await sleep(50);
}

test(
  'an operator can block a site and pause another mid-crawl: once the crawl applies them, neither gets more than the request already leased',
  { timeout: 240_000 },
  async (t) => {
    const t0 = Date.now();
    const step = (what: string) => t.diagnostic(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
    const PAGES = 40;
    const web = await SyntheticWeb.start({
      sites: [...standardWeb(), longSite('blocked.test', PAGES), longSite('paused.test', PAGES)],
    });
    const dir = tempDir('control');
    const data = join(dir, 'data');
    const requestsOf = (host: string) => web.requests().filter((e) => e.host === host);
    const pagesOf = (host: string) => requestsOf(host).filter((e) => e.path !== '/robots.txt');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const { child, exited } = startCli(
        crawlArgs(seeds, data, ['--duration', '120', '--metrics-port', '0', '--log-format', 'json']),
      );
      const appliedAt = watchControls(child, exited);
      const control = (args: string[]) => startCli(['control', ...args, '--data', data]).exited;
      // both sites are under way (their home pages fetched, their 40 pages queued) before the commands
      await until(() => pagesOf('blocked.test').length > 0 && pagesOf('paused.test').length > 0);
      const blocked = await control(['block', 'blocked.test']);
      assert.equal(blocked.code, 0, blocked.stderr);
      const paused = await control(['pause', 'paused.test']);
      assert.equal(paused.code, 0, paused.stderr);
      step('block and pause issued');
      const run = await exited;
      step('first run ended');
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /crawl stopped \(idle\)/, run.stdout);
      for (const [host, action] of [
        ['blocked.test', 'BLOCK'],
        ['paused.test', 'PAUSE'],
      ] as const) {
        const at = appliedAt.get(action);
        assert.ok(at !== undefined, `the crawl never counted the ${action} command as applied`);
        // the one lease a host may hold when the command lands can still be fetched; nothing after it
        const late = requestsOf(host).filter((e) => e.start > at);
        step(
          `${host}: ${pagesOf(host).length} of ${PAGES + 1} pages, ${late.length} request(s) after ${action} applied`,
        );
        assert.ok(
          late.length <= 1,
          `${host} got ${late.length} requests after ${action} applied: ${late.map((e) => e.path).join(' ')}`,
        );
        assert.ok(pagesOf(host).length < PAGES, `${host} finished before the ${action}; the test proves nothing`);
      }

      // resume: the paused site's URLs were kept and are fetched by the next run
      assert.equal((await control(['resume', 'paused.test'])).code, 0);
      step('resumed');
      const second = await startCli(crawlArgs(seeds, data, ['--duration', '120'])).exited;
      step('second run ended');
      assert.match(second.stdout, /crawl stopped \(idle\)/, second.stdout);
      assert.equal(second.code, 0, second.stderr);
      const pausedPaths = new Set(pagesOf('paused.test').map((e) => e.path));
      for (let i = 0; i < PAGES; i++)
        assert.ok(pausedPaths.has(`/p${i}.html`), `paused.test/p${i}.html never fetched after resume`);
      assert.ok(pagesOf('blocked.test').length < PAGES, "the block was lifted by the other site's resume");
      const report = checkPoliteness(web.requests(), web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
