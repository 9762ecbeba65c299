import type { HostState } from '../../schemas/types.js';
import { AddressClock } from './address-clock.js';
import { HostAddresses, NO_ADDRESSES, type AddressLookup } from './host-addresses.js';
import { GAP_SAFETY_MS } from './politeness.js';

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
 * With P > 1 frontier tasks and no shared clock (Kafka) each task keeps the gap between its own
 * starts and its share of the concurrency (⌊concurrency / P⌋, the remainder to the first tasks in
 * the address's turn, at least one), and the address's limit for the whole crawl is kept where its
 * requests leave: fetch requests are keyed by address, so every lease of an address, whichever
 * task issued it, reaches one fetcher task and passes its process's wire gate (wire-gate.ts),
 * which spaces the sends by the gap and holds the requests in flight to the concurrency. A lease
 * the gate holds starts late, within its usual lease window; its result reports when it really
 * started, which pushes the task's next start there back (`release`). So an address serves one
 * start per gap whichever tasks have hosts on it, and a host alone on its address waits for its
 * own gap only. Until 2026-12-06 the tasks kept apart by time slots instead (one start per gap
 * + 330 ms slot, each task only its own slots): docs/FRONTIER.md, "Per-IP limit across partitions".
 */
export class IpLimiter {
  private readonly clock: AddressClock;
  private readonly waiting = new Map<string, Set<string>>();
  private readonly addresses: HostAddresses;

  /** The least time between two starts as the frontier counts it: the gap plus slack, none for no gap. */
  private readonly spacingMs: number;

  /** Tasks that share the concurrency out (1 with a shared clock: it keeps them together). */
  private readonly sharing: number;

  /** `lookup` finds a new host's address before its first lease; `share` shares the limit among P tasks. */
  constructor(
    private readonly concurrency: number,
    gapMs: number,
    lookup: AddressLookup = NO_ADDRESSES,
    private readonly share: IpShare = { partition: 0, partitions: 1 },
  ) {
    this.spacingMs = gapMs > 0 ? gapMs + GAP_SAFETY_MS : 0;
    this.clock = share.clock ?? new AddressClock(false);
    this.sharing = share.clock ? 1 : share.partitions;
    this.addresses = new HostAddresses(lookup);
  }

  /** How many leases this task may have in flight on `ip`: its share of the concurrency, at least one. */
  private concurrencyOn(ip: string): number {
    const p = this.sharing;
    if (p <= 1) return this.concurrency;
    const turn = (((this.share.partition - addressHash(ip)) % p) + p) % p;
    return Math.max(1, Math.floor(this.concurrency / p) + (turn < this.concurrency % p ? 1 : 0));
  }

  /**
   * When a lease to the host that may start at `due` (issued at `now`) is to start: the later of
   * the two; undefined when it may not now (the address's next start is later, or this task's
   * share of its concurrency is in flight). A host whose address is still being looked up may not
   * (it comes back through `due`); once known, the address is set in `state`. Hosts held back by
   * their address's limit are remembered as waiting on it.
   */
  tryAcquire(state: HostState, due: number, now = due): number | undefined {
    if (!this.addresses.resolved(state)) return undefined;
    const { ip, host } = state;
    if (ip === null) return due;
    const at = Math.max(due, now);
    const task = this.share.partition;
    if (this.clock.leases(ip) >= this.concurrencyOn(ip) || this.held(ip, task, at)) {
      let set = this.waiting.get(ip);
      if (!set) this.waiting.set(ip, (set = new Set()));
      set.add(host);
      this.clock.claim(ip, task, at);
      return undefined;
    }
    this.clock.unclaim(ip, task);
    this.clock.started(ip, at + this.spacingMs);
    return at;
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
      if (this.clock.leases(ip) < this.concurrencyOn(ip) && !this.held(ip, task, now)) {
        this.waiting.delete(ip);
        out.push({ hosts: [...set], at: now });
      }
    }
    return out;
  }
}

/** A small hash of an address, so that the concurrency's remainder of different addresses does not all go to one task. */
function addressHash(ip: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < ip.length; i++) h = Math.imul(h ^ ip.charCodeAt(i), 0x01000193);
  return (h >>> 0) % 65_521;
}
