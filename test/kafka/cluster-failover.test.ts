import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { siteOf } from '../../processors/common/normalize.js';
import { HISTORY_STORE } from '../../processors/frontier/frontier-stores.js';
import { KafkaPort, type OutRecord } from '../../runtime/engines/kafka/kafka-port.js';
import { partitionFor } from '../../runtime/partitioner.js';
import { crawlTopology } from '../../topology/crawl-topology.js';
import { CLI, removeDir, sh, sleep, tempDir, writeSeeds } from '../e2e/harness.js';
import { CLUSTER, createReplicatedTopics, hubSite, startCluster } from './cluster.js';
import { kafkaInfra } from './infra.js';
import { launchInstance, type Instance } from './instances.js';
import { injectArgs, LOOPBACK_WEB_ARGS } from './page-records.js';

// Issue #36's failover: a frontier partition with over 1 GiB of changelog, its task on one of two
// frontier instances of a three-node cluster. The instance is SIGKILLed; the server's log says
// when fetching for that partition's sites resumes. Once with a standby on the other instance
// (--standby-replicas 1), once without (a full restore), each under its own application id.

const PARTITIONS = 4;
const SITES = 16;
const PAGES = 60;
const CRAWL_DELAY_S = 1;
/**
 * Changelog filler of the killed partition: random history records, never read (no URL has their
 * fingerprints), of about a real history record's size (a UrlHistory of validators and digests is
 * ~100–200 B): a restore's cost is mostly per record, so 1 GiB of 1 KiB values would restore ~5×
 * faster than the same bytes of real records.
 */
const FILL_BYTES = Number(process.env['CRAWLSTREAM_FAILOVER_FILL_BYTES'] ?? 1.1 * 2 ** 30);
const FILL_VALUE = Number(process.env['CRAWLSTREAM_FAILOVER_VALUE_BYTES'] ?? 200);
const STANDBY_RESUME_MS = 30_000;

function failoverSites(tag: string): SiteSpec[] {
  return Array.from({ length: SITES }, (_, i) => hubSite(`fo${i}-${tag}.test`, PAGES, CRAWL_DELAY_S));
}

interface Failover {
  /** Kill → the first request to a site of the partition. */
  readonly resumeMs: number;
  /** The longest a site of the partition went without a request around the kill. */
  readonly gapMs: number;
  /** What the surviving instance said about the task's opening. */
  readonly opened: string;
}

/** One failover under `appId` on `brokers`; `standbys` is --standby-replicas. */
async function failover(
  brokers: string,
  registry: string,
  appId: string,
  standbys: number,
  say: (l: string) => void,
): Promise<Failover> {
  const generated = failoverSites(appId);
  const web = await SyntheticWeb.start({ sites: generated });
  const dir = tempDir(`kafka-failover-${standbys}`);
  const instances: Instance[] = [];
  const began = Date.now();
  try {
    await createReplicatedTopics(brokers, PARTITIONS, appId);
    // the partition whose task dies: the one most of the sites fall in
    const partitionOf = (host: string): number => partitionFor(Buffer.from(siteOf(`http://${host}/`)), PARTITIONS);
    const counts = new Array<number>(PARTITIONS).fill(0);
    for (const s of generated) counts[partitionOf(s.host)]!++;
    const victim = counts.indexOf(Math.max(...counts));
    const hosts = new Set(generated.map((s) => s.host).filter((h) => partitionOf(h) === victim));
    const topology = crawlTopology({
      config: validateCrawlConfig({}),
      partitions: PARTITIONS,
      warcDir: dir,
      applicationId: appId,
    });
    const changelog = topology.changelogTopic(HISTORY_STORE);
    const port = new KafkaPort([brokers], 'crawlstream-test');
    const producer = await port.producer();
    const filled = Date.now();
    try {
      for (let sent = 0; sent < FILL_BYTES;) {
        const batch: OutRecord[] = [];
        for (let i = 0; i < 16_384; i++, sent += FILL_VALUE + 8)
          batch.push({
            topic: changelog,
            partition: victim,
            key: randomBytes(8),
            value: randomBytes(FILL_VALUE),
            timestamp: Date.now(),
          });
        await producer.send(batch);
      }
    } finally {
      await producer.close();
      await port.close();
    }
    say(
      `${appId}: ${(FILL_BYTES / 2 ** 30).toFixed(2)} GiB of ${changelog} partition ${victim} written in ${((Date.now() - filled) / 1000).toFixed(0)} s; ${hosts.size} sites there`,
    );
    const injected = await sh(process.execPath, [
      CLI,
      ...injectArgs(writeSeeds(dir, web.seedUrls()), brokers, registry, appId),
      '--partitions',
      String(PARTITIONS),
    ]);
    assert.equal(injected.code, 0, injected.stderr);
    const common = [
      '--brokers',
      brokers,
      '--registry',
      registry,
      '--app-id',
      appId,
      '--partitions',
      String(PARTITIONS),
      ...LOOPBACK_WEB_ARGS,
      '--quiet',
      '--metrics-port',
      '0',
      '--standby-replicas',
      String(standbys),
    ];
    const launch = (name: string, role: string): Instance => launchInstance(instances, dir, name, role, common, began);
    const frontiers = [launch('frontier-a', 'frontier'), launch('frontier-b', 'frontier')];
    launch('fetcher', 'fetcher');
    launch('parser', 'parser');
    const status = async (i: Instance): Promise<{ partition: number; state: string }[]> => {
      if (!i.ops) return [];
      try {
        const r = await fetch(`http://${i.ops}/status`);
        return ((await r.json()) as { tasks?: { partition: number; state: string }[] }).tasks ?? [];
      } catch {
        return [];
      }
    };
    const metric = async (i: Instance, name: string): Promise<number | undefined> => {
      if (!i.ops) return undefined;
      const text = await (await fetch(`http://${i.ops}/metrics`)).text().catch(() => '');
      const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
      return m ? Number(m[1]) : undefined;
    };
    // the victim's task runs on one frontier and fetching for its sites is under way; with standbys,
    // the other frontier's standby of it has caught up
    let holder: Instance | undefined;
    let other: Instance | undefined;
    const onVictim = () => web.requests().filter((r) => hosts.has(r.host) && r.path !== '/robots.txt');
    for (const deadline = Date.now() + 600_000; ;) {
      assert.ok(
        Date.now() < deadline,
        `the victim's task was not running with its sites fetched in 600 s:\n${frontiers.map((f) => f.stderr().slice(-3000)).join('\n')}`,
      );
      await sleep(1_000);
      holder = undefined;
      for (const f of frontiers)
        if ((await status(f)).some((t) => t.partition === victim && t.state === 'running')) holder = f;
      if (!holder || onVictim().length < 20) continue;
      other = frontiers.find((f) => f !== holder)!;
      if (standbys === 0) break;
      const standing = (await status(other)).some((t) => t.partition === victim && t.state === 'standby');
      const lag = await metric(other, 'crawlstream_standby_lag_records');
      if (standing && lag === 0) break;
    }
    say(
      `${appId}: ${holder!.name} runs partition ${victim} after ${((Date.now() - began) / 1000).toFixed(0)} s; ${onVictim().length} requests to its sites`,
    );
    await sleep(3_000);
    const killedAt = Date.now();
    holder!.child.kill('SIGKILL');
    await holder!.exited;
    let resumed: number | undefined;
    for (const deadline = killedAt + 600_000; resumed === undefined && Date.now() < deadline;) {
      await sleep(250);
      resumed = onVictim().find((r) => r.start > killedAt + 500)?.start;
    }
    assert.ok(
      resumed !== undefined,
      `fetching for partition ${victim} never resumed:\n${other!.stderr().slice(-4000)}`,
    );
    const opened = other!
      .stderr()
      .split('\n')
      .filter((l) => new RegExp(`task \\d+_${victim}: restored|standby \\d+_${victim}`).test(l))
      .join('\n');
    const times = onVictim()
      .map((r) => r.start)
      .filter((t) => t > killedAt - 10_000 && t <= resumed!);
    let gapMs = 0;
    for (let i = 1; i < times.length; i++) gapMs = Math.max(gapMs, times[i]! - times[i - 1]!);
    // polite throughout: the judge reads the server's log
    const report = checkPoliteness(web.requests(), web.sites, { userAgent: 'crawlstream', crashes: [killedAt] });
    assert.equal(report.violations.length, 0, formatPolitenessReport(report));
    return { resumeMs: resumed! - killedAt, gapMs, opened };
  } finally {
    for (const i of instances) i.child.kill('SIGKILL');
    await Promise.all(instances.map((i) => i.exited));
    await web.close();
    removeDir(dir);
  }
}

test(
  'issue #36 failover: a frontier instance holding a partition with over 1 GiB of changelog is SIGKILLed; with a standby elsewhere fetching for its sites resumes within 30 s, without one after a full restore',
  { timeout: 2_400_000 },
  async (t) => {
    const { registry } = kafkaInfra();
    const brokers = await startCluster();
    t.after(() => sh('bash', [CLUSTER, 'stop']));
    const tag = Date.now().toString(36);
    const withStandby = await failover(brokers, registry, `fo-standby-${tag}`, 1, (l) => t.diagnostic(l));
    t.diagnostic(
      `with a standby: fetching resumed ${withStandby.resumeMs} ms after the SIGKILL (longest gap ${withStandby.gapMs} ms)\n${withStandby.opened}`,
    );
    const without = await failover(brokers, registry, `fo-full-${tag}`, 0, (l) => t.diagnostic(l));
    t.diagnostic(
      `without: fetching resumed ${without.resumeMs} ms after the SIGKILL (longest gap ${without.gapMs} ms)\n${without.opened}`,
    );
    assert.ok(
      withStandby.resumeMs < STANDBY_RESUME_MS,
      `with a standby, fetching resumed after ${withStandby.resumeMs} ms`,
    );
    assert.ok(withStandby.resumeMs < without.resumeMs, 'the standby beat a full restore');
  },
);
