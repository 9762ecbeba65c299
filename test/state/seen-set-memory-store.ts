import type { FingerprintStore } from '../../state/seen-set.js';

/**
 * An exact set of 8-byte fingerprints in RAM: open addressing with linear probing over two
 * Uint32Arrays (16 bytes per slot). The seen-set's exact layer at 10 M entries, where RocksDB
 * would make the test too slow; the RocksDB path is tested separately at 1 M entries.
 * All writes are immediately visible (there is no commit), like a store's pending overlay.
 */
export class MemoryFingerprintStore implements FingerprintStore {
  private readonly hi: Uint32Array;
  private readonly lo: Uint32Array;
  private readonly used: Uint8Array;
  private readonly mask: number;
  /** Fingerprints held (8-byte keys only). */
  size = 0;
  // keys that are not fingerprints (the seen-set's count)
  private readonly other = new Map<string, Buffer>();

  constructor(capacityLog2: number) {
    const slots = 2 ** capacityLog2;
    this.hi = new Uint32Array(slots);
    this.lo = new Uint32Array(slots);
    this.used = new Uint8Array(slots);
    this.mask = slots - 1;
  }

  get(key: Buffer): Buffer | undefined {
    if (key.length !== 8) return this.other.get(key.toString('latin1'));
    return this.find(key.readUInt32BE(0), key.readUInt32BE(4)) >= 0 ? key : undefined;
  }

  getMany(keys: readonly Buffer[]): (Buffer | undefined)[] {
    return keys.map((k) => this.get(k));
  }

  put(key: Buffer, value: Buffer): void {
    if (key.length !== 8) {
      this.other.set(key.toString('latin1'), value);
      return;
    }
    const h = key.readUInt32BE(0);
    const l = key.readUInt32BE(4);
    if (this.find(h, l) >= 0) return;
    if (this.size >= this.mask * 0.75) throw new Error('MemoryFingerprintStore is full');
    let i = this.slot(h, l);
    while (this.used[i] === 1) i = (i + 1) & this.mask;
    this.used[i] = 1;
    this.hi[i] = h;
    this.lo[i] = l;
    this.size++;
  }

  *range(): IterableIterator<[Buffer, Buffer]> {
    for (let i = 0; i <= this.mask; i++) {
      if (this.used[i] !== 1) continue;
      const b = Buffer.allocUnsafe(8);
      b.writeUInt32BE(this.hi[i]!, 0);
      b.writeUInt32BE(this.lo[i]!, 4);
      yield [b, Buffer.alloc(0)];
    }
  }

  private slot(h: number, l: number): number {
    return (Math.imul(h ^ l, 0x9e3779b1) ^ l) & this.mask;
  }

  private find(h: number, l: number): number {
    let i = this.slot(h, l);
    while (this.used[i] === 1) {
      if (this.hi[i] === h && this.lo[i] === l) return i;
      i = (i + 1) & this.mask;
    }
    return -1;
  }
}

/**
 * The i-th of a sequence of distinct, uniformly spread 8-byte fingerprints: a 4-round Feistel
 * permutation of the 64-bit counter `i`, so different `i` never give the same fingerprint.
 */
export function syntheticFingerprint(i: number, out: Buffer = Buffer.allocUnsafe(8)): Buffer {
  let l = Math.floor(i / 2 ** 32) >>> 0;
  let r = i >>> 0;
  for (let round = 0; round < 4; round++) {
    const f = mix(r ^ Math.imul(round + 1, 0x9e3779b9));
    [l, r] = [r, (l ^ f) >>> 0];
  }
  out.writeUInt32BE(l, 0);
  out.writeUInt32BE(r, 4);
  return out;
}

function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
