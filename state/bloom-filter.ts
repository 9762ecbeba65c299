import { InvalidOptionError } from '../core/errors.js';
import { fmix32 } from '../core/hashing.js';

/** Size of a Bloom filter: `bits` (m) and `hashes` (k). */
export interface BloomSizing {
  readonly bits: number;
  readonly hashes: number;
}

/** Largest filter: bit positions stay below 2^32 so they can be handled as uint32. */
export const MAX_BLOOM_BITS = 2 ** 32 - 512;

/** Bits of one block: a fingerprint's bits all fall in one block of 64 bytes (one cache line). */
const BLOCK_BITS = 512;
/** At most this many bits per fingerprint (one per salt below). */
const MAX_HASHES = 16;

/**
 * The size for `expected` (n) entries at false-positive rate `falsePositiveRate` (p) in a blocked
 * filter: the classic m = −n ln p / (ln 2)² bits, grown in steps of 1 % until the blocked layout's
 * rate (`expectedFalsePositiveRate`) is at most p (~4 % more bits at 1 %), in whole 512-bit blocks;
 * k = (m/n) ln 2 hashes, rounded, in 1..16. Throws CS_INVALID_OPTION for n < 1, p outside (0, 1),
 * or a filter larger than MAX_BLOOM_BITS (split the key space over more partitions instead).
 */
export function bloomSizing(expected: number, falsePositiveRate: number): BloomSizing {
  if (!Number.isSafeInteger(expected) || expected < 1) {
    throw new InvalidOptionError(`Bloom filter expected count must be a positive integer, got ${expected}`);
  }
  if (!(falsePositiveRate > 0 && falsePositiveRate < 1)) {
    throw new InvalidOptionError(`Bloom filter false-positive rate must be in (0, 1), got ${falsePositiveRate}`);
  }
  const classic = (-expected * Math.log(falsePositiveRate)) / (Math.LN2 * Math.LN2);
  let sizing = sized(classic, expected);
  for (
    let grow = 1.01;
    sizing.bits <= MAX_BLOOM_BITS && grow < 2 && expectedFalsePositiveRate(sizing, expected) > falsePositiveRate;
    grow += 0.01
  ) {
    sizing = sized(classic * grow, expected);
  }
  if (sizing.bits > MAX_BLOOM_BITS) {
    throw new InvalidOptionError(
      `a Bloom filter for ${expected} entries at p=${falsePositiveRate} needs ${sizing.bits} bits, more than ${MAX_BLOOM_BITS}; use more partitions`,
    );
  }
  return sizing;
}

function sized(bits: number, expected: number): BloomSizing {
  const whole = Math.max(1, Math.ceil(bits / BLOCK_BITS)) * BLOCK_BITS;
  return { bits: whole, hashes: Math.min(MAX_HASHES, Math.max(1, Math.round((whole / expected) * Math.LN2))) };
}

/**
 * The false-positive rate of a blocked filter with this sizing after `entries` insertions
 * (theory): blocks hold a Poisson number of entries (mean entries × 512 / m), each setting k of
 * the block's 512 bits.
 */
export function expectedFalsePositiveRate(sizing: BloomSizing, entries: number): number {
  // an empty filter answers "no" to everything (and ln 0 below would make the sum NaN)
  if (!(entries > 0)) return 0;
  const mean = (entries * BLOCK_BITS) / sizing.bits;
  const k = sizing.hashes;
  // sum over j of P(j entries in a block) × (bits set by j entries / 512)^k, from the mode outwards
  const mode = Math.floor(mean);
  const logAt = (j: number) => j * Math.log(mean) - mean - logFactorial(j);
  const term = (j: number) => Math.exp(logAt(j)) * Math.pow(1 - Math.pow(1 - 1 / BLOCK_BITS, j * k), k);
  let total = 0;
  for (let j = mode; j <= mode + 60 + 10 * Math.sqrt(mean); j++) total += term(j);
  for (let j = mode - 1; j >= 0 && j >= mode - 60 - 10 * Math.sqrt(mean); j--) total += term(j);
  return total;
}

/** ln(j!): exact below 32, Stirling's series above (error < 1e-10). */
function logFactorial(j: number): number {
  if (j < 32) {
    let s = 0;
    for (let i = 2; i <= j; i++) s += Math.log(i);
    return s;
  }
  return j * Math.log(j) - j + 0.5 * Math.log(2 * Math.PI * j) + 1 / (12 * j) - 1 / (360 * j ** 3);
}

/** The fraction of bits set after `entries` insertions into a filter of this sizing (theory). */
export function expectedFill(sizing: BloomSizing, entries: number): number {
  return 1 - Math.exp((-sizing.hashes * entries) / sizing.bits);
}

// odd multipliers: bit i of a fingerprint's block is the top 9 bits of c·SALT[i] xor d·SALT[15−i]
const SALT = new Int32Array([
  0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31, 0x9e3779b9,
  0x85ebca6b, 0xc2b2ae35, 0x27d4eb2f, 0x165667b1, 0xd3a2646d, 0xfd7046c5, 0xb55a4f09,
]);

/**
 * A blocked Bloom filter over 8-byte fingerprints, in one array in RAM (m/8 bytes): a fingerprint
 * picks one 512-bit block (one cache line, so one memory miss per check instead of k) and sets k
 * bits in it. Per bit it is a little less exact than a classic filter; `bloomSizing` adds the bits
 * that makes up for. Answers `false` only for fingerprints never added; `true` may be wrong with
 * about `estimatedFalsePositiveRate()`. Not persisted: rebuild it from the exact fingerprints it
 * stands in front of.
 */
export class BloomFilter {
  readonly bits: number;
  readonly hashes: number;
  private readonly blocks: number;
  private readonly words: Int32Array;
  private setBits = 0;
  // scratch for the current fingerprint: first word of its block, and two 32-bit hashes for its bits
  private base = 0;
  private c = 0;
  private d = 0;

  constructor(sizing: BloomSizing) {
    if (
      !Number.isInteger(sizing.bits) ||
      sizing.bits < BLOCK_BITS ||
      sizing.bits > MAX_BLOOM_BITS ||
      sizing.bits % BLOCK_BITS !== 0
    ) {
      throw new InvalidOptionError(
        `Bloom filter bits must be a multiple of ${BLOCK_BITS} in ${BLOCK_BITS}..${MAX_BLOOM_BITS}, got ${sizing.bits}`,
      );
    }
    if (!Number.isInteger(sizing.hashes) || sizing.hashes < 1 || sizing.hashes > MAX_HASHES) {
      throw new InvalidOptionError(`Bloom filter hashes must be an integer in 1..${MAX_HASHES}, got ${sizing.hashes}`);
    }
    this.bits = sizing.bits;
    this.hashes = sizing.hashes;
    this.blocks = sizing.bits / BLOCK_BITS;
    this.words = new Int32Array(sizing.bits / 32);
  }

  /** Bytes of RAM the bit array holds. */
  get byteLength(): number {
    return this.words.byteLength;
  }

  /** Fraction of bits set, 0..1. */
  fill(): number {
    return this.setBits / this.bits;
  }

  /**
   * The chance that a fingerprint never added is reported present: `expectedFalsePositiveRate`
   * at the number of entries the current fill implies.
   */
  estimatedFalsePositiveRate(): number {
    const fill = this.fill();
    if (fill >= 1) return 1;
    const entries = (-Math.log(1 - fill) * this.bits) / this.hashes;
    return expectedFalsePositiveRate(this, entries);
  }

  /** Adds the 8 bytes of `fp` at `offset`. Returns true when every bit was already set (maybe present before). */
  add(fp: Uint8Array, offset = 0): boolean {
    this.hash(fp, offset);
    const w = this.words;
    const base = this.base;
    const c = this.c;
    const d = this.d;
    let present = true;
    for (let i = 0; i < this.hashes; i++) {
      const bit = (Math.imul(c, SALT[i]!) ^ Math.imul(d, SALT[15 - i]!)) >>> 23;
      const at = base + (bit >>> 5);
      const mask = 1 << (bit & 31);
      const word = w[at]!;
      if ((word & mask) === 0) {
        w[at] = word | mask;
        this.setBits++;
        present = false;
      }
    }
    return present;
  }

  /** False: `fp` was never added. True: it probably was. */
  mightContain(fp: Uint8Array, offset = 0): boolean {
    this.hash(fp, offset);
    const w = this.words;
    for (let i = 0; i < this.hashes; i++) {
      const bit = (Math.imul(this.c, SALT[i]!) ^ Math.imul(this.d, SALT[15 - i]!)) >>> 23;
      if ((w[this.base + (bit >>> 5)]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }

  /**
   * The fingerprint's block and bit hashes (murmur3's fmix over its two 32-bit halves): the block
   * from the top 23 bits of one hash scaled to the block count (exact in a double), the bits from
   * two others.
   */
  private hash(fp: Uint8Array, o: number): void {
    const hi = (fp[o]! << 24) | (fp[o + 1]! << 16) | (fp[o + 2]! << 8) | fp[o + 3]!;
    const lo = (fp[o + 4]! << 24) | (fp[o + 5]! << 16) | (fp[o + 6]! << 8) | fp[o + 7]!;
    const a = fmix32(hi ^ 0x9e3779b9);
    const c = fmix32(lo ^ Math.imul(a, 0x85ebca6b));
    this.base = Math.floor(((a >>> 9) * this.blocks) / 8388608) << 4;
    this.c = c;
    this.d = fmix32(c ^ hi);
  }
}
