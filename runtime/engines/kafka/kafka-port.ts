import kafkajs from 'kafkajs';
import type { Admin, Consumer, EachBatchPayload, Kafka, Producer, ProducerRecord } from 'kafkajs';
import { CrawlError } from '../../../core/errors.js';
import { partitionFor } from '../../partitioner.js';
import type { ConsumedRawRecord, RecordHeaders } from '../../record.js';
import { resolveKafkaSecurity, type KafkaSecurityOptions } from './kafka-security.js';

const { Kafka: KafkaClient, logLevel } = kafkajs;

/** A record to write; `partition` is always chosen by the caller (murmur2, runtime/partitioner.ts). */
export interface OutRecord {
  readonly topic: string;
  readonly partition: number;
  readonly key: Buffer;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers?: RecordHeaders;
}

export interface TopicPartitionOffset {
  readonly topic: string;
  readonly partition: number;
  /** The next offset to read (Kafka's committed-offset convention). */
  readonly offset: number;
}

export interface TopicDefinition {
  readonly name: string;
  readonly partitions: number;
  readonly config: Readonly<Record<string, string>>;
}

/** A producer bound to one transactional id. Creating it fences every older producer of that id. */
export interface TransactionalProducer {
  /**
   * Writes `records` and commits `offsets` for `groupId` in one transaction. Resolves with each
   * written partition's first offset (`topic\0partition` → offset). Throws CrawlError CS_FENCED
   * when a newer producer took the id, CS_KAFKA on any other failure (the transaction is aborted).
   */
  commit(
    records: readonly OutRecord[],
    groupId: string,
    offsets: readonly TopicPartitionOffset[],
  ): Promise<Map<string, number>>;
  close(): Promise<void>;
}

export interface GroupConsumerHandlers {
  /** The partitions this member owns after a rebalance (the whole set, not a delta). */
  onAssignment(assigned: readonly { topic: string; partition: number }[]): void;
  /** Committed records of one partition, in offset order. Keep calling `heartbeat` while blocking. */
  onRecords(records: ConsumedRawRecord[], heartbeat: () => Promise<void>): Promise<void>;
  /** The fetch position of a partition moved to `next` (also past control records); `end` is its high watermark. */
  onProgress?(topic: string, partition: number, next: number, end: number): void;
}

export interface GroupConsumer {
  pause(topic: string, partition: number): void;
  resume(topic: string, partition: number): void;
  /** Moves a partition's fetch position (after a rebalance positions restart from the committed offsets anyway). */
  seek(topic: string, partition: number, offset: number): void;
  close(): Promise<void>;
}

export interface GroupConsumerOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly sessionTimeoutMs?: number;
  /** Where a partition without a committed offset starts. */
  readonly fromBeginning?: boolean;
}

/**
 * The only file that knows the Kafka client library (kafkajs 2.2.4): swap the client here and
 * nothing else changes. Every consumer reads committed records only (isolation read_committed),
 * every producer writes to the partition it is given, and a kafkajs partitioner is set anyway to
 * the Java-compatible murmur2 one, so no path can place a key elsewhere.
 */
export class KafkaPort {
  private readonly kafka: Kafka;
  private readonly open = new Set<{ disconnect(): Promise<void> }>();

  constructor(
    readonly brokers: readonly string[],
    readonly clientId: string,
    private readonly log: (line: string) => void = () => undefined,
    /** TLS and SASL (see kafka-security.ts); validated and its files read here. Default: PLAINTEXT. */
    security: KafkaSecurityOptions = {},
  ) {
    for (const b of brokers) {
      if (!/^[^:\s]+:\d+$/.test(b))
        throw new CrawlError('CS_INVALID_OPTION', `--brokers needs host:port entries, got ${JSON.stringify(b)}`);
    }
    const { ssl, sasl } = resolveKafkaSecurity(security);
    this.kafka = new KafkaClient({
      clientId,
      brokers: [...brokers],
      ...(ssl !== undefined ? { ssl: { ...ssl } } : {}),
      ...(sasl !== undefined ? { sasl } : {}),
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

  async admin(): Promise<KafkaAdmin> {
    const admin = this.kafka.admin();
    await admin.connect();
    this.open.add(admin);
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
      retry: { retries: 5 },
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
    return new KafkajsTransactionalProducer(producer, transactionalId, () => this.open.delete(producer));
  }

  /** An idempotent, non-transactional producer (seeds, control commands): one `send` is all-or-error per partition. */
  async producer(): Promise<{ send(records: readonly OutRecord[]): Promise<void>; close(): Promise<void> }> {
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: javaPartitioner,
    });
    await producer.connect();
    this.open.add(producer);
    return {
      send: async (records) => {
        try {
          await producer.sendBatch({ topicMessages: toTopicMessages(records), acks: -1 });
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
    const sessionTimeout = options.sessionTimeoutMs ?? 10_000;
    const consumer: Consumer = this.kafka.consumer({
      groupId: options.groupId,
      sessionTimeout,
      rebalanceTimeout: sessionTimeout * 2,
      heartbeatInterval: Math.max(500, Math.floor(sessionTimeout / 5)),
      readUncommitted: false,
      maxWaitTimeInMs: 250,
      allowAutoTopicCreation: false,
      retry: { retries: 10 },
    });
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      const assignment = e.payload.memberAssignment as Record<string, number[]>;
      handlers.onAssignment(
        Object.entries(assignment).flatMap(([topic, ps]) => ps.map((partition) => ({ topic, partition }))),
      );
    });
    if (handlers.onProgress) {
      const onProgress = handlers.onProgress;
      consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
        const p = e.payload as unknown as { topic: string; partition: number; lastOffset: string; offsetLag: string };
        const next = Number(p.lastOffset) + 1;
        onProgress(p.topic, p.partition, next, next + Number(p.offsetLag));
      });
    }
    await consumer.connect();
    this.open.add(consumer);
    await consumer.subscribe({ topics: [...options.topics], fromBeginning: options.fromBeginning ?? true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 8,
      eachBatch: async (payload: EachBatchPayload) => {
        const { batch } = payload;
        if (batch.messages.length === 0) return;
        const records: ConsumedRawRecord[] = batch.messages.map((m) => ({
          topic: batch.topic,
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
    });
    return {
      pause: (topic, partition) => consumer.pause([{ topic, partitions: [partition] }]),
      resume: (topic, partition) => consumer.resume([{ topic, partitions: [partition] }]),
      seek: (topic, partition, offset) => consumer.seek({ topic, partition, offset: String(offset) }),
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

/** Topic administration: creation with configs, offsets, committed group offsets. */
export class KafkaAdmin {
  constructor(
    private readonly admin: Admin,
    private readonly onClose: () => void,
  ) {}

  /** Creates the topics that do not exist yet (existing ones are left alone); returns the names created. */
  async createTopics(topics: readonly TopicDefinition[]): Promise<string[]> {
    const existing = new Set(await this.admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t.name));
    if (missing.length === 0) return [];
    try {
      await this.admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          replicationFactor: 1,
          configEntries: Object.entries(t.config).map(([name, value]) => ({ name, value })),
        })),
      });
    } catch (err) {
      throw kafkaError(`cannot create topics ${missing.map((t) => t.name).join(', ')}`, err);
    }
    return missing.map((t) => t.name);
  }

  async listTopics(): Promise<string[]> {
    return this.admin.listTopics();
  }

  /** Partition count and the named config values of a topic. */
  async describeTopic(
    topic: string,
    configNames: readonly string[],
  ): Promise<{ partitions: number; config: Record<string, string> }> {
    const meta = await this.admin.fetchTopicMetadata({ topics: [topic] });
    const described = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: 2, name: topic, configNames: [...configNames] }],
    });
    const config: Record<string, string> = {};
    for (const e of described.resources[0]?.configEntries ?? []) config[e.configName] = e.configValue;
    return { partitions: meta.topics[0]?.partitions.length ?? 0, config };
  }

  /** High watermark of every partition of a topic (the next offset to be written). */
  async endOffsets(topic: string): Promise<Map<number, number>> {
    // right after a topic is created or a leader moves, brokers answer NOT_LEADER until metadata settles
    for (let attempt = 0; ; attempt++) {
      try {
        const offsets = await this.admin.fetchTopicOffsets(topic);
        return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
      } catch (err) {
        if ((err as { retriable?: boolean }).retriable !== true || attempt >= 10)
          throw kafkaError(`cannot read the end offsets of ${topic}`, err);
        await new Promise((r) => setTimeout(r, 100 * 2 ** Math.min(attempt, 4)));
      }
    }
  }

  async deleteGroups(groupIds: string[]): Promise<void> {
    await this.admin.deleteGroups(groupIds).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.onClose();
    await this.admin.disconnect();
  }
}

/** The broker's "the previous transaction of this id is still being ended" (or its coordinator moved): try again. */
function transactionBusy(err: unknown): boolean {
  const e = err as { type?: string; message?: string };
  return /CONCURRENT_TRANSACTIONS|COORDINATOR_LOAD_IN_PROGRESS|NOT_COORDINATOR/.test(
    `${e.type ?? ''} ${e.message ?? ''}`,
  );
}

/**
 * Sends the transactional InitProducerId now. kafkajs's `connect()` registers only an idempotent
 * producer id; the transactional one (which bumps the epoch, so fences the previous owner, and
 * aborts or finishes its open transaction) waits for the first `transaction()`. A task's restore
 * must not start before it, or a previous owner's last commit can land after the restore read the
 * changelog's end. An empty transaction is begun and aborted: no request beyond InitProducerId.
 */
async function fence(producer: Producer): Promise<void> {
  await whileBusy(async () => {
    const tx = await producer.transaction();
    await tx.abort();
  }, 50);
}

/**
 * Runs `work` again while it fails with `transactionBusy`, waiting `firstDelayMs` doubled each time,
 * up to 8 retries; any other failure, or the 9th busy one, is thrown. `work` must leave nothing
 * visible when it fails (a failed transaction is aborted), so running it whole again is safe.
 */
async function whileBusy<T>(work: () => Promise<T>, firstDelayMs: number): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (!transactionBusy(err) || attempt >= 8) throw err;
      await new Promise((r) => setTimeout(r, firstDelayMs * 2 ** attempt));
    }
  }
}

class KafkajsTransactionalProducer implements TransactionalProducer {
  constructor(
    private readonly producer: Producer,
    private readonly id: string,
    private readonly onClose: () => void,
  ) {}

  async commit(
    records: readonly OutRecord[],
    groupId: string,
    offsets: readonly TopicPartitionOffset[],
  ): Promise<Map<string, number>> {
    // the previous transaction's markers may still be being written: an aborted attempt leaves nothing visible
    return whileBusy(() => this.commitOnce(records, groupId, offsets), 20);
  }

  private async commitOnce(
    records: readonly OutRecord[],
    groupId: string,
    offsets: readonly TopicPartitionOffset[],
  ): Promise<Map<string, number>> {
    const bases = new Map<string, number>();
    let tx;
    try {
      tx = await this.producer.transaction();
    } catch (err) {
      throw kafkaError(`transaction of ${this.id} did not start`, err);
    }
    try {
      if (records.length > 0) {
        const results = await tx.sendBatch({ topicMessages: toTopicMessages(records), acks: -1 });
        for (const r of results) {
          const key = `${r.topicName}\u0000${r.partition}`;
          const base = Number(r.baseOffset ?? r.offset);
          bases.set(key, Math.min(bases.get(key) ?? Infinity, base));
        }
      }
      if (offsets.length > 0) {
        const byTopic = new Map<string, { partition: number; offset: string }[]>();
        for (const o of offsets) {
          let list = byTopic.get(o.topic);
          if (!list) byTopic.set(o.topic, (list = []));
          list.push({ partition: o.partition, offset: String(o.offset) });
        }
        await tx.sendOffsets({
          consumerGroupId: groupId,
          topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
        });
      }
      await tx.commit();
      return bases;
    } catch (err) {
      if (tx.isActive()) await tx.abort().catch(() => undefined);
      throw kafkaError(`transaction of ${this.id} failed`, err);
    }
  }

  async close(): Promise<void> {
    this.onClose();
    await this.producer.disconnect();
  }
}

const FENCED = new Set([
  'PRODUCER_FENCED',
  'INVALID_PRODUCER_EPOCH',
  'INVALID_PRODUCER_ID_MAPPING',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
]);

/** Maps a client error to CS_FENCED (another producer owns the transactional id now) or CS_KAFKA. */
export function kafkaError(message: string, err: unknown): CrawlError {
  const e = err as { type?: string; message?: string; name?: string; originalError?: { type?: string } };
  const type = e.type ?? e.originalError?.type;
  const text = `${message}: ${type ?? e.name ?? 'error'} ${e.message ?? String(err)}`;
  const fenced = (type !== undefined && FENCED.has(type)) || /fenced|producer epoch/i.test(e.message ?? '');
  return new CrawlError(fenced ? 'CS_FENCED' : 'CS_KAFKA', text, { cause: err });
}

function toTopicMessages(records: readonly OutRecord[]): ProducerRecord[] {
  const byTopic = new Map<string, ProducerRecord>();
  for (const r of records) {
    let entry = byTopic.get(r.topic);
    if (!entry) byTopic.set(r.topic, (entry = { topic: r.topic, messages: [] }));
    entry.messages.push({
      key: r.key,
      value: r.value,
      partition: r.partition,
      timestamp: String(r.timestamp),
      ...(r.headers ? { headers: { ...r.headers } } : {}),
    });
  }
  return [...byTopic.values()];
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
