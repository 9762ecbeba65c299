import type { RocksPort } from '../../../state/rocks.js';
import type { ChangeloggedStore } from '../../../state/state-store.js';
import { CORRUPT_HEADER, type EmbeddedLog } from './log-store.js';

const DURABLE_KEY = Buffer.from('\u0000durable');
const MIN_DIRTY = 10_000;
const BATCH = 10_000;

/** One store's changelog partition, with what the compactor remembers of it. */
export interface CompactionTarget {
  readonly store: ChangeloggedStore;
  readonly topic: string;
  readonly partition: number;
  /** The task's RocksDB, which holds the store. */
  readonly db: RocksPort;
}

/**
 * Keeps embedded changelogs from growing with every write, like Kafka's log cleaner does for
 * `cleanup.policy=compact`: below the store's checkpoint, a record survives only while it still
 * holds the store's committed value for its key (a later write or a delete makes it obsolete),
 * so a replay from the start still rebuilds the store exactly. Runs when the changelog has grown
 * by at least as many records as survived the last pass (and 10 k), so the work per write stays
 * constant. Before deleting, the store's RocksDB WAL is fsynced: the checkpoint the pass relies
 * on can no longer roll back.
 */
export class ChangelogCompactor {
  /** Per `topic\0partition`: offset up to which the last finished pass ran, and the records it kept. */
  private readonly passes = new Map<string, { upTo: number; kept: number }>();
  /** Passes under way, resumed by the next call: [cursor, upTo) is still to scan. */
  private readonly running = new Map<string, { cursor: number; upTo: number; kept: number }>();

  /**
   * `minDirty`: the least growth (records) that makes a pass worth it; `budget`: records scanned
   * per call at most, so a pass over a large store is spread over calls instead of blocking.
   */
  constructor(
    private readonly log: EmbeddedLog,
    private readonly minDirty = MIN_DIRTY,
    private readonly budget = 50_000,
  ) {}

  /** Runs or continues the passes that are due, within the budget; returns how many records were deleted. */
  compactDue(targets: readonly CompactionTarget[]): number {
    let deleted = 0;
    let budget = this.budget;
    const synced = new Set<RocksPort>();
    for (const t of targets) {
      if (budget <= 0) break;
      const key = `${t.topic}\u0000${t.partition}`;
      let pass = this.running.get(key);
      if (!pass) {
        const last = this.passes.get(key) ?? { upTo: this.log.startOffset(t.topic, t.partition), kept: 0 };
        const checkpoint = t.store.checkpoint();
        if (checkpoint - last.upTo < Math.max(this.minDirty, last.kept)) continue;
        if (!synced.has(t.db)) {
          t.db.write([{ key: DURABLE_KEY, value: Buffer.alloc(0) }], { sync: true });
          synced.add(t.db);
        }
        pass = { cursor: this.log.startOffset(t.topic, t.partition), upTo: checkpoint, kept: 0 };
        this.running.set(key, pass);
      }
      const step = this.scan(t, pass, budget);
      deleted += step.deleted;
      budget -= step.scanned;
      if (pass.cursor >= pass.upTo) {
        this.running.delete(key);
        this.passes.set(key, { upTo: pass.upTo, kept: pass.kept });
      }
    }
    return deleted;
  }

  private scan(
    t: CompactionTarget,
    pass: { cursor: number; upTo: number; kept: number },
    budget: number,
  ): { deleted: number; scanned: number } {
    let deleted = 0;
    let scanned = 0;
    while (pass.cursor < pass.upTo && scanned < budget) {
      const records = this.log
        .read(t.topic, t.partition, pass.cursor, Math.min(BATCH, budget - scanned))
        .filter((r) => r.offset < pass.upTo);
      if (records.length === 0) {
        pass.cursor = pass.upTo;
        break;
      }
      const obsolete: number[] = [];
      // one multi-get per batch: a point read per record cost more than the rest of the pass
      const currents = t.store.committedRawMany(records.map((r) => Buffer.from(r.key)));
      for (let i = 0; i < records.length; i++) {
        const r = records[i]!;
        const current = currents[i];
        // an unreadable record is left for restore to report, not silently dropped
        if (
          r.headers?.[CORRUPT_HEADER] !== undefined ||
          (r.value !== null && current !== undefined && current.equals(r.value))
        )
          pass.kept++;
        else obsolete.push(r.offset);
      }
      if (obsolete.length > 0) this.log.deleteRecords(t.topic, t.partition, obsolete);
      deleted += obsolete.length;
      scanned += records.length;
      pass.cursor = records[records.length - 1]!.offset + 1;
    }
    return { deleted, scanned };
  }
}
