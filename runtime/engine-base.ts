import { CrawlError } from '../core/errors.js';
import { taskIdString, type TaskId } from '../core/ids.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { Metrics } from '../core/metrics.js';
import type { EngineHealth, QuarantinedTask } from './engine.js';
import { TaskPauses } from './resource-pause.js';
import { WIPE_REASONS } from './task-state.js';
import { M } from '../core/metric-catalogue.js';

/** An engine's life: started once, stopped once (by `stop` or a fatal error). */
export type EngineState = 'new' | 'running' | 'stopping' | 'stopped';

/**
 * What both engines share around their tasks: the `done` promise, the state, the start guard,
 * the prologues of a graceful stop and of a failure, and the logger. An engine calls
 * `beginStop`/`endStop` around its own stop, `beginFail`/`endFail` around its own teardown.
 */
export abstract class EngineBase {
  readonly metrics = new Metrics();
  /** Settles when the engine has stopped: resolves after `stop()`, rejects with the fatal error. */
  readonly done: Promise<void>;
  protected state: EngineState = 'new';
  /** Set by a fatal error: `/healthz` then reports not live, with `failure` as its reason. */
  protected failed = false;
  protected failure: string | undefined;
  protected readonly logger: Logger;
  /** Tasks paused by a resource fault (a full disk); their record drivers retry, `/healthz` says so. */
  protected readonly pauses: TaskPauses;
  private resolveDone!: () => void;
  private rejectDone!: (err: unknown) => void;

  constructor(logger: Logger | undefined) {
    this.logger = logger ?? silentLogger;
    this.pauses = new TaskPauses(this.metrics, this.logger);
    for (const reason of WIPE_REASONS) this.metrics.inc(M.storeWipes, 0, reason);
    this.done = new Promise((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.done.catch(() => undefined);
  }

  /** Throws CS_INTERNAL when the engine was started before. */
  protected startOnce(): void {
    if (this.state !== 'new') throw new CrawlError('CS_INTERNAL', 'engine already started');
  }

  /**
   * The prologue of `stop()`: returns what `stop()` resolves with when there is nothing to do
   * (stopped or stopping already; never started: stopped at once); otherwise moves to `stopping`
   * and returns undefined, and the engine stops its tasks and calls `endStop`.
   */
  protected beginStop(): Promise<void> | undefined {
    if (this.state === 'stopped' || this.state === 'stopping') return this.done.catch(() => undefined);
    if (this.state === 'new') {
      this.endStop();
      return Promise.resolve();
    }
    this.state = 'stopping';
    return undefined;
  }

  protected endStop(): void {
    this.state = 'stopped';
    this.resolveDone();
  }

  /**
   * The prologue of a failure: false when the engine has stopped already (nothing to do);
   * otherwise logs the error, marks the engine failed and stopped, and the engine tears down
   * without a final commit and calls `endFail`.
   */
  protected beginFail(err: unknown): boolean {
    if (this.state === 'stopped') return false;
    this.logger.error(`fatal: ${(err as Error).stack ?? String(err)}`);
    this.state = 'stopped';
    this.failed = true;
    this.failure = err instanceof Error ? err.message : String(err);
    return true;
  }

  protected endFail(err: unknown): void {
    this.rejectDone(err);
  }

  /** Throws CS_INTERNAL unless running: records are produced only into a running engine. */
  protected checkProduce(topic: string): void {
    if (this.state !== 'running')
      throw new CrawlError('CS_INTERNAL', `cannot produce to ${topic}: the engine is ${this.state}`);
  }

  /**
   * `/healthz`'s answer from the engine's own readings: not live once failed (the failure is the
   * reason) or while `down` says why part of it is not running (a crashed consumer). While a task
   * is paused by a resource fault it is live (a restart would not free the disk) but not ready,
   * the pause is the reason, and nothing is pending: the work waits for the resource, so it is
   * not a stall that should fail the probe.
   */
  protected healthOf(h: {
    readonly ready: boolean;
    readonly tasks: number;
    readonly restoring: number;
    readonly progress: number;
    readonly pending?: string | undefined;
    readonly down?: string | undefined;
    readonly quarantined?: readonly QuarantinedTask[];
  }): EngineHealth {
    const paused = this.pauses.describe();
    const reason = this.failure !== undefined ? `failed: ${this.failure}` : (h.down ?? paused);
    return {
      live: !this.failed && h.down === undefined,
      ready: h.ready && paused === undefined,
      state: this.failed ? 'failed' : this.state,
      tasks: h.tasks,
      restoring: h.restoring,
      ...(reason !== undefined ? { reason } : {}),
      progress: h.progress,
      ...(h.pending !== undefined && paused === undefined ? { pending: h.pending } : {}),
      ...(h.quarantined !== undefined && h.quarantined.length > 0 ? { quarantined: h.quarantined } : {}),
    };
  }

  /** The logger a task's processors get: the engine's, bound to the task's name. */
  protected taskLogger(id: TaskId): Logger {
    return this.logger.child({ task: taskIdString(id) });
  }

  protected say(line: string): void {
    this.logger.info(line);
  }
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The grace wait of a stopping task: resolves once `busy()` is 0 or `graceMs` has passed. */
export async function graceWait(busy: () => number, graceMs: number): Promise<void> {
  const deadline = Date.now() + graceMs;
  while (busy() > 0 && Date.now() < deadline) await sleep(20);
}
