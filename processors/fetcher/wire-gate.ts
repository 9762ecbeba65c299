import diagnosticsChannel from 'node:diagnostics_channel';
import type { Socket } from 'node:net';

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
 *
 * A start is also counted when its request really leaves: undici says so when it writes a
 * request's headers to a socket (`undici:client:sendHeaders`), and every live gate of the process
 * then pushes that address's next start to the gap after it (`sent`). A request that passed the
 * gate but left late (a new connection under load took longer than the margin) so holds back the
 * next one instead of leaving it less than the gap behind.
 */
export class WireGate {
  private readonly next = new Map<string, number>();
  private readonly spacing: number;

  constructor(
    gapMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.spacing = gapMs > 0 ? gapMs + WIRE_GATE_MARGIN_MS : 0;
    if (this.spacing > 0) watchSends(this);
  }

  /** A request to `address` left now: the next start there waits the gap from now, if that is later than planned. */
  sent(address: string): void {
    if (this.spacing === 0) return;
    const at = this.now() + this.spacing;
    if ((this.next.get(address) ?? 0) < at) this.next.set(address, at);
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

/** The gates alive in this process, told of each request undici writes (weakly held: a closed fetcher's gate goes). */
const gates = new Set<WeakRef<WireGate>>();
let watching = false;

function watchSends(gate: WireGate): void {
  gates.add(new WeakRef(gate));
  if (watching) return;
  watching = true;
  diagnosticsChannel.subscribe('undici:client:sendHeaders', (message) => {
    const address = (message as { socket?: Socket }).socket?.remoteAddress;
    if (address === undefined) return;
    for (const ref of gates) {
      const g = ref.deref();
      if (g === undefined) gates.delete(ref);
      else g.sent(address);
    }
  });
}
