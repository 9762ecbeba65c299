import kafkajs from 'kafkajs';
import type { Consumer, EachBatchPayload, Kafka, PartitionAssigner } from 'kafkajs';
import type { CrawlError } from '../../../core/errors.js';
import { partitionFor } from '../../partitioner.js';
import type { ConsumedRawRecord, RecordHeaders } from '../../record.js';
import { BARE_TOPIC_NAMES, type TopicNaming } from '../../topology.js';
import { planAssignment } from './co-partition-assignment.js';
import { encodeClaims, encodeStandbys, KafkaAdmin, memberClaims, type MemberClaims } from './kafka-admin.js';
import {
  chunksOf,
  kafkaError,
  kafkajsSeeds,
  SEND_CHUNK_BYTES,
  toTopicMessages,
  type OutRecord,
  type TransactionalProducer,
} from './kafka-common.js';
import {
  compressionType,
  DEFAULT_KAFKA_COMPRESSION,
  installKafkaCodecs,
  validateCompression,
  type KafkaCompression,
} from './kafka-codecs.js';
import { installKafkajsEncoder } from './kafkajs-encoder.js';
import { oauthBearerMechanism } from './kafka-oauthbearer.js';
import { resolveKafkaSecurity, type KafkaSecurityOptions } from './kafka-security.js';
import { fence, KafkajsTransactionalProducer } from './kafka-transactions.js';
import { KAFKA_ENGINE_SETTINGS } from './engine-settings.js';

export { KafkaAdmin } from './kafka-admin.js';
export {
  chunksOf,
  kafkaError,
  SEND_CHUNK_BYTES,
  type OutRecord,
  type TopicDefinition,
  type TopicPartitionOffset,
  type TransactionalProducer,
} from './kafka-common.js';

const { Kafka: KafkaClient, logLevel, AssignerProtocol, PartitionAssigners } = kafkajs;

export interface GroupConsumerHandlers {
  /** The partitions this member owns after a rebalance (the whole set, not a delta). */
  /** `memberId`: this member's id in the generation that made the assignment. */
  onAssignment(assigned: readonly { topic: string; partition: number }[], memberId: string): void;
  /** Committed records of one partition, in offset order. Keep calling `heartbeat` while blocking. */
  onRecords(records: ConsumedRawRecord[], heartbeat: () => Promise<void>): Promise<void>;
  /** The fetch position of a partition moved to `next` (also past control records); `end` is its high watermark. */
  onProgress?(topic: string, partition: number, next: number, end: number): void;
  /**
   * The consumer crashed while running (kafkajs' CRASH: an error its retries did not absorb) and
   * has left its group. With `restart` kafkajs joins it again by itself after a back-off (the
   * error was retriable: brokers gone past the retry budget); `onAssignment` then follows. Without,
   * it is dead for good (a non-retriable error: a record batch it cannot decode, an authorization
   * failure) and consumes nothing more. A crash for good while the consumer first joins is not
   * reported here: `groupConsumer` rejects with it; one while it joins again is reported, and
   * `rejoin` rejects with it as well.
   */
  onCrash?(error: CrawlError, restart: boolean): void;
}

export interface GroupConsumer {
  pause(topic: string, partition: number): void;
  resume(topic: string, partition: number): void;
  /** Moves a partition's fetch position (after a rebalance positions restart from the committed offsets anyway). */
  seek(topic: string, partition: number, offset: number): void;
  /**
   * Leaves the group and joins it again (Kafka Streams' answer to a task migrated under it): every
   * partition is assigned anew and fetched again from its committed offset. Resolves once the
   * consumer runs again; rejects when it cannot (the caller retries).
   */
  rejoin(): Promise<void>;
  close(): Promise<void>;
}

export interface GroupConsumerOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly sessionTimeoutMs?: number;
  /** Where a partition without a committed offset starts. */
  readonly fromBeginning?: boolean;
  /**
   * The partition numbers this member would keep, reported when it joins (its current ones, or
   * those it has local state for after a restart); the co-partitioned assignment keeps them
   * where balance allows. None when omitted.
   */
  readonly owned?: () => readonly number[];
  /**
   * The partition numbers this member keeps a local copy of without owning them (its standbys),
   * reported when it joins: a partition that must move goes to such a member when the balance
   * allows. None when omitted.
   */
  readonly warm?: () => readonly number[];
  /**
   * Standbys of each partition the group's leader places on other members (`--standby-replicas`);
   * a member learns its own from the group's description (`KafkaAdmin.standbysOf`). Default 0.
   */
  readonly standbyReplicas?: number;
}

/**
 * The entry to the Kafka client library (kafkajs 2.2.4), which only this file and its parts
 * (kafka-admin.ts, kafka-transactions.ts, kafka-common.ts, kafka-codecs.ts, kafka-oauthbearer.ts) know: swap the client here and
 * nothing else changes. Every consumer reads committed records only (isolation read_committed),
 * every producer writes to the partition it is given, and a kafkajs partitioner is set anyway to
 * the Java-compatible murmur2 one, so no path can place a key elsewhere.
 *
 * Topic names: producers, transactions and group consumers take and give logical names and map
 * them with `naming` (a Topology: `links` is `news.links` on the cluster under `--app-id news`);
 * the admin client and `clientId`s speak cluster names as they are.
 */
export class KafkaPort {
  private readonly kafka: Kafka;
  private readonly open = new Set<{ disconnect(): Promise<void> }>();

  constructor(
    /** Bootstrap servers, `host:port` or `[IPv6]:port` each (parseBrokerList); refused with CS_INVALID_OPTION. */
    readonly brokers: readonly string[],
    readonly clientId: string,
    private readonly log: (line: string) => void = () => undefined,
    /** TLS and SASL (see kafka-security.ts); validated and its files read here. Default: PLAINTEXT. */
    security: KafkaSecurityOptions = {},
    /** Logical ↔ cluster topic names of producers and consumers; default: bare names. */
    readonly naming: TopicNaming = BARE_TOPIC_NAMES,
    /** How every producer of this port compresses its batches; consumers read all codecs regardless. */
    readonly compression: KafkaCompression = DEFAULT_KAFKA_COMPRESSION,
  ) {
    validateCompression(compression, '--kafka-compression');
    installKafkaCodecs();
    installKafkajsEncoder();
    const seeds = kafkajsSeeds(brokers);
    const { ssl, sasl } = resolveKafkaSecurity(security);
    this.kafka = new KafkaClient({
      clientId,
      brokers: seeds.brokers,
      socketFactory: seeds.socketFactory,
      ...(ssl !== undefined ? { ssl: { ...ssl } } : {}),
      ...(sasl === undefined
        ? {}
        : { sasl: sasl.mechanism === 'oauthbearer' ? oauthBearerMechanism(sasl.oauthBearerProvider) : sasl }),
      logLevel: logLevel.WARN,
      logCreator:
        () =>
        ({ level, log }) => {
          if (level <= logLevel.WARN)
            this.log(`kafkajs ${log.message}${log['error'] ? `: ${String(log['error'])}` : ''}`);
        },
      retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2000 },
    });
  }

  /**
   * `client` connected and in `open`. A failed connect disconnects it, so no socket it opened
   * (e.g. one whose authentication never began) keeps the process alive, and rejects with
   * CrawlError CS_KAFKA carrying the client's message (an authentication failure, a TLS error).
   */
  private async connected<C extends { connect(): Promise<void>; disconnect(): Promise<void> }>(client: C): Promise<C> {
    try {
      await client.connect();
    } catch (err) {
      await client.disconnect().catch(() => undefined);
      throw kafkaError(`cannot connect to ${this.brokers.join(',')}`, err);
    }
    this.open.add(client);
    return client;
  }

  async admin(): Promise<KafkaAdmin> {
    const admin = await this.connected(this.kafka.admin());
    return new KafkaAdmin(admin, () => this.open.delete(admin));
  }

  /**
   * Connects a transactional producer and fences any earlier producer with the same id: once this
   * resolves, that producer's open transaction is aborted (or its commit completed) and it can
   * commit nothing more, so the end offsets of the partitions it wrote are final.
   */
  async transactionalProducer(transactionalId: string): Promise<TransactionalProducer> {
    const producer = this.kafka.producer({
      transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 60_000,
      createPartitioner: javaPartitioner,
      // a transaction begun right after the last one committed meets its markers still being
      // written (CONCURRENT_TRANSACTIONS on AddPartitionsToTxn): gone in milliseconds, so the first
      // retry comes after ~20 ms, as Java's producer does (KAFKA-5477), not the client's 100 ms;
      // doubled to 2 s, ~4.5 s in all (the 100 ms × 5 before gave 3.1 s)
      retry: { retries: 8, initialRetryTime: 20, maxRetryTime: 2000 },
    });
    try {
      await producer.connect();
      this.open.add(producer);
      await fence(producer);
    } catch (err) {
      this.open.delete(producer);
      await producer.disconnect().catch(() => undefined);
      throw kafkaError(`cannot start transactional producer ${transactionalId}`, err);
    }
    return new KafkajsTransactionalProducer(
      producer,
      transactionalId,
      () => this.open.delete(producer),
      this.naming,
      compressionType(this.compression),
    );
  }

  /**
   * An idempotent, non-transactional producer (seeds, control commands). A `send` goes out in
   * requests of at most SEND_CHUNK_BYTES: when it fails, earlier chunks may be written already,
   * so a caller retries the whole send (seeds and commands are safe to repeat).
   */
  async producer(): Promise<{ send(records: readonly OutRecord[]): Promise<void>; close(): Promise<void> }> {
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: javaPartitioner,
    });
    await this.connected(producer);
    return {
      send: async (records) => {
        try {
          // in requests of at most SEND_CHUNK_BYTES: a million seeds in one request exceed any broker's limit
          for (const chunk of chunksOf(records, SEND_CHUNK_BYTES))
            await producer.sendBatch({
              topicMessages: toTopicMessages(chunk, this.naming),
              acks: -1,
              compression: compressionType(this.compression),
            });
        } catch (err) {
          throw kafkaError('produce failed', err);
        }
      },
      close: async () => {
        this.open.delete(producer);
        await producer.disconnect();
      },
    };
  }

  /** Joins `groupId` and feeds committed records of the assigned partitions to `handlers`. */
  async groupConsumer(options: GroupConsumerOptions, handlers: GroupConsumerHandlers): Promise<GroupConsumer> {
    const physicalTopic = (t: string): string => this.naming.physicalTopic(t);
    const logicalTopic = (t: string): string => this.naming.logicalTopic(t);
    const sessionTimeout = options.sessionTimeoutMs ?? KAFKA_ENGINE_SETTINGS.sessionTimeoutMs.default;
    const consumer: Consumer = this.kafka.consumer({
      groupId: options.groupId,
      sessionTimeout,
      rebalanceTimeout: sessionTimeout * 2,
      heartbeatInterval: Math.max(500, Math.floor(sessionTimeout / 5)),
      readUncommitted: false,
      maxWaitTimeInMs: 250,
      allowAutoTopicCreation: false,
      retry: { retries: 10 },
      // round-robin second: a group of members that all speak the co-partitioned protocol uses it,
      // while a rolling update from a version without it still finds a protocol in common
      partitionAssigners: [
        coPartitioned(
          () => ({ owned: [...(options.owned?.() ?? [])], warm: [...(options.warm?.() ?? [])] }),
          options.standbyReplicas ?? 0,
        ),
        PartitionAssigners.roundRobin,
      ],
    });
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      const assignment = e.payload.memberAssignment as Record<string, number[]>;
      handlers.onAssignment(
        Object.entries(assignment).flatMap(([topic, ps]) =>
          ps.map((partition) => ({ topic: logicalTopic(topic), partition })),
        ),
        e.payload.memberId,
      );
    });
    if (handlers.onProgress) {
      const onProgress = handlers.onProgress;
      consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
        const p = e.payload as unknown as { topic: string; partition: number; lastOffset: string; offsetLag: string };
        const next = Number(p.lastOffset) + 1;
        onProgress(logicalTopic(p.topic), p.partition, next, next + Number(p.offsetLag));
      });
    }
    // a crash for good inside `run()` is also that call's failure; only the first join's goes unreported
    let joining: { crash?: CrawlError; report: boolean } | undefined;
    consumer.on(consumer.events.CRASH, (e) => {
      const { error, restart } = e.payload;
      const crash = kafkaError(`the consumer of group ${options.groupId} crashed`, error);
      if (joining && !restart) joining.crash = crash;
      if (!joining || restart || joining.report) handlers.onCrash?.(crash, restart);
    });
    /** `consumer.run`, which kafkajs resolves even when the consumer crashed for good while joining. */
    const run = async (report: boolean): Promise<void> => {
      const attempt: { crash?: CrawlError; report: boolean } = { report };
      joining = attempt;
      try {
        await consumer.run(runConfig);
      } finally {
        joining = undefined;
      }
      if (attempt.crash) throw attempt.crash;
    };
    await this.connected(consumer);
    await consumer.subscribe({
      topics: options.topics.map(physicalTopic),
      fromBeginning: options.fromBeginning ?? true,
    });
    const runConfig: Parameters<Consumer['run']>[0] = {
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 8,
      eachBatch: async (payload: EachBatchPayload) => {
        const { batch } = payload;
        if (batch.messages.length === 0) return;
        const topic = logicalTopic(batch.topic);
        const records: ConsumedRawRecord[] = batch.messages.map((m) => ({
          topic,
          partition: batch.partition,
          offset: Number(m.offset),
          timestamp: Number(m.timestamp),
          key: m.key ?? Buffer.alloc(0),
          value: m.value,
          ...(m.headers && Object.keys(m.headers).length > 0 ? { headers: stringHeaders(m.headers) } : {}),
        }));
        await handlers.onRecords(records, payload.heartbeat);
        payload.resolveOffset(batch.messages[batch.messages.length - 1]!.offset);
      },
    };
    try {
      await run(false);
    } catch (err) {
      this.open.delete(consumer);
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
    return {
      // between a rejoin's stop and run the consumer has no group: nothing to pause or resume (the
      // next assignment decides), so those calls are no-ops then
      pause: (topic, partition) =>
        whileRunning(() => consumer.pause([{ topic: physicalTopic(topic), partitions: [partition] }])),
      resume: (topic, partition) =>
        whileRunning(() => consumer.resume([{ topic: physicalTopic(topic), partitions: [partition] }])),
      seek: (topic, partition, offset) =>
        consumer.seek({ topic: physicalTopic(topic), partition, offset: String(offset) }),
      rejoin: async () => {
        await consumer.stop();
        try {
          await run(true);
        } catch (err) {
          throw kafkaError(`group ${options.groupId} could not be joined again`, err);
        }
      },
      close: async () => {
        this.open.delete(consumer);
        await consumer.disconnect();
      },
    };
  }

  /** Disconnects everything still open; for shutdown. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.open].map((c) => c.disconnect()));
    this.open.clear();
  }
}

/**
 * The group's assignor (see co-partition-assignment.ts): partition p of every subscribed topic to
 * one member, sticky, moved partitions to warm copies; `standbyReplicas` standbys of each
 * partition named in each member's assignment user data. Each member sends the partitions it
 * would keep and those it keeps warm as its subscription's user data; a topic with fewer
 * partitions than others gets only those it has.
 */
function coPartitioned(claims: () => MemberClaims, standbyReplicas: number): PartitionAssigner {
  return ({ cluster }) => ({
    name: 'CrawlstreamCoPartitioned',
    version: 1,
    assign: async ({ members, topics }) => {
      const counts = new Map(topics.map((t) => [t, cluster.findTopicPartitionMetadata(t).length]));
      const plan = planAssignment(
        members.map((m) => ({ memberId: m.memberId, ...memberClaims(m.memberMetadata) })),
        Math.max(0, ...counts.values()),
        standbyReplicas,
      );
      return [...plan.active].map(([memberId, partitions]) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 1,
          assignment: Object.fromEntries(topics.map((t) => [t, partitions.filter((p) => p < counts.get(t)!)])),
          userData: encodeStandbys(plan.standby.get(memberId) ?? []),
        }),
      }));
    },
    protocol: ({ topics }) => ({
      name: 'CrawlstreamCoPartitioned',
      metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: encodeClaims(claims()) }),
    }),
  });
}

/** Runs a consumer call that needs a running group; a no-op while the consumer is between stop and run. */
function whileRunning(call: () => void): void {
  try {
    call();
  } catch (err) {
    if (!/must be called first/.test((err as Error).message)) throw err;
  }
}

function stringHeaders(headers: Record<string, unknown>): RecordHeaders {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    out[k] = Buffer.isBuffer(v) ? v.toString('utf8') : Array.isArray(v) ? String(v[0]) : String(v);
  }
  return out;
}

/** kafkajs partitioner with Java's murmur2 placement; used only when a record names no partition. */
function javaPartitioner() {
  return ({
    partitionMetadata,
    message,
  }: {
    partitionMetadata: unknown[];
    message: { key?: Buffer | string | null; partition?: number };
  }): number => {
    if (message.partition !== undefined) return message.partition;
    const key = message.key === null || message.key === undefined ? Buffer.alloc(0) : Buffer.from(message.key);
    return partitionFor(key, partitionMetadata.length);
  };
}
