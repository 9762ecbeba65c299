/** First wait before a member whose task was lost joins its group again; doubled per loss in a row, up to REJOIN_MAX_MS. */
export const REJOIN_FIRST_MS = 1_000;
export const REJOIN_MAX_MS = 30_000;
/** A member that could not join again for this long gives up (its partitions move to the others). */
export const REJOIN_GIVE_UP_MS = 300_000;

export interface RejoinHooks {
  /** Leaves and joins the group once; rejects when it cannot. */
  rejoin(): Promise<void>;
  /** False once the engine stops: a pending rejoin is then dropped. */
  running(): boolean;
  /** A failed attempt that will be tried again. */
  retrying(err: unknown): void;
  /** No rejoin succeeded for REJOIN_GIVE_UP_MS. */
  giveUp(err: unknown): void;
}

/**
 * When one consumer group joins again after a lost task: after a back-off of 1 s, doubled for
 * each loss within a minute of the last rejoin, up to 30 s; losses while one is pending share it.
 * One per group, owned by the engine.
 */
export class RejoinSchedule {
  private pending = false;
  private streak = 0;
  private lastAt = 0;
  private since = 0;

  constructor(private readonly hooks: RejoinHooks) {}

  /** Asks for a rejoin; idempotent while one is pending. */
  request(): void {
    if (this.pending) return;
    this.pending = true;
    const now = Date.now();
    if (now - this.lastAt > 60_000) [this.streak, this.since] = [0, now];
    const delay = Math.min(REJOIN_MAX_MS, REJOIN_FIRST_MS * 2 ** this.streak);
    this.streak++;
    setTimeout(() => {
      if (!this.hooks.running()) return;
      void this.hooks.rejoin().then(
        () => {
          this.pending = false;
          this.lastAt = Date.now();
          // the five minutes count failed rejoins since the last one that worked: a member dropping a
          // task again and again (a full state disk) keeps rejoining, and is no reason to stop
          this.since = this.lastAt;
        },
        (err: unknown) => {
          this.pending = false;
          this.lastAt = Date.now();
          if (Date.now() - this.since > REJOIN_GIVE_UP_MS) return this.hooks.giveUp(err);
          this.hooks.retrying(err);
          this.request();
        },
      );
    }, delay).unref();
  }
}
