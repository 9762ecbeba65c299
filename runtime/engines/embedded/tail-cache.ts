import type { ConsumedRawRecord } from '../../record.js';

/**
 * The latest records of one partition: offsets [start, start + records.length - head), contiguous.
 * Slots below `head` are emptied as records leave, so a record dropped is no longer held.
 */
interface Tail {
  start: number;
  head: number;
  records: (ConsumedRawRecord | undefined)[];
  sizes: number[];
  bytes: number;
}

/**
 * The latest appends of the partitions live consumers tail, decoded once, so a consumer that
 * keeps up reads them from memory instead of opening a RocksDB iterator per poll. Holds at most
 * `maxBytes` of records per partition (as sized by the caller), dropping the oldest first. Records handed out
 * are shared between readers: callers must not change them. Single-threaded, like the log.
 */
export class TailCache {
  private readonly tails = new Map<string, Tail>();

  constructor(private readonly maxBytes = 2 * 2 ** 20) {}

  /** Bytes of the records held (as sized when appended), over every partition. */
  get bytes(): number {
    let sum = 0;
    for (const t of this.tails.values()) sum += t.bytes;
    return sum;
  }

  /** Caches the appends of `tp` from offset `end` (its current end) on. Idempotent. */
  enable(tp: string, end: number): void {
    if (!this.tails.has(tp)) this.tails.set(tp, { start: end, head: 0, records: [], sizes: [], bytes: 0 });
  }

  /** Whether appends to `tp` are cached (`enable` was called for it). */
  caches(tp: string): boolean {
    return this.tails.has(tp);
  }

  /** Records a committed append of `records` at offsets `first`, `first + 1`, … with their sizes in memory. */
  appended(tp: string, first: number, records: readonly ConsumedRawRecord[], sizes: readonly number[]): void {
    const t = this.tails.get(tp);
    if (t === undefined) return;
    if (t.start + t.records.length - t.head !== first) this.reset(t, first);
    for (let i = 0; i < records.length; i++) {
      t.records.push(records[i]!);
      t.sizes.push(sizes[i]!);
      t.bytes += sizes[i]!;
    }
    while (t.bytes > this.maxBytes && t.head < t.records.length) this.dropHead(t);
    if (t.head > 1024 && t.head * 2 > t.records.length) {
      t.records = t.records.slice(t.head);
      t.sizes = t.sizes.slice(t.head);
      t.head = 0;
    }
  }

  /**
   * Up to `max` records from `from` on, and no more once `maxBytes` (as sized when appended) is
   * reached (always at least one), or undefined when `from` is not in the cache (read the log).
   */
  read(tp: string, from: number, max: number, maxBytes = Infinity): ConsumedRawRecord[] | undefined {
    const t = this.tails.get(tp);
    if (t === undefined || from < t.start) return undefined;
    const at = t.head + (from - t.start);
    let end = Math.min(t.records.length, at + max);
    if (maxBytes !== Infinity) {
      let bytes = 0;
      for (let i = at; i < end; i++) {
        bytes += t.sizes[i]!;
        if (bytes >= maxBytes) {
          end = i + 1;
          break;
        }
      }
    }
    return t.records.slice(at, end) as ConsumedRawRecord[];
  }

  /** Forgets the cached records of `tp` below `offset` (retention removed them from the log). */
  dropBelow(tp: string, offset: number): void {
    const t = this.tails.get(tp);
    if (t === undefined) return;
    while (t.start < offset && t.head < t.records.length) this.dropHead(t);
    if (t.start < offset) t.start = offset;
  }

  /** Forgets everything cached of `tp`; appends from `end` on are cached again. */
  forget(tp: string, end: number): void {
    const t = this.tails.get(tp);
    if (t !== undefined) this.reset(t, end);
  }

  /**
   * Drops the oldest record. Its slot is emptied, not left for the array's next trim: the array is
   * trimmed only past 1,024 dropped records, and a partition of 24 KiB pages kept that many (~25 MiB,
   * 100 MiB over four partitions of `fetched`) beyond its budget.
   */
  private dropHead(t: Tail): void {
    t.bytes -= t.sizes[t.head]!;
    t.records[t.head] = undefined;
    t.head++;
    t.start++;
  }

  private reset(t: Tail, start: number): void {
    t.start = start;
    t.head = 0;
    t.records = [];
    t.sizes = [];
    t.bytes = 0;
  }
}
