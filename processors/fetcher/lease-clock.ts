/** How long a lease's transit counts towards the clock offset: the offset follows a clock step or drift within it. */
export const OFFSET_WINDOW_MS = 60_000;

/** Hosts whose last reported offset a lease clock remembers (see `LeaseClock.reported`). */
const REMEMBERED_HOSTS = 10_000;

/**
 * The issuing frontier's clock as one fetcher task sees it. A lease carries absolute times on the
 * frontier's clock (`issuedAt`, `notBefore`, `notAfter`), and on the Kafka engine the fetcher may
 * run on another machine whose clock is off by some skew s. Each lease received is a sample of
 * `receivedAt − issuedAt` = s + its transit, on this process's monotonic clock (performance.now,
 * never stepped); the offset is the smallest sample of the last OFFSET_WINDOW_MS, s plus the least
 * transit seen. Since every transit is ≥ 0 the offset is never below s, so a lease time plus the
 * offset (`toLocal`) is never earlier in real time than the frontier meant, whichever way the
 * clocks are off: a start is at most the least transit late. Times reported back (`toFrontier`)
 * subtract the same offset, so the frontier's gap arithmetic stays on its own clock.
 *
 * The offset falls when a faster lease arrives (early on, the first leases may have waited for the
 * task's assignment). A host's last result was reported with the offset of its time, and the
 * frontier's next lease for it counts the gap from that report: so a host's lease uses the larger
 * of the current offset and the one its last report used (`offsetFor`), and the gap holds on this
 * process's clock whatever the offset did in between.
 *
 * One clock per fetcher task: a task reads one fetch-requests partition, which one frontier
 * partition writes (both keyed by site, equal counts), and a newer owner epoch (the partition
 * moved, maybe to another machine) starts it afresh (`reset`). Pure bookkeeping; not thread-safe.
 */
export class LeaseClock {
  /** Samples of the window in arrival order, each smaller than every one after it (a sliding minimum). */
  private samples: { at: number; offset: number }[] = [];
  private head = 0;
  /** Host → the offset its last reported result used, oldest first. */
  private readonly hosts = new Map<string, number>();

  constructor(
    /** This process's monotonic clock, in ms. */
    readonly now: () => number = () => performance.now(),
    private readonly windowMs = OFFSET_WINDOW_MS,
  ) {}

  /** Takes a lease issued at `issuedAt` (the frontier's clock) that arrived now. */
  observe(issuedAt: number): void {
    const at = this.now();
    const offset = at - issuedAt;
    while (this.samples.length > this.head && this.samples[this.samples.length - 1]!.offset >= offset)
      this.samples.pop();
    this.samples.push({ at, offset });
    this.expire(at);
  }

  /** Whether a lease has been seen since the start or the last reset. */
  get known(): boolean {
    return this.samples.length > this.head;
  }

  /** This clock minus the frontier's: its skew plus the least transit of the window (0 before any lease). */
  get offset(): number {
    this.expire(this.now());
    return this.known ? this.samples[this.head]!.offset : 0;
  }

  /** The offset for a lease of `host`: never below the one its last reported result used. */
  offsetFor(host: string): number {
    const last = this.hosts.get(host);
    return last === undefined ? this.offset : Math.max(this.offset, last);
  }

  /** A result of `host` was reported with `offset`: its next lease's gap counts from that report. */
  reported(host: string, offset: number): void {
    this.hosts.delete(host);
    this.hosts.set(host, offset);
    if (this.hosts.size > REMEMBERED_HOSTS) this.hosts.delete(this.hosts.keys().next().value!);
  }

  /** `frontierMs` on this clock, with `offset`. */
  toLocal(frontierMs: number, offset = this.offset): number {
    return frontierMs + offset;
  }

  /** `localMs` of this clock on the frontier's, with `offset`. */
  toFrontier(localMs: number, offset = this.offset): number {
    return Math.round(localMs - offset);
  }

  /** Forgets every sample and host: the leases now come from another frontier owner, maybe another clock. */
  reset(): void {
    this.samples = [];
    this.head = 0;
    this.hosts.clear();
  }

  /** Drops samples older than the window, keeping the newest (the offset is never unknown once seen). */
  private expire(now: number): void {
    const s = this.samples;
    while (s.length - this.head > 1 && s[this.head]!.at < now - this.windowMs) this.head++;
    if (this.head > 64 && this.head * 2 > s.length) {
      this.samples = s.slice(this.head);
      this.head = 0;
    }
  }
}
