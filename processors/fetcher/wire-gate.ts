/** Margin added to the per-IP gap at the wire, for the event-loop lag between the gate and the socket. */
export const WIRE_GATE_MARGIN_MS = 10;

/** Entries kept before the gate forgets addresses whose next start has passed. */
const PRUNE_AT = 10_000;

/**
 * The per-IP gap kept where a request leaves: the frontier plans lease starts an address's gap
 * apart (plus slack), but a lease reaches its fetcher and the wire late by however busy the
 * process is, so two starts on one address planned apart can arrive closer. Before each request
 * the fetcher passes this gate, which lets one start through per address every `gapMs` (plus
 * WIRE_GATE_MARGIN_MS), in this process's own clock. One gate is shared by every fetcher task of
 * a process that runs them all (the embedded engine); on Kafka each task has its own, which still
 * keeps its own starts apart. Pure bookkeeping in memory; not thread-safe.
 */
export class WireGate {
  private readonly next = new Map<string, number>();
  private readonly spacing: number;

  constructor(
    gapMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.spacing = gapMs > 0 ? gapMs + WIRE_GATE_MARGIN_MS : 0;
  }

  /**
   * Resolves true once a request to `address` may start now, and reserves that start; `wait(ms)`
   * sleeps and resolves false when the caller stops waiting (its task closed): then false, nothing
   * reserved. At once when the gap is 0.
   */
  async pass(address: string, wait: (ms: number) => Promise<boolean>): Promise<boolean> {
    if (this.spacing === 0) return true;
    for (;;) {
      const t = this.now();
      const at = this.next.get(address) ?? 0;
      if (t >= at) {
        if (this.next.size >= PRUNE_AT) for (const [a, n] of this.next) if (n <= t) this.next.delete(a);
        this.next.set(address, t + this.spacing);
        return true;
      }
      if (!(await wait(at - t))) return false;
    }
  }
}
