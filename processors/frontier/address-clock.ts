/** A claim on an address not renewed for this long is dropped: its task no longer waits there. */
export const CLAIM_TTL_MS = 1_000;

interface Claim {
  /** When the task's wait for the address began: the queue's order. */
  readonly since: number;
  /** When the task last said it still waits. */
  seen: number;
}

/**
 * What the frontier tasks of one process know of each address together: the leases in flight
 * there, the earliest next start, and, when it is shared, which task has waited longest for it.
 * One clock per task gives each task the limit alone (the Kafka engine, where tasks move between
 * processes); one clock shared by every task (`ProcessorContext.coLocated`, the embedded engine)
 * makes the per-IP limit exact across partitions, as if one task held every host. Tasks take a
 * shared address in the order they began to wait for it (`claim`, `first`), so one task's
 * punctuator running first does not starve the others' hosts on it. In memory: after a restart
 * every address starts empty, which is safe because every host already waits a full gap of its
 * own. Not thread-safe: the tasks sharing it run on one event loop.
 */
export class AddressClock {
  private readonly inFlight = new Map<string, number>();
  private readonly nextStart = new Map<string, number>();
  private readonly claims = new Map<string, Map<number, Claim>>();
  private sweptAt = 0;

  /** `shared`: several tasks use this clock, so they queue for an address; alone, a task is always first. */
  constructor(readonly shared: boolean) {}

  /** Leases in flight on `ip`, from every task using the clock. */
  leases(ip: string): number {
    return this.inFlight.get(ip) ?? 0;
  }

  /** The earliest start of the next lease on `ip` (0: any time). */
  next(ip: string): number {
    return this.nextStart.get(ip) ?? 0;
  }

  /** A lease on `ip` was issued; the next may start at `next` at the earliest. */
  started(ip: string, next: number): void {
    this.inFlight.set(ip, this.leases(ip) + 1);
    this.nextStart.set(ip, next);
  }

  /** A lease on `ip` was found out at a task's opening. */
  hold(ip: string): void {
    this.inFlight.set(ip, this.leases(ip) + 1);
  }

  /**
   * A lease on `ip` ended: `next` is its reported start plus the spacing, undefined when it did not
   * say when it started (it expired, or was dropped unsent). The next start is pushed back to
   * `next` if that is later: a fetch that started late keeps its gap too.
   */
  ended(ip: string, next: number | undefined): void {
    if (next !== undefined && next > this.next(ip)) this.nextStart.set(ip, next);
    const n = this.leases(ip) - 1;
    if (n > 0) this.inFlight.set(ip, n);
    else this.inFlight.delete(ip);
  }

  /** Task `task` waits for `ip` at `now`: it joins the queue (from its first call) or says it still waits. */
  claim(ip: string, task: number, now: number): void {
    if (!this.shared) return;
    let queue = this.claims.get(ip);
    if (!queue) this.claims.set(ip, (queue = new Map()));
    const claim = queue.get(task);
    if (claim) claim.seen = now;
    else queue.set(task, { since: now, seen: now });
  }

  /**
   * Whether `task` may take `ip` at `now` as far as the queue goes: no other task's live claim
   * began before its own (before `now` if it has none; ties go to the lower task number).
   */
  first(ip: string, task: number, now: number): boolean {
    const queue = this.claims.get(ip);
    if (!queue) return true;
    const mine = queue.get(task)?.since ?? now;
    for (const [other, claim] of queue) {
      if (other === task) continue;
      if (now - claim.seen > CLAIM_TTL_MS) {
        queue.delete(other);
        continue;
      }
      if (claim.since < mine || (claim.since === mine && other < task)) return false;
    }
    return true;
  }

  /** `task` took `ip`: its place in the queue ends (a host of it still waiting claims again). */
  unclaim(ip: string, task: number): void {
    const queue = this.claims.get(ip);
    if (!queue) return;
    queue.delete(task);
    if (queue.size === 0) this.claims.delete(ip);
  }

  /** Drops claims not renewed for CLAIM_TTL_MS (at most once a second): an address nobody waits for keeps none. */
  sweep(now: number): void {
    if (!this.shared || now - this.sweptAt < CLAIM_TTL_MS) return;
    this.sweptAt = now;
    for (const [ip, queue] of this.claims) {
      for (const [task, claim] of queue) if (now - claim.seen > CLAIM_TTL_MS) queue.delete(task);
      if (queue.size === 0) this.claims.delete(ip);
    }
  }
}
