import { InvalidOptionError } from '../runtime/errors.js';
import { fmix32 } from '../runtime/hashing.js';

/** Size of a Bloom filter: `bits` (m) and `hashes` (k). */
export interface BloomSizing {
  readonly bits: number;
  readonly hashes: number;
}

/** Largest filter: bit positions stay below 2^32 so they can be handled as uint32. */
export const MAX_BLOOM_BITS = 2 ** 32 - 8;

/**
 * The optimal size for `expected` (n) entries at false-positive rate `falsePositiveRate` (p):
 * m = −n ln p / (ln 2)² bits, rounded up to whole bytes, and k = (m/n) ln 2 hashes, rounded to the
 * nearest integer (at least 1). Throws CS_INVALID_OPTION for n < 1, p outside (0, 1), or a filter
 * larger than MAX_BLOOM_BITS (split the key space over more partitions instead).
 */
export function bloomSizing(expected: number, falsePositiveRate: number): BloomSizing {
  if (!Number.isSafeInteger(expected) || expected < 1) {
    throw new InvalidOptionError(`Bloom filter expected count must be a positive integer, got ${expected}`);
  }
  if (!(falsePositiveRate > 0 && falsePositiveRate < 1)) {
    throw new InvalidOptionError(`Bloom filter false-positive rate must be in (0, 1), got ${falsePositiveRate}`);
  }
  const exact = (-expected * Math.log(falsePositiveRate)) / (Math.LN2 * Math.LN2);
  const bits = Math.max(64, Math.ceil(exact / 8) * 8);
  if (bits > MAX_BLOOM_BITS) {
    throw new InvalidOptionError(
      `a Bloom filter for ${expected} entries at p=${falsePositiveRate} needs ${bits} bits, more than ${MAX_BLOOM_BITS}; use more partitions`,
    );
  }
  const hashes = Math.max(1, Math.round((bits / expected) * Math.LN2));
  return { bits, hashes };
}

/** The false-positive rate of a filter with this sizing after `entries` insertions (theory). */
export function expectedFalsePositiveRate(sizing: BloomSizing, entries: number): number {
  return Math.pow(1 - Math.exp((-sizing.hashes * entries) / sizing.bits), sizing.hashes);
}

/** The fraction of bits set after `entries` insertions into a filter of this sizing (theory). */
export function expectedFill(sizing: BloomSizing, entries: number): number {
  return 1 - Math.exp((-sizing.hashes * entries) / sizing.bits);
}

/**
 * A Bloom filter over 8-byte fingerprints, in one byte array in RAM (m/8 bytes).
 *
 * The k bit positions come from double hashing (Kirsch–Mitzenmacher): two 64-bit hashes h1, h2
 * of the fingerprint, positions h1 + i·h2 mod m for i = 0..k−1. Answers `false` only for
 * fingerprints never added; `true` may be wrong with about `estimatedFalsePositiveRate()`.
 * Not persisted: rebuild it from the exact fingerprints it stands in front of.
 */
export class BloomFilter {
  readonly bits: number;
  readonly hashes: number;
  private readonly array: Uint8Array;
  private setBits = 0;
  // scratch for the current fingerprint's two hashes as doubles below 2^53
  private h1 = 0;
  private h2 = 0;

  constructor(sizing: BloomSizing) {
    if (!Number.isInteger(sizing.bits) || sizing.bits < 8 || sizing.bits > MAX_BLOOM_BITS) {
      throw new InvalidOptionError(`Bloom filter bits must be an integer in 8..${MAX_BLOOM_BITS}, got ${sizing.bits}`);
    }
    if (!Number.isInteger(sizing.hashes) || sizing.hashes < 1 || sizing.hashes > 64) {
      throw new InvalidOptionError(`Bloom filter hashes must be an integer in 1..64, got ${sizing.hashes}`);
    }
    this.bits = sizing.bits;
    this.hashes = sizing.hashes;
    this.array = new Uint8Array(Math.ceil(sizing.bits / 8));
  }

  /** Bytes of RAM the bit array holds. */
  get byteLength(): number {
    return this.array.byteLength;
  }

  /** Fraction of bits set, 0..1. */
  fill(): number {
    return this.setBits / this.bits;
  }

  /** fill^k: the chance that a fingerprint never added is reported present, at the current fill. */
  estimatedFalsePositiveRate(): number {
    return Math.pow(this.fill(), this.hashes);
  }

  /** Adds the 8 bytes of `fp` at `offset`. Returns true when every bit was already set (maybe present before). */
  add(fp: Uint8Array, offset = 0): boolean {
    this.hash(fp, offset);
    const m = this.bits;
    const a = this.array;
    let pos = this.h1 % m;
    const step = (this.h2 % (m - 1)) + 1;
    let present = true;
    for (let i = 0; i < this.hashes; i++) {
      const byte = pos >>> 3;
      const mask = 1 << (pos & 7);
      if ((a[byte]! & mask) === 0) {
        a[byte] = a[byte]! | mask;
        this.setBits++;
        present = false;
      }
      pos += step;
      if (pos >= m) pos -= m;
    }
    return present;
  }

  /** False: `fp` was never added. True: it probably was. */
  mightContain(fp: Uint8Array, offset = 0): boolean {
    this.hash(fp, offset);
    const m = this.bits;
    const a = this.array;
    let pos = this.h1 % m;
    const step = (this.h2 % (m - 1)) + 1;
    for (let i = 0; i < this.hashes; i++) {
      if ((a[pos >>> 3]! & (1 << (pos & 7))) === 0) return false;
      pos += step;
      if (pos >= m) pos -= m;
    }
    return true;
  }

  /**
   * Two 64-bit hashes of the fingerprint (murmur3's fmix on its two 32-bit halves, with different
   * seeds), each kept as a 53-bit double so position arithmetic stays exact.
   */
  private hash(fp: Uint8Array, o: number): void {
    const hi = ((fp[o]! << 24) | (fp[o + 1]! << 16) | (fp[o + 2]! << 8) | fp[o + 3]!) >>> 0;
    const lo = ((fp[o + 4]! << 24) | (fp[o + 5]! << 16) | (fp[o + 6]! << 8) | fp[o + 7]!) >>> 0;
    const a = fmix32(hi ^ 0x9e3779b9);
    const b = fmix32(lo ^ Math.imul(a, 0x85ebca6b));
    const c = fmix32(b ^ 0xc2b2ae35 ^ hi);
    const d = fmix32(a ^ Math.imul(c, 0x27d4eb2f) ^ lo);
    this.h1 = (a >>> 0) * 2097152 + ((b >>> 0) >>> 11);
    this.h2 = (c >>> 0) * 2097152 + ((d >>> 0) >>> 11);
  }
}
