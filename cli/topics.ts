import { CrawlError, InvalidOptionError } from '../core/errors.js';
import { validateCrawlConfig } from '../processors/common/crawl-config.js';
import { KafkaPort } from '../runtime/engines/kafka/kafka-port.js';
import type { TopicDefinition } from '../runtime/engines/kafka/kafka-port.js';
import { replicationFor, topicDefinitions, type TopicOptions } from '../runtime/engines/kafka/topics.js';
import { crawlTopology } from '../topology/crawl-topology.js';
import { resolveSettings, type ResolvedSettings } from './config-sources.js';
import { kafkaEndpoints } from './run-options.js';
import { securityFromSettings } from './kafka-security-options.js';
import { tmpdir } from 'node:os';
import { commandUsage } from './usage.js';

export const TOPICS_USAGE = commandUsage(
  'topics',
  [
    'create --brokers HOST:PORT[,..] [--partitions N] [--app-id ID] [--replication-factor N]',
    '                   [--min-insync-replicas N] [--keep-retention-ms MS]',
    'list [--partitions N] [--app-id ID]       what create would make, one topic a line',
    'manifest [--partitions N] [--app-id ID]   the same as Strimzi KafkaTopic resources (deploy/topics.yaml)',
  ],
  `  creates every topic of the topology with its partition count (default 4), compacted changelogs
  and max.message.bytes for 'fetched', 'links' and 'parsed-pages'; existing topics are left alone
  (a partition count other than --partitions is an error). --replication-factor and
  --min-insync-replicas apply to every topic created (default: 3 and 2 on a cluster of 3 or more
  brokers, else one replica per broker and the broker's min.insync.replicas, said in the output);
  --keep-retention-ms is how long page-records and control keep records (default -1: forever)`,
);

const ACTIONS = ['create', 'list', 'manifest'] as const;

/** `topics create|list|manifest`: nothing in crawlstream relies on auto-created topics. */
export async function runTopics(
  args: string[],
  out: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const resolved = resolveSettings(args, env, TOPICS_USAGE, 'topics');
  const [action, extra] = resolved.positionals;
  if (!(ACTIONS as readonly (string | undefined)[]).includes(action))
    throw new InvalidOptionError(
      `unknown topics subcommand ${JSON.stringify(action ?? '')}; subcommands are ${ACTIONS.join(', ')}\n${TOPICS_USAGE}`,
    );
  if (extra !== undefined) throw new InvalidOptionError(`topics ${action} takes no argument ${JSON.stringify(extra)}`);
  const get = (name: string) => resolved.values.get(name)?.value;
  const topology = crawlTopology({
    config: validateCrawlConfig({}),
    partitions: get('partitions') as number,
    warcDir: tmpdir(),
    applicationId: get('app-id') as string,
  });
  const options = topicOptions(resolved);
  const defs = topicDefinitions(topology, options);
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
  const { brokers } = kafkaEndpoints(get('brokers') as string | undefined, undefined, TOPICS_USAGE);
  const port = new KafkaPort(brokers, 'crawlstream-admin', undefined, securityFromSettings(resolved, env).kafka);
  const admin = await port.admin();
  try {
    // the default depends on the cluster: asked here, not at the edge
    const replication = replicationFor(await admin.brokerCount(), options);
    out(replication.said);
    const made = topicDefinitions(topology, {
      ...options,
      replicationFactor: replication.replicationFactor,
      ...(replication.minInsyncReplicas !== undefined ? { minInsyncReplicas: replication.minInsyncReplicas } : {}),
    });
    const created = await admin.createTopics(made);
    const counts = await admin.partitionCounts(made.map((d) => d.name));
    let mismatched = 0;
    for (const d of made) {
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

/**
 * The `topics create` settings for real clusters, checked together as far as they go without the
 * cluster: a default replication factor depends on its brokers (`replicationFor` checks the rest).
 */
function topicOptions({ values }: ResolvedSettings): TopicOptions {
  const int = (name: string): number | undefined => values.get(name)?.value as number | undefined;
  const replicationFactor = int('replication-factor');
  const minInsyncReplicas = int('min-insync-replicas');
  const keptRetentionMs = int('keep-retention-ms');
  if (minInsyncReplicas !== undefined && replicationFactor !== undefined && minInsyncReplicas > replicationFactor)
    throw new InvalidOptionError(
      `--min-insync-replicas ${minInsyncReplicas} exceeds --replication-factor ${replicationFactor}: no write could ever be acknowledged`,
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
