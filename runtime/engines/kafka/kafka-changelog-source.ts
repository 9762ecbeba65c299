import { CrawlError } from '../../../core/errors.js';
import { rangeKey, type ChangelogRecord, type ChangelogSource, type ReplayRange } from '../../changelog-source.js';
import { readChangelogs } from './changelog-reader.js';
import type { KafkaAdmin, KafkaPort } from './kafka-port.js';

const DELETE_RETENTION = 'delete.retention.ms';
/** Kafka's `log.cleaner.delete.retention.ms` default: one day. */
const KAFKA_DEFAULT_DELETE_RETENTION_MS = 86_400_000;

/**
 * Changelogs on Kafka: `<app>-<store>-changelog` topics, read committed. End offsets are last
 * stable offsets; a transaction's commit marker takes an offset no record has, so the checkpoint
 * after a replay is the offset after the last record read (what the engine's own restore records).
 */
export class KafkaChangelogSource implements ChangelogSource {
  readonly description: string;

  constructor(
    private readonly port: KafkaPort,
    /** The engine's admin client, used and left open; a replay's source opens one per call. */
    private readonly shared?: KafkaAdmin,
    /** Whether `close` closes the port (a replay's), or leaves it to its owner (the running engine's). */
    private readonly ownsPort = true,
  ) {
    this.description = `Kafka (${port.clientId})`;
  }

  async endOffsets(topic: string, partitions: number): Promise<number[]> {
    const admin = this.shared ?? (await this.port.admin());
    try {
      // the admin client speaks cluster names, the topology logical ones (`--app-id` prefixes them)
      const ends = await admin.endOffsets(this.port.naming.physicalTopic(topic));
      if (ends.size !== partitions)
        throw new CrawlError(
          'CS_TOPOLOGY',
          `topic ${topic} has ${ends.size} partitions on Kafka, the topology declares ${partitions}; pass --partitions ${ends.size}`,
        );
      return Array.from({ length: partitions }, (_, p) => ends.get(p) ?? 0);
    } finally {
      if (admin !== this.shared) await admin.close();
    }
  }

  async tombstoneRetentionMs(topic: string): Promise<number> {
    const admin = this.shared ?? (await this.port.admin());
    try {
      const { config } = await admin.describeTopic(this.port.naming.physicalTopic(topic), [DELETE_RETENTION]);
      const ms = Number(config[DELETE_RETENTION]);
      // a broker answers the topic's effective value; without one, Kafka's default applies
      return Number.isFinite(ms) && ms >= 0 ? ms : KAFKA_DEFAULT_DELETE_RETENTION_MS;
    } finally {
      if (admin !== this.shared) await admin.close();
    }
  }

  async read(
    ranges: readonly ReplayRange[],
    onRecords: (topic: string, partition: number, records: readonly ChangelogRecord[]) => void,
  ): Promise<Map<string, number>> {
    const checkpoints = new Map(ranges.map((r) => [rangeKey(r.topic, r.partition), r.from]));
    // each range ends at an end offset read before (`endOffsets`): no need to ask the brokers again
    await readChangelogs(
      this.port,
      ranges.map((r) => ({ ...r, end: r.to })),
      (topic, partition, records, next) => {
        onRecords(
          topic,
          partition,
          records.map((r) => ({
            key: Buffer.from(r.key),
            value: r.value === null ? null : Buffer.from(r.value),
            offset: r.offset,
          })),
        );
        checkpoints.set(rangeKey(topic, partition), next);
      },
    );
    return checkpoints;
  }

  async close(): Promise<void> {
    if (this.ownsPort) await this.port.close();
  }
}
