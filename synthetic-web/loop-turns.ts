/**
 * How late this process's stamps may be, from when its event loop turned (a 1 ms interval timer).
 * A request that reaches a stalled or busy process (a GC, a thread waiting for a core, a poll
 * phase full of other sockets) waits for the loop, and is stamped in the I/O phase of the turn
 * after: past that turn's timers. So a stamp taken at t may be late by up to t less the turn
 * before the last one: a millisecond or two on a free loop, the stall after one. (Measured from
 * the last turn alone, a stall read as ~0: the turn's timers run just before its I/O; a sigkill
 * e2e run showed stamps 56 and 80 ms after the request's packet, their "stall" 0.2 ms.)
 * The timer is unref'd: it never keeps the process alive. On the clock `now` gives.
 */
export class LoopTurns {
  #last: number | undefined;
  #before: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Connections not yet past their first request: the turn before the one that accepted them. */
  readonly #acceptedFrom = new WeakMap<object, number>();

  constructor(private readonly now: () => number) {}

  /** Starts following the loop; idempotent. */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      this.#before = this.#last;
      this.#last = this.now();
    }, 1);
    this.#timer.unref();
  }

  /** Stops following it; idempotent. */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Notes a plain connection as it is accepted. Its first request may have been written with the
   * connect, before the accept: then it waited in the socket while the loop turned once more (a
   * socket accepted in one turn is first read in the next), so its stamp may be late by up to
   * the turn before the accept's. Measured from the stamp's own turns, a client's write made
   * during a stall read as 2.8 ms late when it was 75.6 (test/synthetic-web/web-stamps.test.ts).
   * Over TLS the request follows the server's handshake replies, so the usual bound holds there.
   */
  accepted(connection: object): void {
    if (this.#before !== undefined) this.#acceptedFrom.set(connection, this.#before);
  }

  /**
   * How late a stamp taken now, at `t`, may be (ms, ≥ 0), for a request on `connection` (its first
   * one goes back to before its accept, above); undefined until the loop has turned twice.
   */
  slack(t: number, connection?: object): number | undefined {
    if (this.#before === undefined) return undefined;
    let from = this.#before;
    const accepted = connection === undefined ? undefined : this.#acceptedFrom.get(connection);
    if (accepted !== undefined) {
      from = Math.min(from, accepted);
      this.#acceptedFrom.delete(connection!);
    }
    return Math.max(0, t - from);
  }
}
