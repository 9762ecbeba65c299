import { parseArgs } from 'node:util';
import { CrawlError, InvalidOptionError } from '../core/errors.js';
import { KafkaPort } from '../runtime/engines/kafka/kafka-port.js';
import type { TopicDefinition } from '../runtime/engines/kafka/kafka-port.js';
import { topicDefinitions, type TopicOptions } from '../runtime/engines/kafka/topics.js';
import { crawlTopology } from '../topology/crawl-topology.js';
import { parseCrawlArgs } from './options.js';
import { kafkaEndpoints } from './run-options.js';
import { securityArgs, securityFromArgs, securityUsage } from './kafka-security-options.js';
import { tmpdir } from 'node:os';
import { APP_ID_ARG, APP_ID_USAGE, appIdOf } from './app-id.js';

export const TOPICS_USAGE = `usage: crawlstream topics create --brokers HOST:PORT[,..] [--partitions N] [--app-id ID]
           [--replication-factor N] [--min-insync-replicas N] [--keep-retention-ms MS]
       crawlstream topics list [--partitions N] [--app-id ID]       what create would make, one topic a line
       crawlstream topics manifest [--partitions N] [--app-id ID]   the same as Strimzi KafkaTopic resources (deploy/topics.yaml)

  creates every topic of the topology with its partition count (default 4), compacted changelogs
  and max.message.bytes for 'fetched', 'links' and 'parsed-pages'; existing topics are left alone
  (a partition count other than --partitions is an error). --replication-factor (default 1) and
  --min-insync-replicas apply to every topic created; --keep-retention-ms is how long
  page-records and control keep records (default -1: forever)
${APP_ID_USAGE}
${securityUsage(false)}`;

/** `topics create|list`: nothing in crawlstream relies on auto-created topics. */
export async function runTopics(args: string[], out: (line: string) => void): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        brokers: { type: 'string' },
        partitions: { type: 'string' },
        'replication-factor': { type: 'string' },
        'min-insync-replicas': { type: 'string' },
        'keep-retention-ms': { type: 'string' },
        ...APP_ID_ARG,
        ...securityArgs(false),
      },
    });
  } catch (err) {
    throw new InvalidOptionError(`${(err as Error).message}\n${TOPICS_USAGE}`);
  }
  const action = parsed.positionals[0];
  if (action !== 'create' && action !== 'list' && action !== 'manifest')
    throw new InvalidOptionError(
      `topics needs 'create', 'list' or 'manifest', got ${JSON.stringify(action ?? '')}\n${TOPICS_USAGE}`,
    );
  const applicationId = appIdOf(parsed.values['app-id']);
  const crawl = parseCrawlArgs([
    '--data',
    tmpdir(),
    ...(parsed.values.partitions !== undefined ? ['--partitions', parsed.values.partitions] : []),
  ]);
  const defs = topicDefinitions(
    crawlTopology({ config: crawl.config, partitions: crawl.partitions, warcDir: tmpdir(), applicationId }),
    topicOptions(parsed.values),
  );
  if (action === 'list') {
    for (const d of defs)
      out(
        `${d.name}\tpartitions=${d.partitions}\t${Object.entries(d.config)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`,
      );
    return 0;
  }
  if (action === 'manifest') {
    out(topicManifest(defs));
    return 0;
  }
  const { brokers } = kafkaEndpoints(parsed.values.brokers, undefined, TOPICS_USAGE);
  const port = new KafkaPort(brokers, 'crawlstream-admin', undefined, securityFromArgs(parsed.values).kafka);
  const admin = await port.admin();
  try {
    const created = await admin.createTopics(defs);
    const counts = await admin.partitionCounts(defs.map((d) => d.name));
    let mismatched = 0;
    for (const d of defs) {
      const has = counts.get(d.name);
      const state = created.includes(d.name) ? 'created' : has === d.partitions ? 'exists ' : 'WRONG  ';
      if (state === 'WRONG  ') mismatched++;
      out(
        `${state}  ${d.name} (${d.partitions} partitions${state === 'WRONG  ' ? `; it has ${has}` : ''}, ${Object.entries(
          d.config,
        )
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')})`,
      );
    }
    if (mismatched > 0)
      throw new CrawlError(
        'CS_TOPOLOGY',
        `${mismatched} existing topic(s) have another partition count than --partitions asks: a site would be split across tasks; use the same --partitions or recreate them`,
      );
  } finally {
    await admin.close();
    await port.close();
  }
  return 0;
}

/** The `topics create` flags for real clusters, validated. */
function topicOptions(values: {
  'replication-factor'?: string | undefined;
  'min-insync-replicas'?: string | undefined;
  'keep-retention-ms'?: string | undefined;
}): TopicOptions {
  const int = (name: string, raw: string | undefined, min: number): number | undefined => {
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min)
      throw new InvalidOptionError(`--${name} needs an integer of at least ${min}, got ${JSON.stringify(raw)}`);
    return n;
  };
  const replicationFactor = int('replication-factor', values['replication-factor'], 1);
  const minInsyncReplicas = int('min-insync-replicas', values['min-insync-replicas'], 1);
  const keptRetentionMs = int('keep-retention-ms', values['keep-retention-ms'], -1);
  if (minInsyncReplicas !== undefined && minInsyncReplicas > (replicationFactor ?? 1))
    throw new InvalidOptionError(
      `--min-insync-replicas ${minInsyncReplicas} exceeds --replication-factor ${replicationFactor ?? 1}: no write could ever be acknowledged`,
    );
  return {
    ...(replicationFactor !== undefined ? { replicationFactor } : {}),
    ...(minInsyncReplicas !== undefined ? { minInsyncReplicas } : {}),
    ...(keptRetentionMs !== undefined ? { keptRetentionMs } : {}),
  };
}

/**
 * Strimzi KafkaTopic resources for `defs`, three replicas with min.insync.replicas 2 (a
 * production default; the single-broker test setup uses `topics create` instead).
 */
export function topicManifest(defs: readonly TopicDefinition[]): string {
  const out = [
    '# Every topic of the topology as Strimzi KafkaTopic resources; `crawlstream topics create` makes the same set.',
    '# Generated by `crawlstream topics manifest > deploy/topics.yaml`; test/deploy/manifests.test.ts checks it.',
  ];
  for (const d of defs) {
    out.push(
      '---',
      'apiVersion: kafka.strimzi.io/v1beta2',
      'kind: KafkaTopic',
      'metadata:',
      `  name: ${d.name}`,
      '  labels: { strimzi.io/cluster: kafka }',
      'spec:',
      `  partitions: ${d.partitions}`,
      '  replicas: 3',
      '  config:',
    );
    for (const [k, v] of Object.entries({ ...d.config, 'min.insync.replicas': '2' })) out.push(`    ${k}: "${v}"`);
  }
  return out.join('\n');
}
