import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { CLI, countByUrl, finallyFetchedUrls, removeDir, sh, sleep, tempDir, writeSeeds } from '../e2e/harness.js';
import { CLUSTER, createReplicatedTopics, hubSite, startCluster } from './cluster.js';
import { kafkaInfra } from './infra.js';
import { launchInstance, type Instance } from './instances.js';
import { injectArgs, pageRecordsOf } from './page-records.js';
import { crawlerAddressArgs } from '../../synthetic-web/addresses.js';
import {
  commitQuantile,
  longestGap,
  type Buckets,
  addBuckets,
  parseCommitBuckets,
  violationsWithRequests,
} from './rolling-figures.js';

// Issue #36's third Done-when: 64 partitions on a three-node cluster, two instances of each role
// (six in all, a standby of every task), and a rolling restart of every instance while the crawl
// runs, as a deployment's update does it: one at a time, SIGTERM, started again on its data, the
// next only once it is ready. The server's log says how long the crawl stopped; the commit
// durations every instance measured (each life's /metrics read just before its SIGTERM) say the
// p99; the page records, read by a consumer we did not write, say exactly once; the judge says
// polite, per host and per address. `npm run test:rolling`; CRAWLSTREAM_TEST_LOGS=<dir> keeps every instance's output.

const PARTITIONS = Number(process.env['CRAWLSTREAM_ROLLING_PARTITIONS'] ?? 64);
const SITES = 128;
const PAGES = 25;
const CRAWL_DELAY_S = 1;
/** The longest the crawl may stop (no request at all reaches the web) during the rolling restart. */
const STOP_BOUND_MS = 10_000;
/** After an instance is ready again, before the next one is stopped (a deployment's minReadySeconds). */
const SETTLE_MS = 5_000;
const COMMIT_INTERVAL_S = 0.2;
const STANDBYS = process.env['CRAWLSTREAM_ROLLING_STANDBYS'] ?? '1';
const CAP_MS = 1_500_000;

function rollingSites(tag: string): SiteSpec[] {
  // two sites an address, as on shared hosting: the judge checks the per-address rules too
  return Array.from({ length: SITES }, (_, i) => ({
    ...hubSite(`roll${i}-${tag}.test`, PAGES, CRAWL_DELAY_S),
    address: `127.0.1.${10 + Math.floor(i / 2)}`,
  }));
}

async function opsText(i: Instance, path: string): Promise<{ status: number; body: string } | undefined> {
  if (!i.ops) return undefined;
  try {
    const res = await fetch(`http://${i.ops}/${path}`, { signal: AbortSignal.timeout(10_000) });
    return { status: res.status, body: await res.text() };
  } catch {
    return undefined;
  }
}

/** Whether `i` answers /readyz 200 and runs at least one task. */
async function readyAndRunning(i: Instance): Promise<boolean> {
  const ready = await opsText(i, 'readyz');
  if (ready?.status !== 200) return false;
  const status = await opsText(i, 'status');
  if (!status) return false;
  const tasks = (JSON.parse(status.body) as { tasks?: { state: string }[] }).tasks ?? [];
  return tasks.some((t) => t.state === 'running');
}

test(
  `issue #36 rolling restart: ${PARTITIONS} partitions on a 3-broker cluster, 2 instances of each role with standbys, every instance restarted in turn while the crawl runs; the crawl never stops for more than 10 s, commit p99 under the commit interval, every page recorded exactly once, no politeness violation`,
  { timeout: CAP_MS + 300_000 },
  async (t) => {
    const { registry } = kafkaInfra();
    const tag = Date.now().toString(36);
    const generated = rollingSites(tag);
    const web = await SyntheticWeb.start({ sites: generated });
    const dir = tempDir('kafka-rolling');
    const instances: Instance[] = [];
    const began = Date.now();
    const keep = process.env['CRAWLSTREAM_TEST_LOGS'];
    const note = (line: string): void => {
      t.diagnostic(line);
      if (keep) appendFileSync(join(keep, 'rolling.log'), `${new Date().toISOString()} ${line}\n`);
    };
    const at = (): string => `${((Date.now() - began) / 1000).toFixed(1)} s, ${web.requests().length} requests`;
    try {
      const brokers = await startCluster();
      const partitions = ['--partitions', String(PARTITIONS)];
      await createReplicatedTopics(brokers, PARTITIONS);
      note(`${at()}: cluster up on ${brokers}, topics of ${PARTITIONS} partitions`);
      const injected = await sh(process.execPath, [
        CLI,
        ...injectArgs(writeSeeds(dir, web.seedUrls()), brokers, registry),
        ...partitions,
      ]);
      assert.equal(injected.code, 0, injected.stderr);
      const common = [
        '--brokers',
        brokers,
        '--registry',
        registry,
        ...partitions,
        '--resolve',
        '*.test=127.0.0.1',
        ...crawlerAddressArgs(generated),
        '--no-system-dns',
        '--quiet',
        '--metrics-port',
        '0',
        '--standby-replicas',
        STANDBYS,
      ];
      const launch = (name: string, role: string): Instance =>
        launchInstance(instances, dir, name, role, common, began);
      for (const suffix of ['a', 'b'])
        for (const role of ['frontier', 'fetcher', 'parser']) launch(`${role}-${suffix}`, role);

      const waitReady = async (i: Instance, ms: number): Promise<boolean> => {
        for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(500))
          if (await readyAndRunning(i)) return true;
        return false;
      };
      for (const i of instances)
        assert.ok(await waitReady(i, 600_000), `${i.name} never became ready:\n${i.stderr().slice(-4000)}`);
      while (web.requests().length < 200 && Date.now() - began < 600_000) await sleep(500);
      note(`${at()}: all six ready, requests flow`);
      await sleep(10_000);

      const commits: Buckets = new Map();
      const pastLives: string[] = [];
      const scrapeCommits = async (i: Instance): Promise<void> => {
        const metrics = await opsText(i, 'metrics');
        assert.ok(metrics, `${i.name} did not answer /metrics:\n${i.stderr().slice(-4000)}`);
        addBuckets(commits, parseCommitBuckets(metrics.body));
      };
      const rollBegan = Date.now();
      const restarts: string[] = [];
      for (const i of [...instances]) {
        await scrapeCommits(i);
        const stopAt = Date.now();
        i.child.kill('SIGTERM');
        const ended = await i.exited;
        assert.equal(ended.code, 0, `${i.name} exited ${ended.code}/${ended.signal}\n${ended.stderr.slice(-4000)}`);
        pastLives.push(`== ${i.name} before its restart\n${ended.stderr.slice(-4000)}`);
        const stoppedAt = Date.now();
        launch(i.name, i.role);
        assert.ok(await waitReady(i, 300_000), `${i.name} never became ready again:\n${i.stderr().slice(-4000)}`);
        const readyAt = Date.now();
        restarts.push(
          `${i.name}: stopped in ${stoppedAt - stopAt} ms, ready ${readyAt - stoppedAt} ms after its start`,
        );
        note(`${at()}: ${restarts.at(-1)}`);
        await sleep(SETTLE_MS);
      }
      const rollEnded = Date.now();
      // the figures as the roll ends (the rest of the crawl only checks what it committed)
      await sleep(STOP_BOUND_MS);
      const rolled = [...commits];
      for (const i of instances) await scrapeCommits(i);
      const stop = longestGap(
        web.requests().map((r) => r.start),
        rollBegan,
        rollEnded,
      );
      const p99 = commitQuantile(commits, 0.99);
      const p50 = commitQuantile(commits, 0.5);
      note(
        `${at()}: rolling restart ${((rollEnded - rollBegan) / 1000).toFixed(1)} s; the crawl's longest stop in it ${stop.ms.toFixed(0)} ms ` +
          `(from ${((stop.from - began) / 1000).toFixed(1)} s); commits ${commits.get(Infinity) ?? 0}, p50 ≤ ${p50} s, p99 ≤ ${p99} s`,
      );
      commits.clear();
      for (const [le, n] of rolled) commits.set(le, n);

      // every page the web has, fetched; then quiet for 15 s
      const generatedPages = generated.flatMap((s) => Object.keys(s.pages).map((p) => web.url(s.host, p)));
      const unfetched = (): string[] => {
        const fetched = finallyFetchedUrls(web.requests(), web.port);
        return generatedPages.filter((u) => !fetched.has(u));
      };
      const leftAtRollEnd = unfetched().length;
      let last = -1;
      let quietSince = Date.now();
      while ((Date.now() - quietSince < 15_000 || unfetched().length > 0) && Date.now() - began < CAP_MS) {
        await sleep(1000);
        const n = web.requests().length;
        if (n !== last) [last, quietSince] = [n, Date.now()];
      }
      const log = web.requests();
      if (keep) writeFileSync(join(keep, 'requests.jsonl'), log.map((e) => JSON.stringify(e)).join('\n'));
      for (const i of instances) await scrapeCommits(i);
      // what the crawl paid for politeness across processes: leases the fetchers dropped past their window
      let droppedLate = 0;
      for (const i of instances)
        droppedLate += Number(
          /^crawlstream_leases_dropped_late_total (\S+)$/m.exec((await opsText(i, 'metrics'))?.body ?? '')?.[1] ?? 0,
        );
      for (const i of instances) i.child.kill('SIGTERM');
      for (const i of instances) {
        const ended = await i.exited;
        assert.equal(ended.code, 0, `${i.name} exited ${ended.code}/${ended.signal}\n${ended.stderr.slice(-4000)}`);
      }

      const crawlP99 = commitQuantile(commits, 0.99);
      note(
        `${at()}: crawl done; ${leftAtRollEnd} pages were left when the roll ended; ` +
          `commits over the whole crawl ${commits.get(Infinity) ?? 0}, p99 ≤ ${crawlP99} s; ` +
          `${droppedLate} leases dropped late by the fetchers' last lives`,
      );
      // every bound is checked and every miss said at once: one run of this test is minutes
      const misses: string[] = [];
      const check = (ok: boolean, what: string): void => void (ok || misses.push(what));
      check(leftAtRollEnd > 0, 'the crawl ended before the rolling restart did: the stop bound measured nothing');
      const never = unfetched();
      check(never.length === 0, `${never.length} pages the crawl never fetched: ${never.slice(0, 5).join(' ')}`);

      const records = await pageRecordsOf(brokers, registry);
      const counts = countByUrl(records);
      const twice = [...counts].filter(([, n]) => n !== 1);
      check(twice.length === 0, `URLs with more than one committed page record: ${JSON.stringify(twice.slice(0, 5))}`);
      const unrecorded = generatedPages.filter((u) => !counts.has(u));
      check(
        unrecorded.length === 0,
        `${unrecorded.length} pages without a page record: ${unrecorded.slice(0, 5).join(' ')}`,
      );
      note(`${records.length} page records of ${counts.size} URLs (${generatedPages.length} pages on the web)`);

      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', crashes: [], ipOf: web.ipOf });
      // each violation with the requests it names, to set beside the fetchers' "request sent" lines
      // (CRAWLSTREAM_LOG_LEVEL=debug): a late stamp here or a start there
      if (keep)
        writeFileSync(join(keep, 'violations.json'), JSON.stringify(violationsWithRequests(report, log), null, 1));
      // the judge reads each start as late as the web's startSlack says it may be
      check(report.violations.length === 0, formatPolitenessReport(report));
      check(stop.ms <= STOP_BOUND_MS, `the crawl stopped ${stop.ms.toFixed(0)} ms during the rolling restart`);
      check(
        crawlP99 !== undefined && crawlP99 <= COMMIT_INTERVAL_S,
        `commit p99 ≤ ${crawlP99} s, interval ${COMMIT_INTERVAL_S} s`,
      );
      assert.deepEqual(
        misses,
        [],
        `${misses.join('\n')}\n${misses.length > 0 ? pastLives.join('\n').slice(-20_000) : ''}`,
      );
    } finally {
      for (const i of instances) i.child.kill('SIGKILL');
      await Promise.all(instances.map((i) => i.exited));
      await web.close();
      const stopped = await sh('bash', [CLUSTER, 'stop']);
      if (stopped.code !== 0) note(`cluster.sh stop: ${stopped.stderr}`);
      removeDir(dir);
    }
  },
);
