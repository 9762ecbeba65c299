import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import type { PageSpec, SiteSpec } from '../../synthetic-web/sites.js';
import { CLI, sh } from '../e2e/harness.js';

/** The three-node KRaft cluster of the chaos, failover and rolling tests (replication 3, min.insync.replicas 2). */
export const CLUSTER = fileURLToPath(new URL('../../../scripts/kafka/cluster.sh', import.meta.url));

/** Starts the cluster (`cluster.sh start`) and returns its bootstrap brokers; fails the test when it cannot. */
export async function startCluster(): Promise<string> {
  const cluster = await sh('bash', [CLUSTER, 'start']);
  assert.equal(cluster.code, 0, `cluster.sh start:\n${cluster.stderr}`);
  const brokers = /^CRAWLSTREAM_CLUSTER_BROKERS=(\S+)$/m.exec(cluster.stdout)?.[1];
  assert.ok(brokers, `cluster.sh start printed no brokers:\n${cluster.stdout}`);
  return brokers;
}

/**
 * `crawlstream topics create` on the cluster: every topic of `partitions` partitions, three
 * replicas, two in sync (under `appId` when given); returns what it printed, or fails the test.
 */
export async function createReplicatedTopics(brokers: string, partitions: number, appId?: string): Promise<string> {
  const created = await sh(process.execPath, [
    CLI,
    'topics',
    'create',
    '--brokers',
    brokers,
    ...(appId !== undefined ? ['--app-id', appId] : []),
    '--partitions',
    String(partitions),
    '--replication-factor',
    '3',
    '--min-insync-replicas',
    '2',
  ]);
  assert.equal(created.code, 0, created.stderr);
  return created.stdout;
}

/**
 * A seed site of `pages` pages, its home linking every other page and each of those linking home,
 * whose robots.txt asks `crawlDelayS` seconds between requests: a crawl of it lasts at least
 * `pages` × that.
 */
export function hubSite(host: string, pages: number, crawlDelayS: number): SiteSpec {
  const paths = Array.from({ length: pages - 1 }, (_, j) => `/p${j}.html`);
  const spec: Record<string, PageSpec> = { '/': { title: `${host} home`, links: paths } };
  for (const p of paths) spec[p] = { title: `${host} ${p}`, links: ['/'] };
  return {
    host,
    seed: true,
    robots: { status: 200, body: `User-agent: *\nCrawl-delay: ${crawlDelayS}\n` },
    pages: spec,
  };
}
