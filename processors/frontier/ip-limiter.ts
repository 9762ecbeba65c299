import type { HostState } from '../../schemas/types.js';
import { AddressClock } from './address-clock.js';
import { DeliveryLead } from './delivery-lead.js';
import { HostAddresses, NO_ADDRESSES, type AddressLookup } from './host-addresses.js';
import { GAP_SAFETY_MS } from './politeness.js';

/**
 * With Kafka's slots (frontier tasks sharing an address without a shared clock), what a slot
 * adds to the spacing: a lease there must start within half of it (its notAfter is its notBefore
 * plus that), and the other half covers a start reaching the wire late. 150 ms each: a fetcher's
 * event loop under load wakes a waiting lease tens of ms late, and with half of 100 ms most leases
 * planned ahead were dropped for it (docs/BENCHMARKS.md, "Tenth sitting").
 */
export const IP_START_WINDOW_MS = 300;

/**
 * This task's place among the frontier tasks sharing every address (one per frontier partition),
 * and, when the engine runs them all in this process, the clock they share (address-clock.ts).
 */
export interface IpShare {
  readonly partition: number;
  readonly partitions: number;
  readonly clock?: AddressClock;
}

/**
 * The looser per-address limit of one frontier task: at most `concurrency` leases in flight per
 * resolved IP and at least `gapMs` between two lease starts there, so many small sites on one
 * shared-hosting address are not hit at once. A lease's start is its notBefore plus a small
 * slack; a fetch that started later than that pushes the address's next start back (`release`).
 * With more than one lease in flight the next may be out before the previous one has started;
 * the plan does not have to allow for a late start, because every lease of an address leaves
 * through one fetcher's wire gate (wire-gate.ts), which spaces the sends by the gap from when each
 * one really left. So overlapping leases get the usual lease window, and the next start is
 * planned one spacing after the last (a start window planned after each, as before, held every
 * shared address to about one start a lease round trip: BENCHMARKS.md, "Real pages … Eighth sitting").
 * A host is looked up before its first lease (host-addresses.ts), so that lease counts too.
 * In memory: after a restart every address starts empty, which is safe because every host
 * already waits a full gap of its own.
 *
 * With P > 1 frontier tasks in one process sharing a clock (`share.clock`, the embedded engine)
 * the limit is exact and costs nothing: every task reads and moves the same per-address counts,
 * and a task takes an address only in its turn among the tasks waiting for it.
 *
 * With P > 1 frontier tasks and no shared clock (Kafka) the limit holds for the whole crawl, without the tasks
 * talking: time is cut into slots of the gap plus IP_START_WINDOW_MS, the same for every task
 * (the wall clock, as leases assume), and each slot of an address belongs to one task in turn
 * (slot index plus a hash of the address, mod P). A task starts leases on the address only at
 * the start of its own slots, each within IP_START_WINDOW_MS, so two starts on the address by
 * different tasks are a full gap apart (the window is half of IP_START_WINDOW_MS: the rest covers
 * a fetch reaching the wire late); the concurrency is shared out (each task gets its
 * share of `concurrency`, at least one). The cost: an address gets at most one start per slot
 * (gap + slack + IP_START_WINDOW_MS) whatever P, and a task's slots go unused while it has no host
 * there. A lease reaches its fetcher only after the frontier's commit, so starts are planned no
 * sooner than a delivery lead learnt from the leases that came late (delivery-lead.ts).
 */
export class IpLimiter {
  private readonly clock: AddressClock;
  private readonly waiting = new Map<string, Set<string>>();
  private readonly addresses: HostAddresses;
  /** With slots: how far ahead of now a start is planned, so the lease arrives within its window. */
  private readonly lead = new DeliveryLead();

  /** The least time between two starts as the frontier counts it: the gap plus slack, none for no gap. */
  private readonly spacingMs: number;

  /** Slot length when the address is shared by several tasks without a shared clock; 0: not slotted. */
  private readonly slotMs: number;
  /** Tasks whose limits are kept apart by slots (1 with a shared clock: it keeps them together). */
  private readonly slotted: number;

  /** `lookup` finds a new host's address before its first lease; `share` slots the limit among P tasks. */
  constructor(
    private readonly concurrency: number,
    gapMs: number,
    lookup: AddressLookup = NO_ADDRESSES,
    private readonly share: IpShare = { partition: 0, partitions: 1 },
  ) {
    this.spacingMs = gapMs > 0 ? gapMs + GAP_SAFETY_MS : 0;
    this.clock = share.clock ?? new AddressClock(false);
    this.slotted = share.clock ? 1 : share.partitions;
    this.slotMs = this.slotted > 1 && this.spacingMs > 0 ? this.spacingMs + IP_START_WINDOW_MS : 0;
    this.addresses = new HostAddresses(lookup);
  }

  /** How many leases this task may have in flight on `ip`: its share of the concurrency, at least one. */
  private concurrencyOn(ip: string): number {
    const p = this.slotted;
    if (p <= 1) return this.concurrency;
    const turn = (((this.share.partition - addressHash(ip)) % p) + p) % p;
    return Math.max(1, Math.floor(this.concurrency / p) + (turn < this.concurrency % p ? 1 : 0));
  }

  /** The start of this task's first slot on `ip` at or after `t`. */
  private slotAt(ip: string, t: number): number {
    const p = this.slotted;
    let k = Math.ceil(t / this.slotMs);
    const owner = (((this.share.partition - addressHash(ip)) % p) + p) % p;
    k += (((owner - (k % p)) % p) + p) % p;
    return k * this.slotMs;
  }

  /**
   * When a lease to the host that may start at `due` (issued at `now`) is to start: `due`, or with
   * several tasks sharing the address the start of this task's next slot there (within one round
   * of slots) no sooner than the delivery lead after `now`;
   * undefined when it may not now. A host whose address is still being looked up may not (it
   * comes back through `due`); once known, the address is set in `state`. Hosts held back by
   * their address's limit are remembered as waiting on it.
   */
  tryAcquire(state: HostState, due: number, now = due): number | undefined {
    if (!this.addresses.resolved(state)) return undefined;
    const { ip, host } = state;
    if (ip === null) return due;
    const at = Math.max(due, this.earliest(ip, now));
    const task = this.share.partition;
    if (this.clock.leases(ip) >= this.concurrencyOn(ip) || this.held(ip, task, at)) {
      let set = this.waiting.get(ip);
      if (!set) this.waiting.set(ip, (set = new Set()));
      set.add(host);
      this.clock.claim(ip, task, at);
      return undefined;
    }
    const start = this.slotMs > 0 && ip !== '' ? this.slotAt(ip, at) : at;
    this.clock.unclaim(ip, task);
    this.clock.started(ip, start + this.spacingMs);
    return start;
  }

  /**
   * Whether a start at `at` on `ip` waits, room for a lease aside: the next start planned there
   * is later (with a gap only: with none a start planned ahead, in the dispatch's look-ahead, held
   * every host due sooner behind it, and one address served a few starts a lease round trip), or
   * another task sharing the clock has waited for the address longer.
   */
  private held(ip: string, task: number, at: number): boolean {
    return (this.spacingMs > 0 && this.clock.next(ip) > at) || !this.clock.first(ip, task, at);
  }

  /**
   * The window a lease to the host must start in: with Kafka's slots, the fixed half slot (every
   * task must agree where a slot ends; a fetch reaches the wire some time after the fetcher
   * checked its window, tens of ms on a loaded machine, which the other half absorbs); undefined
   * otherwise: the usual lease window, the wire gate keeping the gap.
   */
  startWindow(state: HostState): number | undefined {
    return state.ip !== null && state.ip !== '' ? this.slotWindowMs : undefined;
  }

  /** The start window a lease to a shared address gets (ms): the fixed half slot with Kafka's slots, else 0 (none). */
  get currentWindowMs(): number {
    return this.slotWindowMs ?? 0;
  }

  private get slotWindowMs(): number | undefined {
    return this.slotMs > 0 ? IP_START_WINDOW_MS / 2 : undefined;
  }

  /**
   * The earliest start a lease to `ip` issued at `now` can be given: with slots, `now` plus the
   * delivery lead (a slot's start window is too short to absorb the lease's way to its fetcher);
   * else `now`.
   */
  private earliest(ip: string, now: number): number {
    return this.slotMs > 0 && ip !== '' ? now + this.lead.at(now) : now;
  }

  /** With slots, how far ahead of its issue a lease is planned to start (ms); else 0. */
  leadMs(now: number): number {
    return this.slotMs > 0 ? this.lead.at(now) : 0;
  }

  /**
   * A lease issued at `issuedAt` was dropped by its fetcher at `arrivedAt` as past its window (both
   * on this task's clock). With slots, later leases are planned that much further ahead (see
   * delivery-lead.ts); without, the lease window is the usual ten seconds and there is nothing to learn.
   */
  arrivedLate(issuedAt: number, notAfter: number, arrivedAt: number, now: number): void {
    // found late by less than a window: it may have waited in its fetcher and woken late (a busy
    // event loop), which says nothing of its way there
    if (this.slotMs > 0 && arrivedAt - notAfter > IP_START_WINDOW_MS) this.lead.late(issuedAt, arrivedAt, now);
  }

  /** Records a lease already out (found at init). */
  holdExisting(ip: string | null): void {
    if (ip !== null) this.clock.hold(ip);
  }

  /**
   * A lease to `ip` ended; its fetch started at `startedAt` (0: it never did, or the frontier cannot
   * tell). Returns the hosts that were waiting on that address and the time they may be tried
   * again; the caller puts them back in its schedule.
   */
  release(ip: string | null, startedAt: number): { hosts: string[]; at: number } {
    if (ip === null) return { hosts: [], at: 0 };
    this.clock.ended(ip, startedAt > 0 ? startedAt + this.spacingMs : undefined);
    const set = this.waiting.get(ip);
    this.waiting.delete(ip);
    return { hosts: set ? [...set] : [], at: this.clock.next(ip) };
  }

  /** A host left the frontier's active set (its looked-up address may be stale when it returns). */
  forget(host: string): void {
    this.addresses.forget(host);
  }

  /** Hosts waiting on an address that has room again at `now` (the gap alone held them), or whose lookup answered. */
  due(now: number): { hosts: string[]; at: number }[] {
    const out: { hosts: string[]; at: number }[] = [];
    const answered = this.addresses.answered();
    if (answered.length > 0) out.push({ hosts: answered, at: now });
    const task = this.share.partition;
    this.clock.sweep(now);
    for (const [ip, set] of this.waiting) {
      // still waiting: the claim stays live while another task holds the address
      this.clock.claim(ip, task, now);
      if (this.clock.leases(ip) < this.concurrencyOn(ip) && !this.held(ip, task, this.earliest(ip, now))) {
        this.waiting.delete(ip);
        out.push({ hosts: [...set], at: now });
      }
    }
    return out;
  }
}

/** A small hash of an address, so that the slots of different addresses do not all start with one task. */
function addressHash(ip: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < ip.length; i++) h = Math.imul(h ^ ip.charCodeAt(i), 0x01000193);
  return (h >>> 0) % 65_521;
}
