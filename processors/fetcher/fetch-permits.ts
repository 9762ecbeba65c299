/**
 * The fetches a fetcher task has under way at once (`--fetch-concurrency`), apart from the leases it
 * holds: a lease waiting for its start takes no permit, so leases issued ahead of their start
 * (the dispatch look-ahead) do not hold back the ones due sooner. Permits
 * are handed out in the order asked for. Not thread-safe; one per task.
 */
export class FetchPermits {
  private free: number;
  private readonly waiting: ((taken: boolean) => void)[] = [];
  private closed = false;

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Resolves true once a permit is held (give it back with `give`); false when closed first. */
  take(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Returns a permit taken with `take`: to the longest waiter, else to the pool. */
  give(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next(true);
    else this.free++;
  }

  /** Fetches waiting for a permit now. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Every waiter gives up (false); later takes too. Permits held are still given back. */
  close(): void {
    this.closed = true;
    for (const resolve of this.waiting.splice(0)) resolve(false);
  }
}
