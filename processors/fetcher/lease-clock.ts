/** How long a lease's transit counts towards the clock offset: the offset follows a clock step or drift within it. */
export const OFFSET_WINDOW_MS = 60_000;

/** Hosts whose last reported offset a lease clock remembers (see `LeaseClock.reported`). */
const REMEMBERED_HOSTS = 10_000;

/**
 * How far above its process's floor (`ProcessFrame`) a task's own offset may be and still be read
 * as transit, not as another frontier clock: within it the task takes the floor.
 */
export const SHARED_FRAME_TOLERANCE_MS = 1_000;

/**
 * How long after its first lease a task's offset further above the floor than the tolerance may
 * still be transit (leases that waited for the task's assignment) rather than another frontier clock.
 */
export const SETTLE_MS = 10_000;

/**
 * A sliding minimum of offset samples over a window, on one monotonic clock: what a lease clock
 * keeps of its own leases, and what `ProcessFrame` keeps of every task's. Not thread-safe.
 */
class SlidingMin {
  /** Samples of the window in arrival order, each smaller than every one after it. */
  private samples: { at: number; offset: number }[] = [];
  private head = 0;

  constructor(private readonly windowMs: number) {}

  add(at: number, offset: number): void {
    while (this.samples.length > this.head && this.samples[this.samples.length - 1]!.offset >= offset)
      this.samples.pop();
    this.samples.push({ at, offset });
    this.expire(at);
  }

  /** The least sample of the window ending `now` (the newest one is kept past it); undefined before any. */
  min(now: number): number | undefined {
    this.expire(now);
    return this.samples.length > this.head ? this.samples[this.head]!.offset : undefined;
  }

  clear(): void {
    this.samples = [];
    this.head = 0;
  }

  /** Drops samples older than the window, keeping the newest (the minimum is never unknown once seen). */
  private expire(now: number): void {
    const s = this.samples;
    while (s.length - this.head > 1 && s[this.head]!.at < now - this.windowMs) this.head++;
    if (this.head > 64 && this.head * 2 > s.length) {
      this.samples = s.slice(this.head);
      this.head = 0;
    }
  }
}

/**
 * The least offset every lease clock of one process has seen in the window: skew plus the least
 * transit of any partition's leases. The frontier's per-IP slots put leases of different partitions
 * a slot apart on the wall clock its instances share, and a start is late by its clock's offset
 * less the skew; per task, that is the task's own least transit, and those differ between
 * partitions by as much as a commit takes (tens to hundreds of ms under load), which is more than
 * the slot's margin: two partitions' starts on one address came 17–97 ms apart on a 100 ms gap
 * (issue #36's rolling-restart test, 8 partitions, two fetcher processes). Read through the floor,
 * every task of the process starts a lease at notBefore plus the same offset, and drops one that
 * arrives past its window by that offset too. Shared by the fetcher tasks of a process
 * (`ProcessorContext.inProcess`); on this process's monotonic clock; not thread-safe.
 */
export class ProcessFrame {
  private readonly least: SlidingMin;

  constructor(windowMs = OFFSET_WINDOW_MS) {
    this.least = new SlidingMin(windowMs);
  }

  observe(at: number, offset: number): void {
    this.least.add(at, offset);
  }

  /** The floor at `now`, undefined before any lease. */
  floor(now: number): number | undefined {
    return this.least.min(now);
  }
}

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
 * One clock per issuing frontier partition in a fetcher task (fetch requests are keyed by address,
 * so a task reads leases of many; the lease id names the issuer), and a newer owner epoch of that
 * partition (it moved, maybe to another machine) starts it afresh (`reset`). The clocks of one
 * process read through one `ProcessFrame`, so that leases of different partitions are started on
 * one offset.
 * Pure bookkeeping; not thread-safe.
 */
export class LeaseClock {
  private readonly own: SlidingMin;
  /** When the first lease since the start or the last reset arrived. */
  private since: number | undefined;
  /** Host → the offset its last reported result used, oldest first. */
  private readonly hosts = new Map<string, number>();

  constructor(
    /** This process's monotonic clock, in ms. */
    readonly now: () => number = () => performance.now(),
    windowMs = OFFSET_WINDOW_MS,
    /** The process's floor, when this clock is one of several fetcher tasks' of a process. */
    private readonly frame?: ProcessFrame,
  ) {
    this.own = new SlidingMin(windowMs);
  }

  /** Takes a lease issued at `issuedAt` (the frontier's clock) that arrived now. */
  observe(issuedAt: number): void {
    const at = this.now();
    this.since ??= at;
    this.own.add(at, at - issuedAt);
    this.frame?.observe(at, at - issuedAt);
  }

  /** Whether a lease has been seen since the start or the last reset. */
  get known(): boolean {
    return this.own.min(this.now()) !== undefined;
  }

  /**
   * This clock minus the frontier's: its skew plus the least transit of the window (0 before any
   * lease). With a process frame, its floor when this task's own offset is within
   * SHARED_FRAME_TOLERANCE_MS of it (the difference is transit); a task further above it reads
   * leases of a frontier whose clock is off the others' and keeps its own.
   */
  get offset(): number {
    const now = this.now();
    const own = this.own.min(now);
    if (own === undefined) return 0;
    const floor = this.frame?.floor(now);
    return floor !== undefined && floor <= own && own - floor <= SHARED_FRAME_TOLERANCE_MS ? floor : own;
  }

  /**
   * The offset a lease of `host` is judged late with: `offsetFor(host)`, except while this task is
   * new (SETTLE_MS since its first lease) and its own offset is further above the process floor than
   * SHARED_FRAME_TOLERANCE_MS: then the floor. Its first leases may have waited for its assignment,
   * so its own offset would start them late by that wait, on an address whose next slot is another
   * partition's; read on the floor they are dropped as late instead, and waiting on its own offset
   * (`offsetFor`) keeps them from starting early if its frontier's clock is the one that is off.
   */
  lateOffsetFor(host: string): number {
    const now = this.now();
    const own = this.own.min(now);
    const floor = this.frame?.floor(now);
    const fresh = this.since !== undefined && now - this.since < SETTLE_MS;
    if (own !== undefined && floor !== undefined && fresh && own - floor > SHARED_FRAME_TOLERANCE_MS) return floor;
    return this.offsetFor(host);
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

  /**
   * A lease of `host` was dropped unsent, no earlier than it was due: its next lease is timed on the
   * current offset. The report's offset kept a gap that has passed by then; kept longer, it times
   * every later lease of the host as far past its window as the frontier's clock stepped forward
   * since the report (a VM resumed, an NTP step), and each is dropped again (a CI run saw one host's
   * leases dropped so for 88 minutes after its VM was paused).
   */
  forget(host: string): void {
    this.hosts.delete(host);
  }

  /** `frontierMs` on this clock, with `offset`. */
  toLocal(frontierMs: number, offset = this.offset): number {
    return frontierMs + offset;
  }

  /** `localMs` of this clock on the frontier's, with `offset`. */
  toFrontier(localMs: number, offset = this.offset): number {
    return Math.round(localMs - offset);
  }

  /**
   * How far the wall clock that reads `wallNow` (this process's Date.now, read now) runs ahead of
   * the frontier's: the skew plus the least transit of the window, since `offset` is taken on the
   * monotonic clock. Undefined before any lease.
   */
  wallAheadMs(wallNow: number): number | undefined {
    return this.known ? wallNow - this.toFrontier(this.now()) : undefined;
  }

  /**
   * Forgets every sample: the leases now come from another frontier owner, maybe on another clock.
   * The hosts' report offsets stay: the new owner plans a host's next lease from the host's last
   * report, whichever owner's lease it answered and whatever clock it runs, so the next start must
   * add the offset that report subtracted. Forgotten, a lease of the old owner that waited in the
   * log (a restart) was reported with its long transit as offset, and the new owner's next lease
   * for the host started that much inside the gap (a SIGKILL e2e run: 1,758 ms after the end on a
   * 2 s Crawl-delay).
   */
  reset(): void {
    this.own.clear();
    this.since = undefined;
  }
}
