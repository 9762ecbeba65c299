import type { PolitenessReport } from '../synthetic-web/politeness.js';
import type { RequestLogEntry } from '../synthetic-web/synthetic-web.js';

/**
 * When this process's event loop turned, from a 1 ms interval timer: a request the web stamps
 * right after the loop stood still may have arrived any time during the stall, so its stamp is late
 * by up to the stall. On the clock of the web's log (`performance.timeOrigin + performance.now()`).
 * Costs a timer callback a millisecond while it runs.
 */
export class LoopTicks {
  private ticks = new Float64Array(1 << 16);
  private count = 0;
  private timer: NodeJS.Timeout | undefined;

  start(): void {
    this.timer = setInterval(() => this.tick(), 1);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** How long before `t` the loop last turned (ms): how late a stamp taken at `t` may be. */
  stallBefore(t: number): number {
    let lo = 0;
    let hi = this.count - 1;
    if (hi < 0 || this.ticks[0]! > t) return 0;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.ticks[mid]! <= t) lo = mid;
      else hi = mid - 1;
    }
    return t - this.ticks[lo]!;
  }

  private tick(): void {
    if (this.count === this.ticks.length) {
      const grown = new Float64Array(this.ticks.length * 2);
      grown.set(this.ticks);
      this.ticks = grown;
    }
    this.ticks[this.count++] = performance.timeOrigin + performance.now();
  }
}

/**
 * The ip-gap violations of `report` the judge cannot tell from a polite pair: the earlier request
 * was stamped right after `ticks`' loop had stood still at least as long as the gap is short (a
 * later stamp is never early). Not a verdict that they are none: the crawler's own send times are
 * not in the log.
 */
export function ipGapsWithinStamps(
  report: PolitenessReport,
  log: readonly RequestLogEntry[],
  ticks: LoopTicks,
): PolitenessReport['violations'] {
  const bySeq = new Map(log.map((e) => [e.seq, e]));
  return report.violations.filter((v) => {
    if (v.kind !== 'ip-gap') return false;
    const later = bySeq.get(v.seq);
    const earlier = bySeq.get(Number(/after #(\d+)/.exec(v.detail)?.[1]));
    const needs = Number(/needs ([\d.]+) ms/.exec(v.detail)?.[1]);
    if (later === undefined || earlier === undefined || !(needs > 0)) return false;
    return later.start - earlier.start + ticks.stallBefore(earlier.start) >= needs;
  });
}
