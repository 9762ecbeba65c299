import type { EngineHealth } from './engine.js';

/** The default of `--stall-timeout`: Kafka's own `max.poll.interval.ms`, the time a consumer may go without polling. */
export const DEFAULT_STALL_MS = 300_000;

/**
 * Judges from successive health readings whether an engine has stalled: it has had work pending
 * and made no progress for at least `limitMs`. The clock starts at the first reading with work
 * pending and restarts at every reading whose progress differs from the previous one; a reading
 * with nothing pending stops it. An engine idle for a day is therefore not stalled the moment new
 * input arrives, and one that moves at all within the limit never is. Readings should come at
 * least every few seconds (the ops server takes one every second and at every probe): the clock
 * only knows what it was shown.
 */
export class StallWatch {
  private since: { progress: number; at: number } | undefined;

  constructor(
    readonly limitMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes a reading; returns how long work has been pending without progress (0: none pending, or it just moved). */
  observe(health: EngineHealth): number {
    const at = this.now();
    if (health.pending === undefined) {
      this.since = undefined;
      return 0;
    }
    if (this.since === undefined || this.since.progress !== health.progress) {
      this.since = { progress: health.progress, at };
      return 0;
    }
    return at - this.since.at;
  }

  /** True when `stuckMs` (a value `observe` returned) has reached the limit. */
  stalled(stuckMs: number): boolean {
    return stuckMs >= this.limitMs;
  }
}

/** Counts of the work an engine could do now; each engine reports those it has. */
export interface PendingWork {
  /** Input records fetched or appended and not yet taken for processing. */
  readonly unread?: number;
  /** Records taken and not finished. */
  readonly inFlight?: number;
  /** Tasks with outputs or positions waiting for a commit. */
  readonly uncommitted?: number;
  /** Assigned tasks not running yet (fencing, restoring, or failing to open). */
  readonly opening?: number;
}

/** "12 input records not yet taken, 3 in flight", or undefined when there is no work: EngineHealth.pending. */
export function describePending(work: PendingWork): string | undefined {
  const parts: string[] = [];
  const { unread = 0, inFlight = 0, uncommitted = 0, opening = 0 } = work;
  if (unread > 0) parts.push(`${unread} input record${unread === 1 ? '' : 's'} not yet taken`);
  if (inFlight > 0) parts.push(`${inFlight} in flight`);
  if (uncommitted > 0) parts.push(`${uncommitted} task${uncommitted === 1 ? '' : 's'} with work to commit`);
  if (opening > 0) parts.push(`${opening} assigned task${opening === 1 ? '' : 's'} not running`);
  return parts.length > 0 ? parts.join(', ') : undefined;
}
