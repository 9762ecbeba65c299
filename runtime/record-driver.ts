import { CrawlError, isCrawlError } from '../core/errors.js';
import type { ConsumedRawRecord } from './record.js';
import { resourceFault, type TaskPauses } from './resource-pause.js';
import type { PoisonRecords } from './task-rewind.js';
import type { StreamTask } from './task.js';

/** What a driver reports to its engine's runner. */
export interface RecordDriverHost {
  /** The record's position is taken: the next commit records `offset + 1`. */
  advance(record: ConsumedRawRecord): void;
  /** The record failed in a processor: it goes to the dead-letter topic with the error's code. */
  deadLetter(record: ConsumedRawRecord, error: Error): void;
  /**
   * An 'after' record failed once a processor had seen it, so it may have left part of its work
   * behind: the engine throws away the task's uncommitted work and runs the task again from its
   * committed positions, this record marked poison (task-rewind.ts). The driver takes no more
   * records; those in flight finish. Without it (the test driver) the record is dead-lettered
   * where it failed, its effects kept.
   */
  rewind?(record: ConsumedRawRecord, error: Error): void;
  /** A fault no retry can fix (a topology bug): the engine stops. */
  fatal(error: unknown): void;
}

/**
 * The one record loop both engines share: hands records to a StreamTask, counts work in flight,
 * routes failures (CS_TOPOLOGY is fatal; an 'after' record a processor saw, a rewind when the
 * host offers one; anything else a dead letter) and advances positions. A record in `poison`
 * is dead-lettered with its error and its position advanced, unprocessed. Engines differ only in
 * where records come from and how commits happen.
 *
 * With `pauses`, an 'after' record that fails with a resource fault (resource-pause.ts) is neither
 * rewound nor dead-lettered: the task pauses, keeps its position before the record and tries it
 * again until it succeeds or the task stops. Without it (or for 'before' records) such a failure
 * is routed like any other.
 */
export class RecordDriver {
  private inFlight = 0;
  private active = 0;
  private readonly slotWaiters: (() => void)[] = [];
  private readonly idleWaiters: (() => void)[] = [];
  /** Set once a rewind was asked for: no record is taken after it. */
  private rewound = false;

  constructor(
    private readonly task: StreamTask,
    private readonly host: RecordDriverHost,
    private readonly pauses?: TaskPauses,
    /** The task's records that failed before a rewind (kept by the engine across the task's rewinds). */
    private readonly poison?: PoisonRecords,
  ) {}

  /** Whether a record's failure asked the engine for a rewind: this driver takes no more records. */
  get rewinding(): boolean {
    return this.rewound;
  }

  /** Records started and not finished. */
  busy(): number {
    return this.inFlight + this.active;
  }

  /** Resolves once no record is started and unfinished: at once when none is. Never rejects. */
  whenIdle(): Promise<void> {
    if (this.busy() === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * 'after' semantics: processes records one by one, awaiting async ones, advancing each position
   * once its record is done. Stops early when `running()` turns false, or after a record that
   * asked for a rewind; returns how many were taken (the failed one included).
   */
  async processInOrder(records: readonly ConsumedRawRecord[], running: () => boolean): Promise<number> {
    if (this.task.lookahead > 1) return this.processAhead(records, running);
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      if (!running() || this.rewound) return i;
      const poisoned = this.poison?.take(r);
      if (poisoned !== undefined) {
        this.host.deadLetter(r, poisoned);
        this.host.advance(r);
        continue;
      }
      try {
        const result = this.task.process(r);
        if (result instanceof Promise) {
          this.inFlight++;
          try {
            await result;
          } finally {
            this.inFlight--;
            this.settle();
          }
        }
      } catch (err) {
        if (this.pausedBy(err) === undefined) this.failed(r, err, true);
        else if (!(await this.retryPaused(r, err, running))) return i;
      }
      if (this.rewound) return i + 1;
      this.host.advance(r);
    }
    return records.length;
  }

  /**
   * 'after' semantics with up to `task.lookahead` records started before the earlier ones have
   * finished. A position advances only once its record and every record before it have finished,
   * in the same run of the microtask queue as the last of them, so a commit (a macrotask) never holds a record's
   * effects without the positions of the records before it. Stops starting records when
   * `running()` turns false or a record asked for a rewind, finishes those started; returns how
   * many were started.
   *
   * A record that fails with a resource fault pauses the task: no record is started until every
   * one started has settled, then each that failed so is retried alone, in order (retryPaused).
   * A processor that keeps records in order fails the records after such a one the same way,
   * without effect (runtime/processor.ts), so they take effect after it, as without the pause.
   * Stopped while paused, it returns how many records it took.
   */
  private async processAhead(records: readonly ConsumedRawRecord[], running: () => boolean): Promise<number> {
    const window: { record: ConsumedRawRecord; done: boolean; settled: Promise<void>; fault?: unknown }[] = [];
    const advanceDone = () => {
      while (window.length > 0 && window[0]!.done) this.host.advance(window.shift()!.record);
    };
    let paused = false;
    const retryFaulted = async (): Promise<boolean> => {
      await Promise.all(window.map((e) => e.settled));
      for (const e of [...window]) {
        if (this.rewound) return true;
        if (e.fault === undefined) continue;
        if (!(await this.retryPaused(e.record, e.fault, running))) return false;
        e.done = true;
        delete e.fault;
        advanceDone();
      }
      paused = false;
      return true;
    };
    let started = 0;
    for (; started < records.length; started++) {
      while (window.length >= this.task.lookahead && !paused) await window[0]!.settled;
      if (paused && !(await retryFaulted())) return started - window.length;
      if (!running() || this.rewound) break;
      const r = records[started]!;
      const entry: (typeof window)[number] = { record: r, done: false, settled: Promise.resolve() };
      window.push(entry);
      const finish = (err?: unknown) => {
        if (err !== undefined && this.pausedBy(err) !== undefined) {
          entry.fault = err;
          paused = true;
          return;
        }
        if (err !== undefined) this.failed(r, err, true);
        entry.done = true;
        advanceDone();
      };
      const poisoned = this.poison?.take(r);
      if (poisoned !== undefined) {
        // dead-lettered in its turn: the records before it in the window may still be running
        entry.settled = (window.length > 1 ? window[window.length - 2]!.settled : Promise.resolve()).then(() => {
          this.host.deadLetter(r, poisoned);
          finish();
        });
        continue;
      }
      let result: void | Promise<void>;
      try {
        result = this.task.process(r);
      } catch (err) {
        finish(err ?? new Error('undefined thrown'));
        continue;
      }
      if (!(result instanceof Promise)) {
        finish();
        continue;
      }
      this.inFlight++;
      entry.settled = result.then(
        () => finish(),
        (err: unknown) => finish(err ?? new Error('undefined thrown')),
      );
      void entry.settled.finally(() => {
        this.inFlight--;
        this.settle();
      });
    }
    await Promise.all(window.map((e) => e.settled));
    if (paused && !this.rewound && !(await retryFaulted())) return started - window.length;
    return started;
  }

  /**
   * 'before' semantics, once the records' positions are committed: starts each record, at most
   * the task's `concurrency` at a time, without waiting for them to finish. Stops early when
   * `running()` turns false; returns how many were started.
   */
  async startConcurrently(records: readonly ConsumedRawRecord[], running: () => boolean): Promise<number> {
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      if (!running()) return i;
      while (this.active >= this.task.concurrency) await new Promise<void>((res) => this.slotWaiters.push(res));
      this.active++;
      let result: void | Promise<void>;
      try {
        result = this.task.process(r);
      } catch (err) {
        this.failed(r, err);
        this.release();
        continue;
      }
      if (result instanceof Promise) result.catch((err) => this.failed(r, err)).finally(() => this.release());
      else this.release();
    }
    return records.length;
  }

  private release(): void {
    this.active--;
    this.slotWaiters.shift()?.();
    this.settle();
  }

  private settle(): void {
    if (this.busy() === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** The reason `err` pauses the task instead of dead-lettering its record; undefined without `pauses`. */
  private pausedBy(err: unknown): string | undefined {
    return this.pauses === undefined ? undefined : resourceFault(err);
  }

  /**
   * Tries `r`, which failed with the resource fault `err`, again after each pause until it
   * succeeds (the task resumes) or fails with a fault of its own (a dead letter, as without the
   * pause). Returns false, with `r` not taken, when `running()` turned false first.
   */
  private async retryPaused(r: ConsumedRawRecord, err: unknown, running: () => boolean): Promise<boolean> {
    const pauses = this.pauses!;
    let fault = err;
    for (;;) {
      if (!(await pauses.wait(`task ${this.task.name}`, resourceFault(fault)!, fault as Error, running))) return false;
      try {
        const result = this.task.process(r);
        if (result instanceof Promise) {
          this.inFlight++;
          try {
            await result;
          } finally {
            this.inFlight--;
            this.settle();
          }
        }
      } catch (e) {
        if (resourceFault(e) !== undefined) {
          fault = e;
          continue;
        }
        this.failed(r, e, true);
      }
      pauses.resume(`task ${this.task.name}`);
      return true;
    }
  }

  /** Routes a failure; `replayable`: an 'after' record, whose position is not committed yet. */
  private failed(r: ConsumedRawRecord, err: unknown, replayable = false): void {
    if (isCrawlError(err) && err.code === 'CS_TOPOLOGY') {
      this.host.fatal(err);
      return;
    }
    const error = err instanceof Error ? err : new CrawlError('CS_INTERNAL', String(err));
    if (this.rewound) return; // the rewind throws this record's work away too, and runs it again
    if (replayable && this.host.rewind && !this.task.failedUnread(err)) {
      this.rewound = true;
      this.host.rewind(r, error);
      return;
    }
    this.host.deadLetter(r, error);
  }
}
