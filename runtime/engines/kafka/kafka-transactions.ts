import type { CompressionTypes, Producer } from 'kafkajs';
import {
  chunksOf,
  kafkaError,
  SEND_CHUNK_BYTES,
  toTopicMessages,
  isTransientFault,
  transactionBusy,
  type OutRecord,
  type TopicPartitionOffset,
  type TransactionalProducer,
} from './kafka-common.js';
import type { TopicNaming } from '../../topology.js';
import { isCrawlError } from '../../../core/errors.js';

/**
 * A produce that kafkajs reported as done although some partitions were never written: when a
 * partition's leader moves (a broker restarts) kafkajs retries only towards brokers that have not
 * answered yet, so partitions that moved to a broker which already answered are silently left out
 * of the send and of its results. Committing would lose those records; the transaction is aborted
 * and run again instead.
 */
class IncompleteSend extends Error {
  readonly type = 'INCOMPLETE_SEND';
}

/**
 * Sends the transactional InitProducerId now. kafkajs's `connect()` registers only an idempotent
 * producer id; the transactional one (which bumps the epoch, so fences the previous owner, and
 * aborts or finishes its open transaction) waits for the first `transaction()`. A task's restore
 * must not start before it, or a previous owner's last commit can land after the restore read the
 * changelog's end. An empty transaction is begun and aborted: no request beyond InitProducerId.
 */
export async function fence(producer: Producer): Promise<void> {
  await whileBusy(async () => {
    const tx = await producer.transaction();
    await tx.abort();
  }, 50);
}

/**
 * No busy retry of a commit starts this long after its first attempt: one attempt may itself take
 * kafkajs' own retries (seconds), and a task retrying holds its partition's rebalance.
 */
const COMMIT_BUSY_MS = 10_000;

/**
 * Runs `work` again while it fails with `transactionBusy`, waiting `firstDelayMs` doubled each time,
 * up to 8 retries and none begun `withinMs` after the first attempt; any other failure, or the
 * last busy one, is thrown. `work` must leave nothing visible when it fails (a failed transaction
 * is aborted), so running it whole again is safe.
 */
async function whileBusy<T>(work: () => Promise<T>, firstDelayMs: number, withinMs = Infinity): Promise<T> {
  const began = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      const delay = firstDelayMs * 2 ** attempt;
      if (!transactionBusy(err) || attempt >= 8 || Date.now() + delay - began > withinMs) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

export class KafkajsTransactionalProducer implements TransactionalProducer {
  constructor(
    private readonly producer: Producer,
    private readonly id: string,
    private readonly onClose: () => void,
    /** Records, offsets and the returned offsets name logical topics; the broker sees cluster names. */
    private readonly naming: TopicNaming,
    /** The kafkajs codec of every send (kafka-codecs.ts). */
    private readonly compression: CompressionTypes,
  ) {}

  async commit(
    records: readonly OutRecord[],
    groupId: string,
    offsets: readonly TopicPartitionOffset[],
  ): Promise<Map<string, number>> {
    // the previous transaction's markers may still be being written: an aborted attempt leaves nothing visible
    return whileBusy(() => this.commitOnce(records, groupId, offsets), 20, COMMIT_BUSY_MS);
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
      // one send per partition, all at once, each partition's chunks in order; every send settles
      // before the transaction is committed or aborted (see sendPartition)
      const byPartition = new Map<string, OutRecord[]>();
      for (const r of records) {
        const key = `${r.topic}\u0000${r.partition}`;
        let list = byPartition.get(key);
        if (!list) byPartition.set(key, (list = []));
        list.push(r);
      }
      const sends = await Promise.allSettled(
        [...byPartition].map(async ([key, list]) => bases.set(key, await this.sendPartition(tx, key, list))),
      );
      const failed = sends.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
      if (offsets.length > 0) {
        const byTopic = new Map<string, { partition: number; offset: string }[]>();
        for (const o of offsets) {
          let list = byTopic.get(o.topic);
          if (!list) byTopic.set(o.topic, (list = []));
          list.push({ partition: o.partition, offset: String(o.offset) });
        }
        await tx.sendOffsets({
          consumerGroupId: groupId,
          topics: [...byTopic].map(([topic, partitions]) => ({ topic: this.naming.physicalTopic(topic), partitions })),
        });
      }
      await tx.commit();
      return bases;
    } catch (err) {
      if (tx.isActive()) await tx.abort().catch(() => undefined);
      throw kafkaError(`transaction of ${this.id} failed`, err);
    }
  }

  /**
   * Sends one partition's records in chunks (a commit of many large records stays within the
   * broker's request and batch limits) and returns the base offset of the first. One partition per
   * `sendBatch`: kafkajs retries a send whose request to one broker failed while its requests to
   * other brokers are still in flight, and sends those brokers' partitions again under new sequence
   * numbers, so the broker appends them twice (a page record committed twice, seen in the 3-broker
   * chaos test). A send of one partition goes to one broker at a time, and a retry reuses its
   * sequence numbers, which the broker deduplicates.
   */
  private async sendPartition(
    tx: Awaited<ReturnType<Producer['transaction']>>,
    key: string,
    records: readonly OutRecord[],
  ): Promise<number> {
    let first: number | undefined;
    for (const chunk of chunksOf(records, SEND_CHUNK_BYTES)) {
      const results = await tx.sendBatch({
        topicMessages: toTopicMessages(chunk, this.naming),
        acks: -1,
        compression: this.compression,
      });
      let base: number | undefined;
      for (const r of results) {
        if (`${this.naming.logicalTopic(r.topicName)}\u0000${r.partition}` !== key) continue;
        const b = Number(r.baseOffset ?? r.offset);
        if (Number.isSafeInteger(b) && b >= 0) base = Math.min(base ?? Infinity, b);
      }
      if (base === undefined) throw new IncompleteSend(`the send reported no offset for ${key.replace('\u0000', '/')}`);
      first ??= base;
    }
    return first!;
  }

  async close(): Promise<void> {
    this.onClose();
    await this.producer.disconnect();
  }
}

/**
 * How long after its first attempt a 'before' task's commit is still tried again after a broker
 * fault that may pass (a broker restarting, a coordinator moving): its outputs answer inputs
 * already committed, so a lost commit loses them for good. The same bound as the producer's own
 * busy retries: a task retrying holds its partition's rebalance.
 */
export const BEFORE_COMMIT_RETRY_MS = 10_000;

/**
 * `producer.commit` of outputs that can never be made again (a 'before' task's: its inputs were
 * committed before it processed them): tried again in a new transaction after a transient broker
 * fault, backing off from 200 ms doubled, until BEFORE_COMMIT_RETRY_MS after the first attempt;
 * a fence, any other fault, or `stopped()` ends it (the last fault is thrown). A failed attempt
 * leaves nothing visible (its transaction is aborted); one whose answer was lost after the broker
 * committed it is written again (the outputs twice: their consumers must tolerate that).
 */
export async function commitRetryingTransient(
  producer: TransactionalProducer,
  records: readonly OutRecord[],
  groupId: string,
  offsets: readonly TopicPartitionOffset[],
  o: { task: string; stopped(): boolean; log(line: string): void },
): Promise<Map<string, number>> {
  const began = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await producer.commit(records, groupId, offsets);
    } catch (err) {
      const delay = 200 * 2 ** attempt;
      if (o.stopped() || !transientCommitFault(err) || Date.now() + delay - began > BEFORE_COMMIT_RETRY_MS) throw err;
      o.log(
        `task ${o.task}: commit failed (${(err as Error).message}); its outputs answer inputs already committed, so it is tried again in ${delay} ms`,
      );
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** A commit's fault that a new transaction may get past: a transient broker fault, not a fence. */
function transientCommitFault(err: unknown): boolean {
  if (isCrawlError(err)) return err.code === 'CS_KAFKA' && isTransientFault(err.cause);
  return isTransientFault(err);
}
