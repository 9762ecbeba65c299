import { fmix32 } from '../core/hashing.js';
import { ScalableBloom } from './scalable-bloom.js';

/** The chain's false-positive rate, all its filters together. */
const RATE = 0.01;

/**
 * "Definitely not stored" for the string keys of a store, so that looking up a key the store has
 * never held (a new host, a new site) skips the store read, which costs 7–40 µs on RocksDB. A
 * scalable Bloom filter (`ScalableBloom`: a chain of filters of doubling capacity, never rebuilt),
 * so it needs no count up front and no rescan as it grows. A key noted is never reported absent;
 * an absent key is reported "maybe" with a chance of at most about 1 % (one needless read).
 *
 * The owner notes every key the store holds (a full scan) and every key it writes; keys deleted
 * from the store stay in the filter (a needless read). Not thread-safe.
 */
export class KeyFilter {
  private readonly bloom: ScalableBloom;
  private readonly scratch = Buffer.allocUnsafe(8);

  constructor(initialCapacity = 65_536) {
    this.bloom = new ScalableBloom(initialCapacity, RATE);
  }

  /** Records `key` as (maybe) stored. */
  note(key: string): void {
    this.hash(key);
    this.bloom.add(this.scratch);
  }

  /** False: `key` was never noted. True: it probably was. */
  mightHave(key: string): boolean {
    this.hash(key);
    return this.bloom.mightContain(this.scratch);
  }

  /** RAM of the bit arrays. */
  get byteLength(): number {
    return this.bloom.byteLength;
  }

  /** Two 32-bit hashes of the key's UTF-16 code units (FNV-1a steps, murmur3's finalizer) into `scratch`. */
  private hash(key: string): void {
    let a = 0x811c9dc5;
    let b = 0x9747b28c ^ key.length;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
      b ^= b >>> 15;
    }
    this.scratch.writeInt32BE(fmix32(a), 0);
    this.scratch.writeInt32BE(fmix32(b ^ a), 4);
  }
}
