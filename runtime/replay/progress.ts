/**
 * Progress of a long replay as lines for people: records done of the total, records per second
 * and the time left, at most one line per `everyMs` (the first after `everyMs`).
 */
export class Progress {
  private done = 0;
  private readonly started: number;
  private lastLine: number;

  constructor(
    private readonly what: string,
    private readonly total: number,
    private readonly out: (line: string) => void,
    private readonly now: () => number = Date.now,
    private readonly everyMs = 2_000,
  ) {
    this.started = now();
    this.lastLine = this.started;
  }

  add(records: number): void {
    this.done += records;
    const t = this.now();
    if (t - this.lastLine < this.everyMs) return;
    this.lastLine = t;
    const rate = this.done / Math.max((t - this.started) / 1000, 1e-3);
    const left = Math.max(this.total - this.done, 0);
    const eta = rate > 0 ? `${Math.ceil(left / rate)} s` : 'unknown';
    this.out(
      `${this.what}: ${this.done} of at most ${this.total} changelog records (${Math.round(rate)} records/s, ETA ${eta})`,
    );
  }

  /** Records per second so far. */
  rate(): number {
    return this.done / Math.max((this.now() - this.started) / 1000, 1e-3);
  }
}
