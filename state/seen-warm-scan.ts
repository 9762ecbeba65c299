import { ALL_FROM, ALL_TO } from './seen-layout.js';

/** A store's range read: every entry with gte <= key < lt in key order, `readAhead` at a time. */
export type RangeRead = (gte: Buffer, lt: Buffer, readAhead?: number) => IterableIterator<[Buffer, Buffer]>;

const ZERO = Buffer.alloc(1);
// run keys start with `r` (seen-layout.ts); legacy 8-byte keys may too, and are read with them
const RUNS_FROM = Buffer.from([0x72]);
const RUNS_TO = Buffer.from([0x73]);
// a step stops at its deadline: keys read ahead past it are read again by the next step
const READ_AHEAD = 16;
// the key ranges, in order: runs first (answers need them), then the rest of the store
const PHASES: readonly (readonly [Buffer, Buffer])[] = [
  [RUNS_FROM, RUNS_TO],
  [ALL_FROM, RUNS_FROM],
  [RUNS_TO, ALL_TO],
];

/**
 * The resumable scan of the seen-set's store that warms a newly opened exact layer: every key
 * once, runs first, in steps bounded by a deadline, each resuming after the last key handed out.
 * It keeps no snapshot: each step reads the store as it is then. Not thread-safe.
 */
export class WarmScan {
  private phase = PHASES.length;
  private from: Buffer = ALL_FROM;
  /** Keys handed out since `start`. */
  keys = 0;

  constructor(private readonly range: RangeRead) {}

  /** Starts over from the first key. */
  start(): void {
    this.phase = 0;
    this.from = PHASES[0]![0];
    this.keys = 0;
  }

  /** Marks the scan complete without reading (nothing is stored). */
  skip(): void {
    this.phase = PHASES.length;
  }

  get done(): boolean {
    return this.phase === PHASES.length;
  }

  /** Every run key has been handed out. */
  get runsRead(): boolean {
    return this.phase > 0;
  }

  /**
   * Hands keys to `take` until `deadline` (a `performance.now()` time; at least one key per call)
   * or the end. Returns true when every key has been handed out.
   */
  step(deadline: number, take: (key: Buffer, value: Buffer) => void): boolean {
    while (this.phase < PHASES.length) {
      for (const [key, value] of this.range(this.from, PHASES[this.phase]![1], READ_AHEAD)) {
        take(key, value);
        this.keys++;
        this.from = Buffer.concat([key, ZERO]);
        if (performance.now() >= deadline) return false;
      }
      this.next();
    }
    return true;
  }

  /** Hands out the run keys not yet handed out, all at once. */
  finishRuns(take: (key: Buffer, value: Buffer) => void): void {
    if (this.phase > 0) return;
    for (const [key, value] of this.range(this.from, PHASES[0]![1])) {
      take(key, value);
      this.keys++;
    }
    this.next();
  }

  private next(): void {
    this.phase++;
    if (this.phase < PHASES.length) this.from = PHASES[this.phase]![0];
  }
}
