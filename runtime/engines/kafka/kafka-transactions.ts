import type { Producer } from 'kafkajs';
import {
  chunksOf,
  kafkaError,
  SEND_CHUNK_BYTES,
  toTopicMessages,
  type OutRecord,
  type TopicPartitionOffset,
  type TransactionalProducer,
} from './kafka-common.js';
import type { TopicNaming } from '../../topology.js';

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
 * The broker's "the previous transaction of this id is still being ended" (or its coordinator
 * moved), or a send that left partitions out: try again.
 */
function transactionBusy(err: unknown): boolean {
  const e = err as { type?: string; message?: string };
  return /CONCURRENT_TRANSACTIONS|COORDINATOR_LOAD_IN_PROGRESS|NOT_COORDINATOR|INCOMPLETE_SEND/.test(
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
export async function fence(producer: Producer): Promise<void> {
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

export class KafkajsTransactionalProducer implements TransactionalProducer {
  constructor(
    private readonly producer: Producer,
    private readonly id: string,
    private readonly onClose: () => void,
    /** Records, offsets and the returned offsets name logical topics; the broker sees cluster names. */
    private readonly naming: TopicNaming,
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
      // one produce request per chunk: a commit of many large records (robots-laden host states,
      // big pages) stays within the broker's request and batch limits
      for (const chunk of chunksOf(records, SEND_CHUNK_BYTES)) {
        const results = await tx.sendBatch({ topicMessages: toTopicMessages(chunk, this.naming), acks: -1 });
        const written = new Set<string>();
        for (const r of results) {
          const key = `${this.naming.logicalTopic(r.topicName)}\u0000${r.partition}`;
          const base = Number(r.baseOffset ?? r.offset);
          if (!Number.isSafeInteger(base) || base < 0) continue;
          written.add(key);
          bases.set(key, Math.min(bases.get(key) ?? Infinity, base));
        }
        const left = [...new Set(chunk.map((r) => `${r.topic}\u0000${r.partition}`))].filter((k) => !written.has(k));
        if (left.length > 0)
          throw new IncompleteSend(
            `the send reported no offset for ${left.map((k) => k.replace('\u0000', '/')).join(', ')}`,
          );
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

  async close(): Promise<void> {
    this.onClose();
    await this.producer.disconnect();
  }
}
