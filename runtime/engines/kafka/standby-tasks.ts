import type { Logger } from '../../../core/logger.js';
import { M } from '../../../core/metric-catalogue.js';
import type { Metrics } from '../../../core/metrics.js';
import { taskIdString } from '../../../core/ids.js';
import type { ChangelogSource } from '../../changelog-source.js';
import type { TaskDirectory } from '../../task-directory.js';
import { closeTaskState, openTaskState, restoreStores, type LocalTaskState } from '../../task-state.js';
import type { Subtopology, Topology } from '../../topology.js';

/** How often the standbys read what their changelogs gained since the last catch-up. */
export const STANDBY_CATCH_UP_MS = 1_000;

export interface StandbyTasksOptions {
  readonly topology: Topology;
  /** The member's task directories: a standby keeps its copy where the task's active opening finds it. */
  readonly directory: TaskDirectory;
  readonly changelogs: ChangelogSource;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** How long `sub`'s local state may go unfollowed and be trusted (its changelogs' tombstone retention). */
  staleAfterMs(sub: Subtopology): Promise<number>;
  /** Default STANDBY_CATCH_UP_MS. */
  readonly catchUpMs?: number;
}

/** One standby: a task's stores, opened without its processors, following its changelogs. */
interface Standby {
  readonly name: string;
  readonly sub: Subtopology;
  readonly partition: number;
  /** Settles once the opening is over (failures are said, not thrown). */
  opening: Promise<void>;
  /** The stores, once open. */
  state?: LocalTaskState;
  /** Set by `release`: the standby closes after the catch-up under way, which it cuts short. */
  closing: boolean;
  /** Records its stores were behind their changelogs at the last catch-up. */
  lag: number;
}

/** Thrown into a catch-up's read to cut it short when one of its standbys is released. */
class Released extends Error {}

/**
 * The standby tasks of one member (`--standby-replicas`, Kafka Streams' standby tasks): for each
 * partition the group's leader named, the task's stores are opened in the member's task
 * directory and kept within about a second of their changelogs, with no processor and no input.
 * When the partition becomes this member's active task, the standby is closed first and the
 * active opening restores only the tail (`openTaskState` reads the checkpoints the standby left).
 * One catch-up reads every standby's changelogs at once, every `catchUpMs`.
 */
export class StandbyTasks {
  private readonly standbys = new Map<string, Standby>();
  private readonly timer: NodeJS.Timeout;
  private catchingUp: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly o: StandbyTasksOptions) {
    this.timer = setInterval(() => void this.catchUp(), o.catchUpMs ?? STANDBY_CATCH_UP_MS).unref();
  }

  /**
   * The standbys `sub` has on this member from now: those no longer named are closed, new ones
   * opened. A partition this member runs must not be among them (the leader never names one).
   */
  set(sub: Subtopology, partitions: ReadonlySet<number>): void {
    if (this.stopped) return;
    for (const s of this.standbys.values())
      if (s.sub.id === sub.id && !partitions.has(s.partition)) void this.release(sub.id, s.partition);
    for (const p of partitions) {
      const name = taskIdString({ subtopology: sub.id, partition: p });
      if (this.standbys.has(name)) continue;
      const s: Standby = { name, sub, partition: p, opening: Promise.resolve(), closing: false, lag: 0 };
      this.standbys.set(name, s);
      s.opening = this.open(s);
    }
    this.report();
  }

  /**
   * Closes the standby of `partition` of sub-topology `sub`, if there is one; resolves once its
   * RocksDB is closed (an active opening of the same task waits for that anyway). Idempotent.
   */
  async release(sub: number, partition: number): Promise<void> {
    const name = taskIdString({ subtopology: sub, partition });
    const s = this.standbys.get(name);
    if (!s) return;
    this.standbys.delete(name);
    s.closing = true;
    this.report();
    // a catch-up under way reads into its stores: it ends at its next batch, then they close
    await this.catchingUp;
    await s.opening;
    if (s.state) await closeTaskState(s.state);
    s.state = undefined;
  }

  /** The partitions of `sub` this member keeps a standby of (open or opening). */
  warm(sub: number): number[] {
    return [...this.standbys.values()].filter((s) => s.sub.id === sub).map((s) => s.partition);
  }

  /** Each standby by task name, with the records it was behind at its last catch-up. */
  lags(): Map<string, number> {
    return new Map([...this.standbys.values()].map((s) => [s.name, s.lag]));
  }

  /** Closes every standby; the member stops. */
  async closeAll(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.allSettled([...this.standbys.values()].map((s) => this.release(s.sub.id, s.partition)));
  }

  private async open(s: Standby): Promise<void> {
    const { sub, partition, name } = s;
    const id = { subtopology: sub.id, partition };
    try {
      const dir = this.o.directory.task(id, await this.o.staleAfterMs(sub));
      const state = await openTaskState({
        id,
        sub,
        topology: this.o.topology,
        dir,
        source: this.o.changelogs,
        logger: this.o.logger,
        metrics: this.o.metrics,
      });
      s.state = state;
      // behind by what its changelogs hold past its checkpoints, until its first catch-up
      s.lag = lagOf(state, (topic) => state.ends.get(topic) ?? 0);
      this.report();
      this.o.logger.info(`standby ${name} opened: it follows its changelogs from its checkpoints`);
    } catch (err) {
      // a broker fault or a full disk: the next assignment names it again; the active opening does not depend on it
      this.o.logger.warn(`standby ${name} could not open: ${(err as Error).message}`);
      if (this.standbys.get(name) === s) this.standbys.delete(name);
      this.report();
    }
  }

  /** One catch-up of every open standby, unless one is under way. */
  private catchUp(): Promise<void> {
    // readTails says its failures: this promise never rejects
    this.catchingUp ??= this.readTails().finally(() => (this.catchingUp = undefined));
    return this.catchingUp;
  }

  private async readTails(): Promise<void> {
    const open: { s: Standby; state: LocalTaskState }[] = [];
    for (const s of this.standbys.values()) if (s.state && !s.closing) open.push({ s, state: s.state });
    if (open.length === 0) return;
    try {
      const ends = new Map<string, number[]>();
      for (const { s, state } of open)
        for (const { topic } of state.changelogged)
          if (!ends.has(topic)) ends.set(topic, await this.o.changelogs.endOffsets(topic, s.sub.partitions));
      const targets = open.flatMap(({ s, state }) =>
        state.changelogged.map((c) => ({ ...c, partition: s.partition, to: ends.get(c.topic)![s.partition] ?? 0 })),
      );
      for (const { s, state } of open) s.lag = lagOf(state, (topic) => ends.get(topic)![s.partition] ?? 0);
      this.report();
      const restored = await restoreStores(this.o.changelogs, 0, targets, {
        onBatch: () => {
          if (open.some(({ s }) => s.closing)) throw new Released();
        },
      });
      this.o.metrics.inc(
        M.standbyRecords,
        restored.reduce((n, r) => n + r.records, 0),
      );
      // read to its end: the store holds every committed record below it, so it starts there next
      // time (Kafka's source records the offset after the last record, short of a commit marker)
      for (const t of targets) if (t.store.checkpoint() < t.to) t.store.restore([], t.to);
      for (const { s, state } of open) s.lag = lagOf(state, (topic) => ends.get(topic)![s.partition] ?? 0);
    } catch (err) {
      if (err instanceof Released) return;
      // the next catch-up tries again (a broker fault); a store that cannot write (a full disk) says so each time
      this.o.logger.warn(`standbys could not catch up: ${(err as Error).message}`);
    } finally {
      this.report();
    }
  }

  private report(): void {
    let lag = 0;
    for (const s of this.standbys.values()) lag += s.lag;
    this.o.metrics.setGauge(M.standbyTasks, 'standbys', this.standbys.size);
    this.o.metrics.setGauge(M.standbyLagRecords, 'standbys', lag);
  }
}

/** Records between the stores' checkpoints and their changelogs' ends (offsets, so commit markers count too). */
function lagOf(state: LocalTaskState, endOf: (topic: string) => number): number {
  let lag = 0;
  for (const { store, topic } of state.changelogged) lag += Math.max(0, endOf(topic) - store.checkpoint());
  return lag;
}
