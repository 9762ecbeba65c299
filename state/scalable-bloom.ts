import { BloomFilter, bloomSizing, expectedFalsePositiveRate, MAX_BLOOM_BITS } from './bloom-filter.js';

/** One filter of a {@link ScalableBloom}, with the entries it was sized for and has taken. */
interface Segment {
  readonly filter: BloomFilter;
  readonly capacity: number;
  readonly rate: number;
  added: number;
}

/**
 * Bloom filters that grow by adding segments (Almeida et al., "Scalable Bloom Filters", 2007),
 * never by rebuilding: entries go to the newest segment; when it holds the entries it was sized
 * for, a new one twice the capacity so far is added, at half the previous growth segment's
 * false-positive rate, so the union's rate stays under the target however far it grows. A segment
 * never passes MAX_BLOOM_BITS: a capacity that would needs is spread over several segments, so no
 * size throws. Answers `false` only for entries never added.
 *
 * The first segments are sized at construction for `capacity` entries at half the target rate
 * (split evenly when they are several); growth segments share the other half (1/4, 1/8, … of the
 * target). Not thread-safe; not persisted.
 */
export class ScalableBloom {
  private readonly segments: Segment[] = [];
  private readonly target: number;
  private growths = 0;
  // the segment entries go to: every one before it is full, every one after it empty
  private filling = 0;

  /**
   * `capacity` ≥ 1 entries at a union false-positive rate of `falsePositiveRate` in (0, 1);
   * validated eagerly. `growable` false keeps the first segments however full they get (RAM stays
   * fixed; the rate rises with the fill). `maxSegmentBits` bounds each segment (tests use less than
   * the filter's own MAX_BLOOM_BITS to get several first segments without gigabytes).
   */
  constructor(
    capacity: number,
    falsePositiveRate: number,
    private readonly growable = true,
    private readonly maxSegmentBits = MAX_BLOOM_BITS,
  ) {
    bloomSizing(1, falsePositiveRate); // validates the rate
    this.target = falsePositiveRate;
    const wanted = Math.max(1, Math.ceil(capacity));
    // as few segments as hold it: each takes an equal share of the entries and of half the rate
    let count = 1;
    while (!this.fits(Math.ceil(wanted / count), falsePositiveRate / 2 / count)) count++;
    for (let i = 0; i < count; i++) this.addSegment(Math.ceil(wanted / count), falsePositiveRate / 2 / count);
  }

  /**
   * Adds the 8 bytes of `fp` at `offset`. True when it may have been added before: an earlier
   * segment may hold it (then nothing is added: that segment answers for it from now on), or
   * every one of its bits was already set in the segment being filled. Segments are filled in
   * order: the first ones in turn, then each growth segment.
   */
  add(fp: Uint8Array, offset = 0): boolean {
    let filling = this.segments[this.filling]!;
    if (filling.added >= filling.capacity) filling = this.next();
    for (let i = 0; i < this.filling; i++) if (this.segments[i]!.filter.mightContain(fp, offset)) return true;
    if (filling.filter.add(fp, offset)) return true;
    filling.added++;
    return false;
  }

  /** The segment after the full one being filled: the next first one, else a new one (unless the filter may not grow). */
  private next(): Segment {
    if (this.filling < this.segments.length - 1) return this.segments[++this.filling]!;
    if (!this.growable) return this.segments[this.filling]!;
    this.grow();
    return this.segments[++this.filling]!;
  }

  /** False: `fp` was never added. True: it probably was. */
  mightContain(fp: Uint8Array, offset = 0): boolean {
    for (let i = 0; i <= this.filling; i++) if (this.segments[i]!.filter.mightContain(fp, offset)) return true;
    return false;
  }

  /** Entries the segments were sized for in all. */
  get capacity(): number {
    return this.segments.reduce((n, s) => n + s.capacity, 0);
  }

  /** Segments added since construction (growth, each without a scan of what is stored). */
  get grown(): number {
    return this.growths;
  }

  get segmentCount(): number {
    return this.segments.length;
  }

  get bits(): number {
    return this.segments.reduce((n, s) => n + s.filter.bits, 0);
  }

  /** Hashes of the newest segment (segments at tighter rates use more). */
  get hashes(): number {
    return this.segments[this.segments.length - 1]!.filter.hashes;
  }

  /** Bits of the largest segment: never over `maxSegmentBits`. */
  get largestSegmentBits(): number {
    return Math.max(...this.segments.map((s) => s.filter.bits));
  }

  get byteLength(): number {
    return this.segments.reduce((n, s) => n + s.filter.byteLength, 0);
  }

  /** Fraction of all the segments' bits set. */
  fill(): number {
    let set = 0;
    for (const s of this.segments) set += s.filter.fill() * s.filter.bits;
    return set / this.bits;
  }

  /** The union's chance of a false positive now: 1 − Π(1 − each segment's estimate). */
  estimatedFalsePositiveRate(): number {
    let none = 1;
    for (const s of this.segments) none *= 1 - s.filter.estimatedFalsePositiveRate();
    return 1 - none;
  }

  /** The union's rate when every segment holds its capacity (theory): stays ≤ the target. */
  ratedFalsePositiveRate(): number {
    let none = 1;
    for (const s of this.segments) none *= 1 - expectedFalsePositiveRate(s.filter, s.capacity);
    return 1 - none;
  }

  /** The target false-positive rate. */
  get targetRate(): number {
    return this.target;
  }

  private grow(): void {
    this.growths++;
    const rate = this.target / 2 ** (this.growths + 1);
    // twice what there is, or as much as one segment may hold at this rate
    let capacity = this.capacity;
    while (!this.fits(capacity, rate)) capacity = Math.floor(capacity * 0.9);
    this.addSegment(capacity, rate);
  }

  /** Whether a filter for `capacity` entries at `rate` stays within the segment bound (bloomSizing throws past MAX_BLOOM_BITS). */
  private fits(capacity: number, rate: number): boolean {
    try {
      return bloomSizing(capacity, rate).bits <= this.maxSegmentBits;
    } catch {
      return false;
    }
  }

  private addSegment(capacity: number, rate: number): void {
    this.segments.push({ filter: new BloomFilter(bloomSizing(capacity, rate)), capacity, rate, added: 0 });
  }
}
