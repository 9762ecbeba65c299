import { M } from '../../../core/metric-catalogue.js';
import { taskIdString } from '../../../core/ids.js';
import type { Metrics } from '../../../core/metrics.js';
import type { RocksMemory } from '../../../state/rocks.js';
import type { Subtopology, Topology } from '../../topology.js';
import { ChangelogCompactor } from './changelog-compactor.js';
import type { EmbeddedLog } from './log-store.js';
import type { OpenTask } from './task-recovery.js';

/**
 * How often consumed records are deleted from the log. A page crosses the log in well under a
 * second, and a record deleted while it is still in RocksDB's memtable is dropped when the
 * memtable is flushed: never written to an SST file, never compacted. At the 5 s of retention's
 * other work most pages reached an SST file first (a memtable fills in ~2 s on a fast crawl).
 */
export const TRUNCATE_INTERVAL_MS = 500;

/** How often changelogs are compacted and the log's memory reported. */
export const RETENTION_INTERVAL_MS = 5_000;

/**
 * The topics retention never deletes a record of and that are not compacted: the kept ones, and
 * those no sub-topology reads (`truncate` finds no consumer's position there). The log writes
 * their records once, beside its RocksDB (`EmbeddedLog.storeApart`).
 */
export function neverTruncated(topology: Topology, subtopologies: readonly Subtopology[]): string[] {
  const consumed = new Set(subtopologies.flatMap((sub) => sub.sourceTopics));
  return [...topology.topics.values()]
    .filter((spec) => !spec.compacted && (spec.keep || !consumed.has(spec.name)))
    .map((spec) => spec.name);
}

/**
 * The embedded log's retention: deletes what every consuming group has committed past (output
 * topics without consumers, kept and compacted topics are kept), compacts changelogs that have
 * grown (changelog-compactor.ts), and reports what RocksDB holds in memory. The engine calls it
 * on its timers, never while its commits are failing (a delete would fail too, and a failed one
 * breaks the log). Not thread-safe, like the log.
 */
export class LogRetention {
  private readonly compactor: ChangelogCompactor;

  constructor(
    private readonly log: EmbeddedLog,
    private readonly topology: Topology,
    private readonly tasks: () => readonly OpenTask[],
    private readonly metrics: Metrics,
  ) {
    this.compactor = new ChangelogCompactor(log);
  }

  /** Deletes the records of topics neither kept nor compacted below every consuming group's committed position. */
  truncate(): void {
    const floors = new Map<string, number>();
    for (const t of this.tasks()) {
      for (const p of t.runner.positions.values()) {
        const k = `${p.topic}\u0000${p.partition}`;
        const committed = this.log.committedPosition(t.runner.group, p.topic, p.partition);
        floors.set(k, Math.min(floors.get(k) ?? Infinity, committed));
      }
    }
    for (const [k, offset] of floors) {
      const [topic, partition] = k.split('\u0000') as [string, string];
      const spec = this.topology.topic(topic);
      if (spec.compacted || spec.keep) continue;
      this.log.truncateBefore(topic, Number(partition), offset);
    }
  }

  /** Compacts the changelogs of tasks that run (not rewound, not quarantined) that are due. */
  compact(): void {
    const compacted = this.compactor.compactDue(
      this.tasks().flatMap((t) =>
        (t.quarantined || t.rewinding ? [] : t.state.changelogged).map(({ store, topic }) => ({
          store,
          topic,
          partition: t.task.id.partition,
          db: t.state.db,
        })),
      ),
    );
    if (compacted > 0) this.metrics.inc(M.changelogRecordsCompacted, compacted);
  }

  /** Publishes what RocksDB and the log's tail cache hold, as crawlstream_cache_bytes{cache}. */
  reportMemory(): void {
    const report = (owner: string, m: RocksMemory) => {
      this.metrics.setGauge(M.cacheBytes, owner, m.memtables, 'rocksdb-memtables');
      this.metrics.setGauge(M.cacheBytes, owner, m.blockCache, 'rocksdb-block-cache');
      this.metrics.setGauge(M.cacheBytes, owner, m.tableReaders, 'rocksdb-table-readers');
    };
    for (const t of this.tasks())
      if (!t.quarantined && !t.rewinding) report(taskIdString(t.task.id), t.state.db.memory());
    const log = this.log.memory();
    report('log', log);
    this.metrics.setGauge(M.cacheBytes, 'log', log.tail, 'log-tail');
  }
}
