import type { DeadLetters } from './dead-letter.js';
import type { ConsumedRawRecord, RecordHeaders } from './record.js';
import { partitionFor } from './partitioner.js';
import type { SerdeSet } from './serdes.js';
import type { Topology } from './topology.js';
import type { StreamRecord } from './record.js';

/** A serialized record for a topic partition; `partition` is always chosen by the writer (murmur2). */
export interface OutputRecord {
  readonly topic: string;
  readonly partition: number;
  readonly key: Buffer;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers?: RecordHeaders;
}

/**
 * The records a task's sinks (and its dead letters) produced since the last commit, in order;
 * the StreamTask's RecordCollector on both engines. The next commit takes them all (`drain`), so
 * they become visible exactly when the input positions that produced them are committed.
 */
export class OutputCollector {
  private records: OutputRecord[] = [];

  constructor(
    /** The engine's dead letters: their topic (one partition), size and log. */
    private readonly deadLetters: DeadLetters,
  ) {}

  get size(): number {
    return this.records.length;
  }

  collect(
    topic: string,
    partition: number,
    key: Buffer,
    value: Buffer | null,
    timestamp: number,
    headers?: RecordHeaders,
  ): void {
    this.records.push(
      headers ? { topic, partition, key, value, timestamp, headers } : { topic, partition, key, value, timestamp },
    );
  }

  /** Adds the dead letter of `record`, which failed with `error` (sized, counted and said: `DeadLetters.of`). */
  deadLetter(record: ConsumedRawRecord, error: unknown): void {
    const d = this.deadLetters.of(record, error);
    this.collect(this.deadLetters.topic, 0, d.key, d.value, d.timestamp, d.headers);
  }

  /** Gives back what `drain` handed to a commit that failed: ahead of what was collected since, in order. */
  requeue(records: readonly OutputRecord[]): void {
    if (records.length > 0) this.records = [...records, ...this.records];
  }

  /** Everything collected, handed over to a commit; the collector starts empty again. */
  drain(): OutputRecord[] {
    const out = this.records;
    this.records = [];
    return out;
  }
}

/**
 * `records` serialized for `topic` with the topology's serdes, each addressed to the partition its
 * key picks: what `Engine.produce` writes on both engines.
 */
export function serializeFor(
  topology: Topology,
  serdes: SerdeSet,
  topic: string,
  records: readonly StreamRecord<string, unknown>[],
): OutputRecord[] {
  const spec = topology.topic(topic);
  return records.map((r) => {
    const key = serdes.key(topic).serialize(r.key);
    return {
      topic,
      partition: partitionFor(key, spec.partitions),
      key,
      value: serdes.value(topic).serialize(r.value),
      timestamp: r.timestamp,
      ...(r.headers ? { headers: r.headers } : {}),
    };
  });
}
