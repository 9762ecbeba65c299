import { fmix32, u32be } from '../core/hashing.js';
import { BloomFilter, bloomSizing, expectedFalsePositiveRate, MAX_BLOOM_BITS } from './bloom-filter.js';

/**
 * One segment of a {@link ScalableBloom}: the entries it was sized for and has taken, in one
 * filter, or in several shards when one filter could not hold them (a fingerprint goes to one
 * shard by a hash independent of the bits the filter picks, so a check reads one shard, and the
 * segment's rate is each shard's, not their sum).
 */
interface Segment {
  readonly shards: BloomFilter[];
  readonly capacity: number;
  readonly rate: number;
  added: number;
}

/** A hash of the 8 bytes of `fp` at `o` that picks a shard: independent of the bits a BloomFilter derives from them. */
function shardHash(fp: Uint8Array, o: number): number {
  return fmix32(u32be(fp, o + 4) ^ Math.imul(u32be(fp, o), 0xcc9e2d51) ^ 0x5bd1e995) >>> 0;
}

/** The shard of `segment` that holds (or would hold) a fingerprint of shard hash `h`. */
function shardOf(segment: Segment, h: number): BloomFilter {
  const shards = segment.shards;
  return shards.length === 1 ? shards[0]! : shards[Math.floor((h * shards.length) / 4294967296)]!;
}

/**
 * Bloom filters that grow by adding segments (Almeida et al., "Scalable Bloom Filters", 2007),
 * never by rebuilding: entries go to the newest segment; when it holds the entries it was sized
 * for, a new one twice the capacity so far is added, at half the previous growth segment's
 * false-positive rate, so the union's rate stays under the target however far it grows. A segment
 * that would pass `maxSegmentBits` (at most MAX_BLOOM_BITS) is sharded instead: each shard takes
 * its share of the entries at the segment's whole rate, so no size throws and a check still reads
 * one filter per segment. Answers `false` only for entries never added.
 *
 * The first segment is sized at construction for `capacity` entries at half the target rate;
 * growth segments share the other half (1/4, 1/8, … of the target). Not thread-safe; not persisted.
 */
export class ScalableBloom {
  private readonly segments: Segment[] = [];
  private readonly target: number;
  private growths = 0;
  // some segment has several shards: a check hashes the fingerprint for them once
  private sharded = false;

  /**
   * `capacity` ≥ 1 entries at a union false-positive rate of `falsePositiveRate` in (0, 1);
   * validated eagerly. `growable` false keeps the first segment however full it gets (RAM stays
   * fixed; the rate rises with the fill). `maxSegmentBits` bounds each filter (tests use less than
   * the filter's own MAX_BLOOM_BITS to get several shards without gigabytes).
   */
  constructor(
    capacity: number,
    falsePositiveRate: number,
    private readonly growable = true,
    private readonly maxSegmentBits = MAX_BLOOM_BITS,
  ) {
    bloomSizing(1, falsePositiveRate); // validates the rate
    this.target = falsePositiveRate;
    this.addSegment(Math.max(1, Math.ceil(capacity)), falsePositiveRate / 2);
  }

  /**
   * Adds the 8 bytes of `fp` at `offset`. True when it may have been added before: an earlier
   * segment may hold it (then nothing is added: that segment answers for it from now on), or
   * every one of its bits was already set in the newest segment.
   */
  add(fp: Uint8Array, offset = 0): boolean {
    let newest = this.segments[this.segments.length - 1]!;
    if (newest.added >= newest.capacity && this.growable) newest = this.grow();
    const h = this.sharded ? shardHash(fp, offset) : 0;
    const last = this.segments.length - 1;
    for (let i = 0; i < last; i++) if (shardOf(this.segments[i]!, h).mightContain(fp, offset)) return true;
    if (shardOf(newest, h).add(fp, offset)) return true;
    newest.added++;
    return false;
  }

  /** False: `fp` was never added. True: it probably was. */
  mightContain(fp: Uint8Array, offset = 0): boolean {
    const h = this.sharded ? shardHash(fp, offset) : 0;
    for (const s of this.segments) if (shardOf(s, h).mightContain(fp, offset)) return true;
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

  /** Filters in all segments (a segment past `maxSegmentBits` has several shards). */
  get filterCount(): number {
    return this.segments.reduce((n, s) => n + s.shards.length, 0);
  }

  get bits(): number {
    return this.filters().reduce((n, f) => n + f.bits, 0);
  }

  /** Hashes of the newest segment (segments at tighter rates use more). */
  get hashes(): number {
    return this.segments[this.segments.length - 1]!.shards[0]!.hashes;
  }

  /** Bits of the largest filter: never over `maxSegmentBits`. */
  get largestFilterBits(): number {
    return Math.max(...this.filters().map((f) => f.bits));
  }

  get byteLength(): number {
    return this.filters().reduce((n, f) => n + f.byteLength, 0);
  }

  /** Fraction of all the filters' bits set. */
  fill(): number {
    let set = 0;
    for (const f of this.filters()) set += f.fill() * f.bits;
    return set / this.bits;
  }

  /** Fraction of bits set in each filter, segment by segment (for tests: shards fill evenly). */
  shardFills(): number[] {
    return this.filters().map((f) => f.fill());
  }

  /** The union's chance of a false positive now: 1 − Π(1 − each segment's estimate, the mean of its shards'). */
  estimatedFalsePositiveRate(): number {
    let none = 1;
    for (const s of this.segments) {
      const rate = s.shards.reduce((r, f) => r + f.estimatedFalsePositiveRate(), 0) / s.shards.length;
      none *= 1 - rate;
    }
    return 1 - none;
  }

  /** The union's rate when every segment holds its capacity (theory): stays ≤ the target. */
  ratedFalsePositiveRate(): number {
    let none = 1;
    for (const s of this.segments) none *= 1 - expectedFalsePositiveRate(s.shards[0]!, s.capacity / s.shards.length);
    return 1 - none;
  }

  /** The target false-positive rate. */
  get targetRate(): number {
    return this.target;
  }

  private filters(): BloomFilter[] {
    return this.segments.flatMap((s) => s.shards);
  }

  /** Adds a segment for twice the capacity so far, at half the last growth's rate; returns it. */
  private grow(): Segment {
    this.growths++;
    return this.addSegment(this.capacity, this.target / 2 ** (this.growths + 1));
  }

  /** A segment for `capacity` entries at `rate`, in as few shards as keep each within `maxSegmentBits`. */
  private addSegment(capacity: number, rate: number): Segment {
    let count = 1;
    while (!this.fits(Math.ceil(capacity / count), rate)) count++;
    const sizing = bloomSizing(Math.ceil(capacity / count), rate);
    const shards = Array.from({ length: count }, () => new BloomFilter(sizing));
    if (count > 1) this.sharded = true;
    const segment: Segment = { shards, capacity, rate, added: 0 };
    this.segments.push(segment);
    return segment;
  }

  /** Whether a filter for `capacity` entries at `rate` stays within the segment bound (bloomSizing throws past MAX_BLOOM_BITS). */
  private fits(capacity: number, rate: number): boolean {
    try {
      return bloomSizing(capacity, rate).bits <= this.maxSegmentBits;
    } catch {
      return false;
    }
  }
}
