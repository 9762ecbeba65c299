import type { HostState } from '../../schemas/types.js';

/**
 * Resolves a host name to the address the fetcher will connect to, or null when it has none.
 * May answer at once (a `--resolve` rule, a cache) or later; must never throw or reject.
 */
export type AddressLookup = (host: string) => string | null | Promise<string | null>;

/** A lookup that knows no address: every host is fetched without a per-IP limit (tests of other rules). */
export const NO_ADDRESSES: AddressLookup = () => null;

/**
 * The address of each host before its first lease, so the per-IP limit covers that lease too
 * (Heritrix resolves a host as a prerequisite of its first fetch in the same way). A host whose
 * address is not known yet (none in its state) is looked up once and waits out of the schedule
 * until the answer; `answered()` hands back the hosts to put in it again. After a fetch the
 * address the fetcher connected to replaces the looked-up one. A host with no address (lookup
 * failed) goes ahead without the per-IP limit: the fetch fails on its own DNS error.
 * In memory only: after a restart hosts without a stored address are looked up again.
 */
export class HostAddresses {
  private readonly pending = new Set<string>();
  private readonly answers = new Map<string, string | null>();
  private readonly ready: string[] = [];

  constructor(private readonly lookup: AddressLookup) {}

  /**
   * Whether the per-IP limit can be applied to a lease of this host now: its address is known
   * (set in `state`, which the caller must then store) or known not to exist. Otherwise starts the
   * lookup, if not running, and answers false.
   */
  resolved(state: HostState): boolean {
    if (state.ip !== null) return true;
    const answer = this.answers.get(state.host);
    if (answer !== undefined) {
      state.ip = answer;
      return true;
    }
    if (this.pending.has(state.host)) return false;
    let found: string | null | Promise<string | null>;
    try {
      found = this.lookup(state.host);
    } catch {
      found = null;
    }
    if (!(found instanceof Promise)) {
      this.answers.set(state.host, found);
      state.ip = found;
      return true;
    }
    this.pending.add(state.host);
    const host = state.host;
    found.then(
      (ip) => this.answer(host, ip),
      () => this.answer(host, null),
    );
    return false;
  }

  /** Hosts whose lookup finished since the last call: they may be scheduled again. */
  answered(): string[] {
    return this.ready.length === 0 ? [] : this.ready.splice(0);
  }

  /** A host left the active set: its answer is looked up again if it comes back without an address. */
  forget(host: string): void {
    this.answers.delete(host);
  }

  private answer(host: string, ip: string | null): void {
    this.pending.delete(host);
    this.answers.set(host, ip);
    this.ready.push(host);
  }
}
