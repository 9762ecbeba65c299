import { GAP_SAFETY_MS } from './politeness.js';

/**
 * The looser per-address limit of one frontier task: at most `concurrency` leases in flight per
 * resolved IP and at least `gapMs` between two lease starts there, so many small sites on one
 * shared-hosting address are not hit at once. A lease's start is its notBefore plus a small
 * slack; a fetch that started later than that pushes the address's next start back (`release`).
 * Hosts are looked up before their first lease (host-addresses.ts), so that lease counts too.
 * In memory: after a restart every address starts empty, which is safe because every host
 * already waits a full gap of its own.
 */
export class IpLimiter {
  private readonly inFlight = new Map<string, number>();
  private readonly nextStart = new Map<string, number>();
  private readonly waiting = new Map<string, Set<string>>();

  /** The least time between two starts as the frontier counts it: the gap plus slack, none for no gap. */
  private readonly spacingMs: number;

  constructor(
    private readonly concurrency: number,
    gapMs: number,
  ) {
    this.spacingMs = gapMs > 0 ? gapMs + GAP_SAFETY_MS : 0;
  }

  /** Whether a lease to `ip` may start at `at` now; hosts that may not are remembered as waiting. */
  tryAcquire(ip: string | null, host: string, at: number): boolean {
    if (ip === null) return true;
    if ((this.inFlight.get(ip) ?? 0) >= this.concurrency || (this.nextStart.get(ip) ?? 0) > at) {
      let set = this.waiting.get(ip);
      if (!set) this.waiting.set(ip, (set = new Set()));
      set.add(host);
      return false;
    }
    this.inFlight.set(ip, (this.inFlight.get(ip) ?? 0) + 1);
    this.nextStart.set(ip, at + this.spacingMs);
    return true;
  }

  /** Records a lease already out (found at init). */
  holdExisting(ip: string | null): void {
    if (ip !== null) this.inFlight.set(ip, (this.inFlight.get(ip) ?? 0) + 1);
  }

  /**
   * A lease to `ip` ended; its fetch started at `startedAt` (0: it never did). Returns the hosts that were waiting on that address and the time they
   * may be tried again; the caller puts them back in its schedule.
   */
  release(ip: string | null, startedAt: number): { hosts: string[]; at: number } {
    if (ip === null) return { hosts: [], at: 0 };
    const next = startedAt + this.spacingMs;
    if (next > (this.nextStart.get(ip) ?? 0)) this.nextStart.set(ip, next);
    const n = (this.inFlight.get(ip) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(ip);
    else this.inFlight.set(ip, n);
    const set = this.waiting.get(ip);
    this.waiting.delete(ip);
    return { hosts: set ? [...set] : [], at: this.nextStart.get(ip) ?? 0 };
  }

  /** Hosts waiting on an address that has room again at `now` (the gap alone held them). */
  due(now: number): { hosts: string[]; at: number }[] {
    const out: { hosts: string[]; at: number }[] = [];
    for (const [ip, set] of this.waiting) {
      if ((this.inFlight.get(ip) ?? 0) < this.concurrency && (this.nextStart.get(ip) ?? 0) <= now) {
        this.waiting.delete(ip);
        out.push({ hosts: [...set], at: now });
      }
    }
    return out;
  }
}
