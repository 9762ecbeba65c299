import { taskIdString } from '../../../core/ids.js';
import { CrawlError, InvalidOptionError } from '../../../core/errors.js';
import { BROKER_DEFAULT_MAX_MESSAGE_BYTES, deadLetterMaxMessageBytes, deadLetterTopicOf } from '../../dead-letter.js';
import type { Subtopology, Topology } from '../../topology.js';
import type { KafkaAdmin, TopicDefinition, TopicPartitionOffset } from './kafka-port.js';

/** Kafka configs `topics create` sets and the tests check. */
export const TOPIC_CONFIG_NAMES = [
  'cleanup.policy',
  'max.message.bytes',
  'retention.ms',
  'min.insync.replicas',
] as const;

/**
 * `max.message.bytes` of every changelog: a frontier host state carries the robots.txt bodies of
 * its origins (up to 500 KiB each, two origins per host: http and https), past the broker's 1 MB.
 */
export const CHANGELOG_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** How `topics create` makes topics on a real cluster; the defaults suit one test broker. */
export interface TopicOptions {
  /** Replicas of every topic; 1 when omitted (`topics create` asks `replicationFor` what the cluster holds). */
  readonly replicationFactor?: number;
  /** `min.insync.replicas` of every topic; the broker's default when omitted. */
  readonly minInsyncReplicas?: number;
  /** `retention.ms` of the topics the crawl keeps (page-records, control); -1 (forever) when omitted. */
  readonly keptRetentionMs?: number;
}

/** Replicas a topic gets by default on a cluster that can hold them: one broker may fail, and one more may be restarted. */
export const DEFAULT_REPLICATION_FACTOR = 3;
/** `min.insync.replicas` with DEFAULT_REPLICATION_FACTOR: an acknowledged write is on two brokers. */
export const DEFAULT_MIN_INSYNC_REPLICAS = 2;

/** The replication `topics create` uses on a cluster, and one line saying why. */
export interface Replication {
  readonly replicationFactor: number;
  /** Undefined: the broker's default. */
  readonly minInsyncReplicas?: number;
  readonly said: string;
}

/**
 * The replication of every topic `topics create` makes on a cluster of `brokers` brokers: what
 * `options` gives explicitly, else replication factor 3 with min.insync.replicas 2 when the
 * cluster has at least 3 brokers, else as many replicas as it has brokers (the broker's
 * min.insync.replicas), which `said` points out. Throws InvalidOptionError for a replication
 * factor the cluster cannot hold or a min.insync.replicas above the replication factor.
 */
export function replicationFor(brokers: number, options: TopicOptions = {}): Replication {
  const plural = (n: number) => `${n} broker${n === 1 ? '' : 's'}`;
  const explicit = options.replicationFactor;
  if (explicit !== undefined && explicit > brokers)
    throw new InvalidOptionError(
      `--replication-factor ${explicit} exceeds the cluster's ${plural(brokers)}: no topic could be created`,
    );
  const replicationFactor = explicit ?? Math.min(DEFAULT_REPLICATION_FACTOR, brokers);
  const minInsyncReplicas =
    options.minInsyncReplicas ??
    (replicationFactor >= DEFAULT_REPLICATION_FACTOR ? DEFAULT_MIN_INSYNC_REPLICAS : undefined);
  if (minInsyncReplicas !== undefined && minInsyncReplicas > replicationFactor)
    throw new InvalidOptionError(
      `--min-insync-replicas ${minInsyncReplicas} exceeds the replication factor ${replicationFactor}` +
        `${explicit === undefined ? ` (the cluster has ${plural(brokers)})` : ''}: no write could ever be acknowledged`,
    );
  const why =
    explicit !== undefined
      ? '--replication-factor'
      : replicationFactor < DEFAULT_REPLICATION_FACTOR
        ? `the cluster has ${plural(brokers)}, fewer than the ${DEFAULT_REPLICATION_FACTOR} replicas a topic gets by default: a broker lost loses ${replicationFactor === 1 ? 'its partitions' : 'redundancy'}`
        : `the cluster has ${plural(brokers)}`;
  const isr =
    minInsyncReplicas === undefined
      ? "the broker's min.insync.replicas"
      : `min.insync.replicas ${minInsyncReplicas}${options.minInsyncReplicas !== undefined ? ' (--min-insync-replicas)' : ''}`;
  return {
    replicationFactor,
    ...(minInsyncReplicas !== undefined ? { minInsyncReplicas } : {}),
    said: `replication factor ${replicationFactor} (${why}), ${isr}`,
  };
}

/**
 * Every topic a topology needs on Kafka, under its cluster names (`topology.physicalTopic`),
 * nothing left to auto-creation: its declared topics
 * (`cleanup.policy=delete`, `max.message.bytes` where declared, `retention.ms` -1 for the kept
 * ones unless `options` says otherwise), one compacted changelog per changelogged store with the
 * partition count of its sub-topology, and the dead-letter topic.
 */
export function topicDefinitions(topology: Topology, options: TopicOptions = {}): TopicDefinition[] {
  const subtopologies = topology.build();
  const defs: TopicDefinition[] = [];
  for (const spec of topology.topics.values()) {
    const config: Record<string, string> = { 'cleanup.policy': spec.compacted ? 'compact' : 'delete' };
    if (spec.maxMessageBytes !== undefined) config['max.message.bytes'] = String(spec.maxMessageBytes);
    // a page record is the crawl's product: it must not age out after the broker's default week
    if (spec.keep) config['retention.ms'] = String(options.keptRetentionMs ?? -1);
    defs.push({ name: topology.physicalTopic(spec.name), partitions: spec.partitions, config });
  }
  for (const sub of subtopologies) {
    for (const store of sub.stores) {
      if (store.changelog)
        defs.push({
          name: topology.changelogTopic(store.name),
          partitions: sub.partitions,
          config: { 'cleanup.policy': 'compact', 'max.message.bytes': String(CHANGELOG_MAX_MESSAGE_BYTES) },
        });
    }
  }
  defs.push({
    name: deadLetterTopicOf(topology.applicationId),
    partitions: 1,
    config: { 'cleanup.policy': 'delete', 'max.message.bytes': String(deadLetterMaxMessageBytes(topology)) },
  });
  return defs.map((d) => ({
    ...d,
    ...(options.replicationFactor !== undefined ? { replicationFactor: options.replicationFactor } : {}),
    config:
      options.minInsyncReplicas !== undefined
        ? { ...d.config, 'min.insync.replicas': String(options.minInsyncReplicas) }
        : d.config,
  }));
}

/**
 * The offsets `groupId` committed for `partition` of each source topic of `sub`, under logical
 * names (the admin client speaks cluster names); a topic without a committed offset is absent.
 * Read after the task's producer fenced the previous owner: its last commit may have landed after
 * this member's consumer read its starting offsets.
 */
export async function committedInputs(
  admin: KafkaAdmin,
  topology: Topology,
  groupId: string,
  sub: Subtopology,
  partition: number,
): Promise<TopicPartitionOffset[]> {
  const committed = await admin.committedOffsets(
    groupId,
    sub.sourceTopics.map((t) => topology.physicalTopic(t)),
    partition,
  );
  return [...committed].map(([topic, offset]) => ({ topic: topology.logicalTopic(topic), partition, offset }));
}

/**
 * Checks that every topic of `topology` exists on the cluster with the partition count the
 * topology declares (a different count would split a site across two frontier tasks, two host
 * clocks). Throws CrawlError CS_TOPOLOGY naming the missing topics and the command that makes
 * them, or each topic whose count differs.
 */
export async function checkTopics(admin: KafkaAdmin, topology: Topology, brokers: readonly string[]): Promise<void> {
  const definitions = topicDefinitions(topology);
  const existing = new Set(await admin.listTopics());
  const missing = definitions.filter((t) => !existing.has(t.name)).map((t) => t.name);
  if (missing.length > 0)
    throw new CrawlError(
      'CS_TOPOLOGY',
      `topics ${missing.join(', ')} do not exist; run 'crawlstream topics create --brokers ${brokers.join(',')}${topology.topicPrefix ? ` --app-id ${topology.applicationId}` : ''}' first`,
    );
  const counts = await admin.partitionCounts(definitions.map((t) => t.name));
  const wrong = definitions.filter((t) => counts.get(t.name) !== t.partitions);
  if (wrong.length > 0)
    throw new CrawlError(
      'CS_TOPOLOGY',
      `partition counts differ from the topology's: ${wrong
        .map((t) => `${t.name} has ${counts.get(t.name)}, the topology needs ${t.partitions}`)
        .join('; ')} (--partitions must match the topics, or the topics must be recreated)`,
    );
}

/**
 * The dead-letter topic of `topology` and the `max.message.bytes` it has on the cluster (its own
 * or the broker's default, as the broker reports it), which bounds every dead letter the engine
 * writes there: a larger one is written as a reference (`deadLetterOf`), never refused with the
 * commit it belongs to. A topic made by an older `topics create` holds 1 MiB: `warning` then says
 * so and how to raise it, since the records it cannot hold whole are kept only as references.
 */
export async function deadLetterTopicLimit(
  admin: KafkaAdmin,
  topology: Topology,
): Promise<{ topic: string; maxBytes: number; warning?: string }> {
  const topic = deadLetterTopicOf(topology.applicationId);
  const wanted = deadLetterMaxMessageBytes(topology);
  const has = Number((await admin.describeTopic(topic, ['max.message.bytes'])).config['max.message.bytes']);
  // a broker that does not say (an ACL without DescribeConfigs) gets the Kafka default assumed
  const maxBytes = Number.isInteger(has) && has > 0 ? has : BROKER_DEFAULT_MAX_MESSAGE_BYTES;
  if (maxBytes >= wanted) return { topic, maxBytes };
  return {
    topic,
    maxBytes,
    warning:
      `the dead-letter topic ${topic} holds records of up to ${maxBytes} bytes, the inputs up to ${wanted}: ` +
      `larger dead letters are written as a reference (source, size, SHA-256) without their value; ` +
      `raise it with kafka-configs --alter --entity-type topics --entity-name ${topic} --add-config max.message.bytes=${wanted}`,
  };
}

/** The consumer group of a sub-topology: `<app>-<its processors, joined by +>`, e.g. `crawlstream-frontier`. */
export function groupIdOf(topology: Topology, sub: Subtopology): string {
  return `${topology.applicationId}-${sub.nodes
    .filter((n) => n.kind === 'processor')
    .map((n) => n.name)
    .join('+')}`;
}

/** The transactional id of a task: `<app>-<subtopology>_<partition>`; a new owner fences the old one. */
export function transactionalIdOf(topology: Topology, subtopology: number, partition: number): string {
  return `${topology.applicationId}-${taskIdString({ subtopology, partition })}`;
}
