import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { controlInbox } from '../../cli/control.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';
import { trapWeb } from '../../synthetic-web/trap-sites.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { crawlArgs, firstFetchedAt, removeDir, sleep, startCli, tempDir, writeSeeds } from './harness.js';

/** Whether `host` is `trap` or one of its subdomains. */
const under = (host: string, trap: string) => host === trap || host.endsWith(`.${trap}`);

test(
  'traps of shapes the rules were not written for, each reached by one link: ≤ 50 requests per trap host, every normal page fetched, idle within 1.2 × the normal pages’ time',
  { timeout: 300_000 },
  async (t) => {
    const { sites, normalPages, trapHosts } = trapWeb(8, 40);
    const web = await SyntheticWeb.start({ sites });
    const dir = tempDir('traps');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      // every host is on 127.0.0.1 here, so the per-IP limit must not be what paces the crawl;
      // the trap rules run with their defaults
      const run = await startCli(crawlArgs(seeds, join(dir, 'data'), ['--ip-concurrency', '1000', '--ip-gap', '0']))
        .exited;
      assert.equal(run.code, 0, run.stderr);
      t.diagnostic(run.stdout.trim());
      // each layer cut something here, and the end-of-run summary says how much, by reason: the
      // hop limit refuses for good, the template rule and the budget only defer
      assert.match(run.stdout, /dropped \{too-many-hops\}\s+[1-9]/, 'no too-many-hops cuts reported');
      for (const reason of ['url-template', 'site-budget'])
        assert.match(run.stdout, new RegExp(`deferred \\{${reason}\\}\\s+[1-9]`), `no ${reason} deferrals reported`);
      for (const reason of ['url-template', 'site-budget'])
        assert.doesNotMatch(run.stdout, new RegExp(`dropped \\{${reason}\\}`), `${reason} still drops`);
      assert.match(run.stdout, /deferred now\s+[1-9]/, 'the URLs still deferred at the end are not reported');
      const log = web.requests();
      const report = checkPoliteness(log, web.sites, {
        userAgent: 'crawlstream',
        ipOf: web.ipOf,
        ipConcurrency: 1000,
        ipGapMs: 0,
      });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));

      const fetchedAt = firstFetchedAt(log);
      const expected = [...normalPages].flatMap(([host, paths]) => paths.map((p) => `${host}${p}`));
      assert.deepEqual(
        expected.filter((u) => !fetchedAt.has(u)),
        [],
        'normal pages not fetched',
      );

      const perHost = new Map<string, number>();
      for (const e of log) perHost.set(e.host, (perHost.get(e.host) ?? 0) + 1);
      for (const trap of trapHosts) {
        const hosts = [...perHost].filter(([h]) => under(h, trap));
        const total = hosts.reduce((n, [, c]) => n + c, 0);
        const most = Math.max(0, ...hosts.map(([, c]) => c));
        const last = Math.max(...log.filter((e) => under(e.host, trap)).map((e) => e.end)) - log[0]!.start;
        t.diagnostic(
          `${trap}: ${total} requests on ${hosts.length} hosts, at most ${most} on one; last ended after ${Math.round(last)} ms`,
        );
        assert.ok(hosts.length > 0, `trap ${trap} was never reached: the test proves nothing`);
        for (const [host, n] of hosts) assert.ok(n <= 50, `trap host ${host} got ${n} requests`);
      }

      const start = Math.min(...log.map((e) => e.start));
      const normalDone = Math.max(...expected.map((u) => fetchedAt.get(u)!)) - start;
      const idle = Math.max(...log.map((e) => e.end)) - start;
      t.diagnostic(
        `normal pages done after ${Math.round(normalDone)} ms, last request ended after ${Math.round(idle)} ms (${(idle / normalDone).toFixed(2)} ×)`,
      );
      assert.ok(idle <= 1.2 * normalDone, `traps kept the crawl busy until ${Math.round(idle)} ms`);
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);

/** Requests to `site`'s hosts (pages and robots.txt), in order of start. */
const toSite = (log: RequestLogEntry[], site: string) =>
  log.filter((e) => under(e.host, site)).sort((a, b) => a.start - b.start);

/** The gap before each request of `later` (sorted by start), after the end of the one before it in `all`. */
function gapsBefore(all: RequestLogEntry[], later: RequestLogEntry[]): number[] {
  return later.map((e) => {
    const i = all.indexOf(e);
    return i === 0 ? Infinity : e.start - all[i - 1]!.end;
  });
}

/** Waits until the crawl has taken every command out of its inbox; returns when. Fails if the crawl ended first. */
async function taken(dataDir: string, running: () => boolean): Promise<number> {
  const inbox = controlInbox(dataDir);
  while (existsSync(inbox) && readdirSync(inbox).some((f) => !f.endsWith('.bad'))) {
    assert.ok(running(), 'the crawl ended before it took the control command');
    await sleep(50);
  }
  return Date.now();
}

test(
  'control slow: every later request to the site’s hosts starts ≥ 3 s after the previous one ended; after resume the normal gap returns',
  { timeout: 240_000 },
  async (t) => {
    // long enough that the crawl outlives the slow period even if slow were ignored
    const pages = (prefix: string) =>
      Array.from({ length: 24 }, (_, i) => `/${prefix}-${'abcdefghijklmnopqrstuvwx'[i]}.html`);
    const site: SiteSpec = {
      host: 'steady.test',
      seed: true,
      pages: {
        '/': {
          title: 'Steady',
          links: [...pages('p'), ...pages('d').map((p) => `http://docs.steady.test:{{PORT}}${p}`)],
        },
        ...Object.fromEntries(pages('p').map((p) => [p, { title: `Steady ${p}`, links: ['/'] }])),
      },
    };
    const docs: SiteSpec = {
      host: 'docs.steady.test',
      pages: Object.fromEntries(pages('d').map((p) => [p, { title: `Docs ${p}`, links: [] }])),
    };
    const web = await SyntheticWeb.start({ sites: [site, docs] });
    const dir = tempDir('slow');
    const data = join(dir, 'data');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const { exited } = startCli(crawlArgs(seeds, data, ['--quiet']));
      let ended = false;
      void exited.then(() => (ended = true));
      const running = () => !ended;
      while (toSite(web.requests(), 'steady.test').length < 6) {
        assert.ok(running(), 'the crawl ended before it was slowed');
        await sleep(100);
      }
      const control = (args: string[]) => startCli(['control', ...args, '--data', data]).exited;
      assert.equal((await control(['slow', 'steady.test', '--min-gap', '3000'])).code, 0);
      const slowAt = await taken(data, running);
      await sleep(13_000);
      assert.equal((await control(['resume', 'steady.test'])).code, 0);
      const resumeAt = await taken(data, running);
      const run = await exited;
      assert.equal(run.code, 0, run.stderr);

      const log = web.requests();
      for (const host of ['steady.test', 'docs.steady.test']) {
        const all = log.filter((e) => e.host === host).sort((a, b) => a.start - b.start);
        // a lease handed out before the command reached the frontier may keep its time: the first request after it
        const slowed = all.filter((e) => e.start > slowAt && e.start <= resumeAt).slice(1);
        const resumed = all.filter((e) => e.start > resumeAt).slice(1);
        const slowGaps = gapsBefore(all, slowed);
        const resumedGaps = gapsBefore(all, resumed);
        t.diagnostic(
          `${host}: gaps while slowed ${slowGaps.map(Math.round).join(', ')}; after resume ${resumedGaps.map(Math.round).join(', ')}`,
        );
        assert.ok(slowed.length >= 2, `${host}: too few requests while slowed to judge`);
        assert.ok(
          slowGaps.every((g) => g >= 3_000),
          `${host}: a request came less than 3 s after the previous one while slowed`,
        );
        assert.ok(resumed.length >= 2, `${host}: too few requests after resume to judge`);
        assert.ok(
          resumedGaps.every((g) => g < 3_000),
          `${host}: the slow gap outlived resume`,
        );
      }
      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);

test(
  'the per-IP limit holds from the first request: two new hosts on one address never exceed --ip-concurrency or --ip-gap',
  { timeout: 120_000 },
  async () => {
    const site = (host: string): SiteSpec => ({
      host,
      seed: true,
      pages: {
        '/': { title: host, links: ['/a.html', '/b.html', '/c.html'] },
        '/a.html': { title: `${host} a`, links: [] },
        '/b.html': { title: `${host} b`, links: [] },
        '/c.html': { title: `${host} c`, links: [] },
      },
    });
    const web = await SyntheticWeb.start({ sites: [site('first.test'), site('second.test')] });
    const dir = tempDir('per-ip');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const gapMs = 400;
      const run = await startCli(
        // one partition: the limiter's own rule, without the time slots several partitions share
        crawlArgs(seeds, join(dir, 'data'), [
          '--ip-concurrency',
          '1',
          '--ip-gap',
          String(gapMs),
          '--partitions',
          '1',
          '--quiet',
        ]),
      ).exited;
      assert.equal(run.code, 0, run.stderr);
      // both hosts resolve to 127.0.0.1 (crawlArgs): one address
      const log = web.requests().sort((a, b) => a.start - b.start);
      assert.deepEqual(new Set(log.map((e) => e.host)), new Set(['first.test', 'second.test']));
      assert.equal(log.length, 10, 'robots.txt and four pages per host');
      for (let i = 1; i < log.length; i++) {
        const [a, b] = [log[i - 1]!, log[i]!];
        assert.ok(b.start >= a.end, `${b.host}${b.path} started while ${a.host}${a.path} was in flight`);
        assert.ok(
          b.start - a.start >= gapMs,
          `${b.host}${b.path} started ${Math.round(b.start - a.start)} ms after ${a.host}${a.path}`,
        );
      }
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
