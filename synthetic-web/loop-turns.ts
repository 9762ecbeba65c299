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

  /** How late a stamp taken now, at `t`, may be (ms, ≥ 0); undefined until the loop has turned twice. */
  slack(t: number): number | undefined {
    return this.#before === undefined ? undefined : Math.max(0, t - this.#before);
  }
}
