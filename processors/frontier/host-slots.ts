import { CrawlError } from '../../core/errors.js';
import { HostHeap } from './host-heap.js';

/** A lease out for a host: the frontier forgets it when its result comes or it expires. */
export interface LeaseSlot {
  readonly host: string;
  readonly expiresAt: number;
}

/**
 * Which state each host of one frontier task is in, and the only place that changes it (the
 * queue states of Heritrix's WorkQueueFrontier). A host holding an active slot is in exactly one
 * of these states, and moves between them only through the named transitions below:
 *
 * - **scheduled**: in the heap, waiting for its eligible time (`schedule`, `wake`, `popDue`);
 * - **leased**: one request out (`lease`, then `release` when its result or expiry comes);
 * - **held**: its site is paused; out of the heap until the site's next control (`hold`, `resume`);
 * - **idle**: in none of those, for the length of one call (popped and being looked at, or waiting
 *   on the per-IP limit, which `wake`s it).
 *
 * Independently an active host may be **parked** (`park`, `unpark`): its robots.txt is
 * unavailable or it had too many connection errors; a parked host keeps its slot but does not
 * count against `activeHostSlots`, and its queued URLs count as waiting, not pending.
 *
 * Invariants, checked by every transition (a breach throws CS_INTERNAL and changes nothing):
 * 1. parked ⊆ active; 2. held ⊆ active; 3. leased ⊆ active; 4. scheduled ⊆ active;
 * 5. a leased host is out of the heap and not held; 6. a held host is out of the heap;
 * 7. a host holds at most one lease, and a lease id names one host;
 * 8. `backQueued` (URLs in back queues of this task) is never negative.
 * Only `deactivate` takes a host out of `active` (and out of every other state), never a leased one.
 *
 * The heap may hold stale entries (a host rescheduled earlier, or taken out): `popDue` skips
 * them, so a host is handed out at most once per `schedule`. Hosts are keys, not states: the
 * caller keeps each host's `HostState` and decides, from it, which transition applies.
 */
export class HostSlots {
  private readonly active = new Set<string>();
  private readonly parked = new Set<string>();
  /** Held hosts by site, and each held host's site. */
  private readonly heldBySite = new Map<string, Set<string>>();
  private readonly heldSite = new Map<string, string>();
  /** Each scheduled host's live heap time; heap entries at another time are stale. */
  private readonly scheduled = new Map<string, number>();
  private readonly heap = new HostHeap();
  private readonly leases = new Map<string, LeaseSlot>();
  private readonly leaseOf = new Map<string, string>();
  private queued = 0;

  /** Hosts holding an active slot (queued URLs, a robots.txt hop or a lease). Read-only view. */
  get activeHosts(): ReadonlySet<string> {
    return this.active;
  }

  get activeCount(): number {
    return this.active.size;
  }

  get parkedCount(): number {
    return this.parked.size;
  }

  /** Hosts waiting in the heap for their time. */
  get scheduledCount(): number {
    return this.scheduled.size;
  }

  get leaseCount(): number {
    return this.leases.size;
  }

  /** URLs in the back queues of this task's hosts. */
  get backQueued(): number {
    return this.queued;
  }

  /** Slots free for hosts from the front queues: parked hosts give theirs up while parked. */
  freeSlots(limit: number): number {
    return limit - (this.active.size - this.parked.size);
  }

  isActive(host: string): boolean {
    return this.active.has(host);
  }

  isParked(host: string): boolean {
    return this.parked.has(host);
  }

  /** Whether `host` is held for its paused site `site`. */
  isHeld(host: string, site: string): boolean {
    return this.heldBySite.get(site)?.has(host) === true;
  }

  isLeased(host: string): boolean {
    return this.leaseOf.has(host);
  }

  isScheduled(host: string): boolean {
    return this.scheduled.has(host);
  }

  /** Parked hosts, and held hosts that are not parked: each once. */
  *waitingHosts(): IterableIterator<string> {
    yield* this.parked;
    for (const host of this.heldSite.keys()) if (!this.parked.has(host)) yield host;
  }

  /** Takes an active slot for `host`; true when it had none. Idempotent. */
  activate(host: string): boolean {
    if (this.active.has(host)) return false;
    this.active.add(host);
    return true;
  }

  /**
   * Gives `host`'s slot back and drops it from every other state. Throws for a leased host (its
   * result or expiry must come first). Idempotent for an inactive host.
   */
  deactivate(host: string): void {
    if (this.leaseOf.has(host)) this.illegal('deactivate', host, 'it holds a lease');
    this.active.delete(host);
    this.parked.delete(host);
    this.scheduled.delete(host);
    this.unhold(host);
  }

  /** Parks an active host (idempotent). Throws for a host without a slot. */
  park(host: string): void {
    if (!this.active.has(host)) this.illegal('park', host, 'it holds no active slot');
    this.parked.add(host);
  }

  /** The host is no longer parked; a no-op when it was not. */
  unpark(host: string): void {
    this.parked.delete(host);
  }

  /**
   * Puts an active host in the heap to be handed out at `at` (or earlier, when it was already
   * scheduled earlier). A held host stays held (its site's next control schedules it): returns
   * false then. Throws for a host without a slot or leased.
   */
  schedule(host: string, at: number): boolean {
    if (!this.active.has(host)) this.illegal('schedule', host, 'it holds no active slot');
    if (this.leaseOf.has(host)) this.illegal('schedule', host, 'it holds a lease');
    if (this.heldSite.has(host)) return false;
    this.put(host, at);
    return true;
  }

  /**
   * Schedules hosts another part of the frontier noted as waiting (the per-IP limit): those that
   * since left their slot, took a lease or were held are left alone. Returns how many it scheduled.
   */
  wake(hosts: Iterable<string>, at: number): number {
    let n = 0;
    for (const host of hosts) {
      if (!this.active.has(host) || this.leaseOf.has(host) || this.heldSite.has(host)) continue;
      this.put(host, at);
      n++;
    }
    return n;
  }

  /** The earliest scheduled time, or undefined when no host is scheduled. */
  peekTime(): number | undefined {
    this.dropStale();
    return this.heap.peekTime();
  }

  /**
   * Takes the earliest scheduled host out of the heap when its time is at or before `horizon`;
   * the host is then idle until the caller leases, holds, schedules or deactivates it.
   */
  popDue(horizon: number): { host: string; at: number } | undefined {
    this.dropStale();
    const top = this.heap.peekTime();
    if (top === undefined || top > horizon) return undefined;
    const item = this.heap.pop()!;
    this.scheduled.delete(item.host);
    return item;
  }

  /** Holds an idle active host of paused `site` until `resume(site)`. Idempotent. */
  hold(host: string, site: string): void {
    if (!this.active.has(host)) this.illegal('hold', host, 'it holds no active slot');
    if (this.leaseOf.has(host)) this.illegal('hold', host, 'it holds a lease');
    if (this.scheduled.has(host)) this.illegal('hold', host, 'it is scheduled');
    const was = this.heldSite.get(host);
    if (was !== undefined && was !== site) this.illegal('hold', host, `it is held for site ${was}`);
    let set = this.heldBySite.get(site);
    if (!set) this.heldBySite.set(site, (set = new Set()));
    set.add(host);
    this.heldSite.set(host, site);
  }

  /** Schedules every host held for `site` at `at` (the control decides their fate); returns them. */
  resume(site: string, at: number): string[] {
    const hosts = [...(this.heldBySite.get(site) ?? [])];
    for (const host of hosts) this.unhold(host);
    for (const host of hosts) this.put(host, at);
    return hosts;
  }

  /** Gives an idle active host the lease `leaseId`. Throws for a scheduled, held or leased host, or a known id. */
  lease(host: string, leaseId: string, expiresAt: number): void {
    if (!this.active.has(host)) this.illegal('lease', host, 'it holds no active slot');
    if (this.leaseOf.has(host)) this.illegal('lease', host, `it holds lease ${this.leaseOf.get(host)}`);
    if (this.scheduled.has(host)) this.illegal('lease', host, 'it is scheduled');
    if (this.heldSite.has(host)) this.illegal('lease', host, 'it is held');
    if (this.leases.has(leaseId)) this.illegal('lease', host, `lease id ${leaseId} is in use`);
    this.leases.set(leaseId, { host, expiresAt });
    this.leaseOf.set(host, leaseId);
  }

  /** Ends lease `leaseId` (its result or expiry came); returns its host, undefined for an unknown id. */
  release(leaseId: string): string | undefined {
    const slot = this.leases.get(leaseId);
    if (!slot) return undefined;
    this.leases.delete(leaseId);
    this.leaseOf.delete(slot.host);
    return slot.host;
  }

  /** Leases whose expiry is at or before `now`, as [leaseId, slot]; a snapshot, safe to release while iterating. */
  expired(now: number): [string, LeaseSlot][] {
    const out: [string, LeaseSlot][] = [];
    for (const entry of this.leases) if (entry[1].expiresAt <= now) out.push(entry);
    return out;
  }

  /** `n` URLs joined the back queues. */
  queuedMore(n: number): void {
    if (!(n >= 0)) this.illegal('queuedMore', String(n), 'a count is not negative');
    this.queued += n;
  }

  /** `n` URLs left the back queues. Throws when more would leave than are queued. */
  dequeued(n: number): void {
    if (!(n >= 0) || n > this.queued) this.illegal('dequeued', String(n), `${this.queued} are queued`);
    this.queued -= n;
  }

  private put(host: string, at: number): void {
    const was = this.scheduled.get(host);
    if (was !== undefined && was <= at) return;
    this.scheduled.set(host, at);
    this.heap.push(host, at);
  }

  private unhold(host: string): void {
    const site = this.heldSite.get(host);
    if (site === undefined) return;
    this.heldSite.delete(host);
    const set = this.heldBySite.get(site)!;
    set.delete(host);
    if (set.size === 0) this.heldBySite.delete(site);
  }

  /** Pops heap entries that are no longer their host's live schedule. */
  private dropStale(): void {
    for (;;) {
      const top = this.heap.peek();
      if (top === undefined || this.scheduled.get(top.host) === top.at) return;
      this.heap.pop();
    }
  }

  private illegal(transition: string, host: string, why: string): never {
    throw new CrawlError('CS_INTERNAL', `frontier host slots: ${transition}(${host}) refused: ${why}`);
  }
}
