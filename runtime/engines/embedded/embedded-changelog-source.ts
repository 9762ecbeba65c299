import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CrawlError } from '../../../core/errors.js';
import { rangeKey, type ChangelogRecord, type ChangelogSource, type ReplayRange } from '../../changelog-source.js';
import { lockedOr } from '../../task-directory.js';
import { CORRUPT_HEADER, EmbeddedLog } from './log-store.js';

const BATCH = 10_000;

/**
 * Changelogs of the embedded engine: topics of the log at `<data>/log`. Opening the log takes its
 * RocksDB lock, so a replay cannot run beside a crawl on the same data directory. The log has no
 * transaction markers: the checkpoint after a replay is the partition's end offset.
 */
export class EmbeddedChangelogSource implements ChangelogSource {
  readonly description: string;

  private constructor(
    private readonly log: EmbeddedLog,
    dir: string,
    /** Whether `close` closes the log (a replay's), or leaves it to its owner (the running engine's). */
    private readonly owned: boolean,
  ) {
    this.description = `the embedded log at ${dir}`;
  }

  /** Reads the engine's own open log, for its tasks' restores; `close` leaves the log open. */
  static over(log: EmbeddedLog, dir: string): EmbeddedChangelogSource {
    return new EmbeddedChangelogSource(log, dir, false);
  }

  /** Opens `<dataDir>/log`; refuses a data directory without one, or one an instance is running on. */
  static async open(dataDir: string): Promise<EmbeddedChangelogSource> {
    const dir = join(dataDir, 'log');
    if (!existsSync(dir))
      throw new CrawlError(
        'CS_STORE',
        `no embedded log at ${dir}: --data is not the data directory of an embedded crawl (for Kafka, pass --brokers)`,
      );
    try {
      return new EmbeddedChangelogSource(await EmbeddedLog.open(dir), dir, true);
    } catch (err) {
      throw lockedOr(err, dir, dataDir);
    }
  }

  /** Infinity: the embedded compactor never removes a record its store's one local copy has not applied. */
  tombstoneRetentionMs(): Promise<number> {
    return Promise.resolve(Infinity);
  }

  endOffsets(topic: string, partitions: number): Promise<number[]> {
    let stored: number;
    try {
      stored = this.log.partitions(topic);
    } catch {
      // no record was ever written to this changelog
      return Promise.resolve(new Array<number>(partitions).fill(0));
    }
    if (stored !== partitions)
      throw new CrawlError(
        'CS_TOPOLOGY',
        `topic ${topic} has ${stored} partitions in ${this.description}, the topology declares ${partitions}; pass --partitions ${stored}`,
      );
    this.log.ensureTopic(topic, stored);
    return Promise.resolve(Array.from({ length: partitions }, (_, p) => this.log.endOffset(topic, p)));
  }

  read(
    ranges: readonly ReplayRange[],
    onRecords: (topic: string, partition: number, records: readonly ChangelogRecord[]) => void,
  ): Promise<Map<string, number>> {
    const checkpoints = new Map<string, number>();
    for (const r of ranges) {
      let offset = r.from;
      while (offset < r.to) {
        const batch = this.log.read(r.topic, r.partition, offset, BATCH).filter((rec) => rec.offset < r.to);
        if (batch.length === 0) break;
        offset = batch[batch.length - 1]!.offset + 1;
        const corrupt = batch.find((rec) => rec.headers?.[CORRUPT_HEADER] !== undefined);
        if (corrupt)
          throw new CrawlError(
            'CS_CORRUPT_RECORD',
            `${r.topic}-${r.partition} offset ${corrupt.offset} cannot be read (${corrupt.headers![CORRUPT_HEADER]}): a replay would lose it`,
          );
        onRecords(r.topic, r.partition, batch);
      }
      checkpoints.set(rangeKey(r.topic, r.partition), r.to);
    }
    return Promise.resolve(checkpoints);
  }

  async close(): Promise<void> {
    if (this.owned) await this.log.close();
  }
}
