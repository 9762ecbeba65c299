/** One changelog record as a replay needs it: `value: null` is a delete. */
export interface ChangelogRecord {
  readonly key: Buffer;
  readonly value: Buffer | null;
  readonly offset: number;
}

/** Offsets [from, to) of one changelog partition. */
export interface ReplayRange {
  readonly topic: string;
  readonly partition: number;
  readonly from: number;
  readonly to: number;
}

/**
 * Where a replay reads changelogs: the one thing the two engines do differently (the embedded
 * engine's log under `<data>/log`, or `<app>-<store>-changelog` topics on Kafka, read committed).
 * Everything else — which stores, which task directories, comparing, rebuilding — is shared.
 */
export interface ChangelogSource {
  /** For messages: where the changelogs are read from. */
  readonly description: string;
  /**
   * Each partition's end offset now, index = partition (embedded: the log's end; Kafka: the last
   * stable offset). A changelog that does not exist yet has `partitions` ends of 0; one whose
   * partition count differs from `partitions` is refused (a wrong `--partitions`).
   */
  endOffsets(topic: string, partitions: number): Promise<number[]>;
  /**
   * How long a delete stays in `topic` as a tombstone before compaction may remove it, and with it
   * every trace of the deleted key: a local copy that has not followed this changelog for longer
   * may miss deletes, and its checkpoint must not be trusted (the task restores from nothing).
   * Kafka: the topic's `delete.retention.ms`. Embedded: Infinity — its compactor removes only
   * records below the checkpoint of the one local copy, which has applied them already.
   */
  tombstoneRetentionMs(topic: string): Promise<number>;
  /**
   * Hands over every committed record of each range, in offset order per partition, in batches
   * (offsets may have gaps: compaction, transaction markers). Resolves once every range was read
   * to its `to`, with per `topic\0partition` the checkpoint a store that applied all of them
   * records (embedded: `to`; Kafka: the offset after the last record read, as the Kafka engine's
   * restore records it, or `from` when none was read).
   */
  read(
    ranges: readonly ReplayRange[],
    onRecords: (topic: string, partition: number, records: readonly ChangelogRecord[]) => void,
  ): Promise<Map<string, number>>;
  close(): Promise<void>;
}

/** The key of a topic partition in the maps of this folder. */
export function rangeKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
