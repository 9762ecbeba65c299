import { CrawlError } from '../../../core/errors.js';
import {
  rangeKey,
  type ChangelogRecord,
  type ChangelogSource,
  type ReplayRange,
} from '../../replay/changelog-source.js';
import { readChangelogs } from './changelog-reader.js';
import type { KafkaPort } from './kafka-port.js';

/**
 * Changelogs on Kafka: `<app>-<store>-changelog` topics, read committed. End offsets are last
 * stable offsets; a transaction's commit marker takes an offset no record has, so the checkpoint
 * after a replay is the offset after the last record read (what the engine's own restore records).
 */
export class KafkaChangelogSource implements ChangelogSource {
  readonly description: string;

  constructor(private readonly port: KafkaPort) {
    this.description = `Kafka (${port.clientId})`;
  }

  async endOffsets(topic: string, partitions: number): Promise<number[]> {
    const admin = await this.port.admin();
    try {
      const ends = await admin.endOffsets(topic);
      if (ends.size !== partitions)
        throw new CrawlError(
          'CS_TOPOLOGY',
          `topic ${topic} has ${ends.size} partitions on Kafka, the topology declares ${partitions}; pass --partitions ${ends.size}`,
        );
      return Array.from({ length: partitions }, (_, p) => ends.get(p) ?? 0);
    } finally {
      await admin.close();
    }
  }

  async read(
    ranges: readonly ReplayRange[],
    onRecords: (topic: string, partition: number, records: readonly ChangelogRecord[]) => void,
  ): Promise<Map<string, number>> {
    const checkpoints = new Map(ranges.map((r) => [rangeKey(r.topic, r.partition), r.from]));
    await readChangelogs(this.port, ranges, (topic, partition, records, next) => {
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
    });
    return checkpoints;
  }

  async close(): Promise<void> {
    await this.port.close();
  }
}
