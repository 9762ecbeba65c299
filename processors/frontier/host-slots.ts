import { CrawlError } from '../../core/errors.js';
import { HostHeap } from './host-heap.js';

/** A lease out for a host: the frontier forgets it when its result comes or it expires. */
export interface LeaseSlot {
  readonly host: string;
  readonly expiresAt: number;
}

/** One active host's place: its live heap time, its lease, the paused site it is held for. */
interface Slot {
  at: number | undefined;
  leaseId: string | undefined;
  heldSite: string | undefined;
}

/** The hosts holding an active slot, read-only. */
export interface ActiveHosts extends Iterable<string> {
  readonly size: number;
  has(host: string): boolean;
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
  /** Every active host's slot: the map's keys are `active`. */
  private readonly slots = new Map<string, Slot>();
  private readonly parked = new Set<string>();
  /** Held hosts by site. */
  private readonly heldBySite = new Map<string, Set<string>>();
  private readonly heap = new HostHeap();
  private readonly leases = new Map<string, LeaseSlot>();
  private scheduledN = 0;
  private queued = 0;
  private readonly activeView: ActiveHosts = viewOf(this.slots);

  /** Hosts holding an active slot (queued URLs, a robots.txt hop or a lease). Read-only view. */
  get activeHosts(): ActiveHosts {
    return this.activeView;
  }

  get activeCount(): number {
    return this.slots.size;
  }

  get parkedCount(): number {
    return this.parked.size;
  }

  /** Hosts waiting in the heap for their time. */
  get scheduledCount(): number {
    return this.scheduledN;
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
    return limit - (this.slots.size - this.parked.size);
  }

  isActive(host: string): boolean {
    return this.slots.has(host);
  }

  isParked(host: string): boolean {
    return this.parked.has(host);
  }

  /** Whether `host` is held for its paused site `site`. */
  isHeld(host: string, site: string): boolean {
    return this.slots.get(host)?.heldSite === site;
  }

  isLeased(host: string): boolean {
    return this.slots.get(host)?.leaseId !== undefined;
  }

  isScheduled(host: string): boolean {
    return this.slots.get(host)?.at !== undefined;
  }

  /** Parked hosts, and held hosts that are not parked: each once. */
  *waitingHosts(): IterableIterator<string> {
    yield* this.parked;
    for (const hosts of this.heldBySite.values()) for (const host of hosts) if (!this.parked.has(host)) yield host;
  }

  /** Takes an active slot for `host`; true when it had none. Idempotent. */
  activate(host: string): boolean {
    if (this.slots.has(host)) return false;
    this.slots.set(host, { at: undefined, leaseId: undefined, heldSite: undefined });
    return true;
  }

  /**
   * Gives `host`'s slot back and drops it from every other state. Throws for a leased host (its
   * result or expiry must come first). Idempotent for an inactive host.
   */
  deactivate(host: string): void {
    const slot = this.slots.get(host);
    if (!slot) return;
    if (slot.leaseId !== undefined) this.illegal('deactivate', host, 'it holds a lease');
    if (slot.at !== undefined) this.scheduledN--;
    this.unhold(host, slot);
    this.slots.delete(host);
    this.parked.delete(host);
  }

  /** Parks an active host (idempotent). Throws for a host without a slot. */
  park(host: string): void {
    if (!this.slots.has(host)) this.illegal('park', host, 'it holds no active slot');
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
    const slot = this.slots.get(host);
    if (!slot) return this.illegal('schedule', host, 'it holds no active slot');
    if (slot.leaseId !== undefined) this.illegal('schedule', host, 'it holds a lease');
    if (slot.heldSite !== undefined) return false;
    this.put(host, slot, at);
    return true;
  }

  /**
   * Schedules hosts another part of the frontier noted as waiting (the per-IP limit): those that
   * since left their slot, took a lease or were held are left alone. Returns how many it scheduled.
   */
  wake(hosts: Iterable<string>, at: number): number {
    let n = 0;
    for (const host of hosts) {
      const slot = this.slots.get(host);
      if (!slot || slot.leaseId !== undefined || slot.heldSite !== undefined) continue;
      this.put(host, slot, at);
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
    const slot = this.dropStale();
    const top = this.heap.peekTime();
    if (top === undefined || top > horizon) return undefined;
    const item = this.heap.pop()!;
    slot!.at = undefined;
    this.scheduledN--;
    return item;
  }

  /** Holds an idle active host of paused `site` until `resume(site)`. Idempotent. */
  hold(host: string, site: string): void {
    const slot = this.slots.get(host);
    if (!slot) return this.illegal('hold', host, 'it holds no active slot');
    if (slot.leaseId !== undefined) this.illegal('hold', host, 'it holds a lease');
    if (slot.at !== undefined) this.illegal('hold', host, 'it is scheduled');
    if (slot.heldSite !== undefined && slot.heldSite !== site)
      this.illegal('hold', host, `it is held for site ${slot.heldSite}`);
    let set = this.heldBySite.get(site);
    if (!set) this.heldBySite.set(site, (set = new Set()));
    set.add(host);
    slot.heldSite = site;
  }

  /** Schedules every host held for `site` at `at` (the control decides their fate); returns them. */
  resume(site: string, at: number): string[] {
    const hosts = [...(this.heldBySite.get(site) ?? [])];
    this.heldBySite.delete(site);
    for (const host of hosts) {
      const slot = this.slots.get(host)!;
      slot.heldSite = undefined;
      this.put(host, slot, at);
    }
    return hosts;
  }

  /** Gives an idle active host the lease `leaseId`. Throws for a scheduled, held or leased host, or a known id. */
  lease(host: string, leaseId: string, expiresAt: number): void {
    const slot = this.slots.get(host);
    if (!slot) return this.illegal('lease', host, 'it holds no active slot');
    if (slot.leaseId !== undefined) this.illegal('lease', host, `it holds lease ${slot.leaseId}`);
    if (slot.at !== undefined) this.illegal('lease', host, 'it is scheduled');
    if (slot.heldSite !== undefined) this.illegal('lease', host, 'it is held');
    if (this.leases.has(leaseId)) this.illegal('lease', host, `lease id ${leaseId} is in use`);
    this.leases.set(leaseId, { host, expiresAt });
    slot.leaseId = leaseId;
  }

  /** Ends lease `leaseId` (its result or expiry came); returns its host, undefined for an unknown id. */
  release(leaseId: string): string | undefined {
    const lease = this.leases.get(leaseId);
    if (!lease) return undefined;
    this.leases.delete(leaseId);
    this.slots.get(lease.host)!.leaseId = undefined;
    return lease.host;
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

  private put(host: string, slot: Slot, at: number): void {
    if (slot.at !== undefined) {
      if (slot.at <= at) return;
    } else this.scheduledN++;
    slot.at = at;
    this.heap.push(host, at);
  }

  private unhold(host: string, slot: Slot): void {
    const site = slot.heldSite;
    if (site === undefined) return;
    slot.heldSite = undefined;
    const set = this.heldBySite.get(site)!;
    set.delete(host);
    if (set.size === 0) this.heldBySite.delete(site);
  }

  /** Pops heap entries that are no longer their host's live schedule; returns the top entry's slot. */
  private dropStale(): Slot | undefined {
    for (;;) {
      const top = this.heap.peek();
      if (top === undefined) return undefined;
      const slot = this.slots.get(top.host);
      if (slot !== undefined && slot.at === top.at) return slot;
      this.heap.pop();
    }
  }

  private illegal(transition: string, host: string, why: string): never {
    throw new CrawlError('CS_INTERNAL', `frontier host slots: ${transition}(${host}) refused: ${why}`);
  }
}

function viewOf(slots: ReadonlyMap<string, Slot>): ActiveHosts {
  return {
    has: (host) => slots.has(host),
    get size() {
      return slots.size;
    },
    [Symbol.iterator]: () => slots.keys(),
  };
}
