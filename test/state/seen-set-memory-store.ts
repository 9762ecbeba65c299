import { fmix32 } from '../../core/hashing.js';
import type { FingerprintStore } from '../../state/seen-set.js';

/**
 * A key-value store in RAM with the read-your-writes behaviour of a store's pending overlay
 * (there is no commit): the seen-set's exact layer over it at 10 M entries, where RocksDB would make
 * the test too slow. The RocksDB path is tested separately at 1 M entries.
 */
export class MemoryFingerprintStore implements FingerprintStore {
  private readonly map = new Map<string, Buffer>();
  /** Bytes of keys and values put so far. */
  bytesWritten = 0;

  /** Keys held. */
  get keys(): number {
    return this.map.size;
  }

  get(key: Buffer): Buffer | undefined {
    return this.map.get(key.toString('latin1'));
  }

  getMany(keys: readonly Buffer[]): (Buffer | undefined)[] {
    return keys.map((k) => this.get(k));
  }

  put(key: Buffer, value: Buffer): void {
    this.bytesWritten += key.length + value.length;
    this.map.set(key.toString('latin1'), value);
  }

  delete(key: Buffer): void {
    this.map.delete(key.toString('latin1'));
  }

  *range(gte: Buffer, lt: Buffer): IterableIterator<[Buffer, Buffer]> {
    const keys = [...this.map.keys()].map((k) => Buffer.from(k, 'latin1')).sort(Buffer.compare);
    for (const k of keys) {
      if (Buffer.compare(k, gte) >= 0 && Buffer.compare(k, lt) < 0) yield [k, this.map.get(k.toString('latin1'))!];
    }
  }

  /** A copy holding the same entries (a restarted task reading the same store). */
  copy(): MemoryFingerprintStore {
    const c = new MemoryFingerprintStore();
    for (const [k, v] of this.map) c.map.set(k, v);
    return c;
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
    const f = fmix32(r ^ Math.imul(round + 1, 0x9e3779b9)) >>> 0;
    [l, r] = [r, (l ^ f) >>> 0];
  }
  out.writeUInt32BE(l, 0);
  out.writeUInt32BE(r, 4);
  return out;
}
