import { M } from '../core/metric-catalogue.js';
import { isCrawlError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { Metrics } from '../core/metrics.js';

/** Why a task is paused: the `reason` label of `crawlstream_tasks_paused`. */
export type PauseReason = 'disk-full';

/** Every reason, exported at 0 from the start so a dashboard and an alert see the series. */
export const PAUSE_REASONS: readonly PauseReason[] = ['disk-full'];

/** How long a paused task waits before it tries its record again. */
export const PAUSE_RETRY_MS = 2_000;

/**
 * The reason a failure pauses its task, or undefined when the failure is the record's own. A
 * resource fault (CS_DISK_FULL: a WARC or state disk that is full) says nothing about the record:
 * dead-lettering it would lose a page that a freed disk could have kept, and every record after it
 * would fail the same way. So the task stops taking records and retries this one until it succeeds.
 */
export function resourceFault(err: unknown): PauseReason | undefined {
  return isCrawlError(err) && err.code === 'CS_DISK_FULL' ? 'disk-full' : undefined;
}

interface Pause {
  readonly reason: PauseReason;
  readonly message: string;
  readonly since: number;
}

/**
 * The tasks of one engine that a resource fault has paused (or, while it starts, the stores it
 * could not open), for `/healthz` (EngineBase.healthOf:
 * live, not ready, `reason` naming the fault), the gauge `crawlstream_tasks_paused{reason}` and
 * the log: one line when a task pauses, one when it resumes, never one per retry.
 *
 * A paused task keeps its position: the record that failed is not taken, nothing after it is
 * processed, and it is tried again every `retryMs` (RecordDriver) until it succeeds, which resumes
 * the task, or the task stops.
 */
export class TaskPauses {
  private readonly paused = new Map<string, Pause>();

  constructor(
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    readonly retryMs = PAUSE_RETRY_MS,
    private readonly now: () => number = Date.now,
  ) {
    for (const reason of PAUSE_REASONS) metrics.setGauge(M.tasksPaused, 'engine', 0, reason);
  }

  /**
   * Marks `task` (`task 1_0`, or what else waits: `the embedded log`) paused by `err` (logged the
   * first time only) and waits `retryMs` before its record is tried again. Resolves true when it is time to retry, false as soon as `running()`
   * turns false: the task is stopping, and its pause ends with it.
   */
  async wait(task: string, reason: PauseReason, err: Error, running: () => boolean): Promise<boolean> {
    this.mark(task, reason, err);
    const until = this.now() + this.retryMs;
    // short steps, so a stop never waits for a whole retry interval
    while (running() && this.now() < until) await new Promise((r) => setTimeout(r, Math.min(100, this.retryMs)));
    if (running()) return true;
    this.end(task);
    return false;
  }

  /** Marks `task` paused by `err` (logged the first time only) without waiting; `wait`, `resume` or `clear` go on from there. */
  mark(task: string, reason: PauseReason, err: Error): void {
    if (this.paused.has(task)) return;
    this.paused.set(task, { reason, message: err.message, since: this.now() });
    this.metrics.setGauge(M.tasksPaused, task, 1, reason);
    this.logger.warn(
      `${task} paused: ${err.message}; tried again every ${this.retryMs / 1000} s, nothing is dead-lettered`,
      { reason },
    );
  }

  /** The record `task` retried has succeeded: the task runs again (logged once). Cheap when it was not paused. */
  resume(task: string): void {
    const pause = this.paused.get(task);
    if (pause === undefined) return;
    this.end(task);
    const seconds = Math.round((this.now() - pause.since) / 1000);
    this.logger.info(`${task} resumed after ${seconds} s paused (${pause.reason})`);
  }

  /** Tasks paused now. */
  get count(): number {
    return this.paused.size;
  }

  /** `paused: <the fault>` of the first paused task (and how many are), for `/healthz`; undefined when none is. */
  describe(): string | undefined {
    const [first] = this.paused;
    if (first === undefined) return undefined;
    const [task, pause] = first;
    const others = this.paused.size - 1;
    return `paused: ${task}: ${pause.message}${others > 0 ? ` (and ${others} more)` : ''}`;
  }

  /** Ends `task`'s pause without a line: it stops, and its pause with it. */
  clear(task: string): void {
    this.end(task);
  }

  private end(task: string): void {
    const pause = this.paused.get(task);
    if (pause === undefined) return;
    this.paused.delete(task);
    this.metrics.setGauge(M.tasksPaused, task, 0, pause.reason);
  }
}
