import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { crawlerAddressArgs } from '../../synthetic-web/addresses.js';
import { realWeb } from '../../synthetic-web/real-web.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { crawlArgs, firstFetchedAt, removeDir, startCli, tempDir, writeSeeds } from './harness.js';

/** Whether `host` is `trap` or one of its subdomains. */
const under = (host: string, trap: string) => host === trap || host.endsWith(`.${trap}`);

const PARTITIONS = 4;
// the defaults of --min-delay and --ip-gap, which bound how soon the crawl can end
const MIN_DELAY_MS = 1_000;
const IP_GAP_MS = 100;

test(
  'a web laid out like the real one (hosts sharing 24 addresses), on 4 partitions: every page of every normal site fetched, ≤ 100 requests per trap host, idle by itself, no politeness violation',
  { timeout: 1_200_000 },
  async (t) => {
    const { sites, normalPages, trapHosts } = realWeb();
    const web = await SyntheticWeb.start({ sites });
    const dir = tempDir('coverage');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const began = Date.now();
      // every limit at its default, the trap rules too
      const extra = ['--partitions', String(PARTITIONS), ...crawlerAddressArgs(sites)];
      const run = await startCli(crawlArgs(seeds, join(dir, 'data'), extra)).exited;
      const took = Date.now() - began;
      assert.equal(run.code, 0, run.stderr);
      t.diagnostic(run.stdout.trim());

      const log = web.requests();
      // every request reached its host's own address: the per-IP judge below judges real addresses
      const misdirected = log.filter((e) => web.ipOf(e.host) !== undefined && e.address !== web.ipOf(e.host));
      assert.deepEqual(
        misdirected.slice(0, 5),
        [],
        `${misdirected.length} requests reached another address than their host's`,
      );
      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf });
      // the web runs in this process, beside the test runner: a loaded machine stalls its loop, and
      // the judge reads each start as late as the web's startSlack says it may be
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));

      // coverage, from the server's log
      const fetchedAt = firstFetchedAt(log);
      const expected = [...normalPages].flatMap(([host, paths]) => paths.map((p) => `${host}${p}`));
      const missing = expected.filter((u) => !fetchedAt.has(u));
      const coverage = (100 * (expected.length - missing.length)) / expected.length;
      t.diagnostic(`coverage ${coverage.toFixed(2)} % of ${expected.length} normal pages; crawl took ${took} ms`);
      assert.deepEqual(missing, [], 'normal pages not fetched');

      const perHost = new Map<string, number>();
      for (const e of log) perHost.set(e.host, (perHost.get(e.host) ?? 0) + 1);
      for (const trap of trapHosts) {
        const hosts = [...perHost].filter(([h]) => under(h, trap));
        const most = Math.max(0, ...hosts.map(([, c]) => c));
        t.diagnostic(`${trap}: at most ${most} requests on one of ${hosts.length} hosts`);
        assert.ok(hosts.length > 0, `trap ${trap} was never reached: the test proves nothing`);
        for (const [host, n] of hosts) assert.ok(n <= 100, `trap host ${host} got ${n} requests`);
      }

      // how close to the politeness floor (reported, not asserted: a loaded machine is slower): no
      // crawl fetches a site faster than one page per --min-delay, nor an address's pages and
      // robots.txt files faster than one per --ip-gap (trap requests left out: a lower floor)
      const start = Math.min(...log.map((e) => e.start));
      const hostFloor = Math.max(...[...normalPages.values()].map((p) => p.length)) * MIN_DELAY_MS;
      const onAddress = new Map<string, number>();
      for (const [host, paths] of normalPages) {
        const address = web.ipOf(host)!;
        onAddress.set(address, (onAddress.get(address) ?? 0) + paths.length + 1);
      }
      const addressFloor = (Math.max(...onAddress.values()) - 1) * IP_GAP_MS;
      const floorMs = Math.max(hostFloor, addressFloor);
      const within = expected.filter((u) => fetchedAt.get(u)! - start <= 1.05 * floorMs).length;
      t.diagnostic(
        `${((100 * within) / expected.length).toFixed(1)} % of normal pages within 1.05 × the floor (${floorMs} ms: largest site ${hostFloor} ms, busiest of ${onAddress.size} addresses ${addressFloor} ms); last request ended after ${Math.round(Math.max(...log.map((e) => e.end)) - start)} ms`,
      );
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
