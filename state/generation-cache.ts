import { InvalidOptionError } from '../core/errors.js';

/**
 * A bounded cache of recently used values by string key, in two generations: hits and new values
 * go to the young one; when it holds half the byte budget it becomes the old one and the previous
 * old one is dropped whole. Roughly least-recently-used, with O(1) work per call and no scan (a
 * Map's first entries cannot be evicted one by one cheaply). Holds at most `maxBytes` as counted
 * by `sizeOf` when each was last set. Values are held as given (the owner keeps them current).
 * Not thread-safe.
 */
export class GenerationCache<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  private youngBytes = 0;
  private oldBytes = 0;

  constructor(
    readonly maxBytes: number,
    private readonly sizeOf: (key: string, value: V) => number,
  ) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0)
      throw new InvalidOptionError(`cache size must be a whole number of bytes, got ${maxBytes}`);
  }

  /** The cached value, or undefined. */
  get(key: string): V | undefined {
    const v = this.young.get(key);
    if (v !== undefined) return v;
    const o = this.old.get(key);
    if (o !== undefined) {
      this.old.delete(key);
      this.add(key, o);
    }
    return o;
  }

  /**
   * Caches `value` under `key` (replacing any). Its size is counted again at every `set`, so a
   * value that grew and was set again is counted at its new size (an overcount, never an under).
   */
  set(key: string, value: V): void {
    this.old.delete(key);
    this.add(key, value);
  }

  delete(key: string): void {
    this.young.delete(key);
    this.old.delete(key);
  }

  get size(): number {
    return this.young.size + this.old.size;
  }

  /** Bytes held as counted when set (at most `maxBytes`; entries since deleted still count until their generation is dropped). */
  get bytes(): number {
    return this.youngBytes + this.oldBytes;
  }

  private add(key: string, value: V): void {
    if (this.maxBytes === 0) return;
    const bytes = this.sizeOf(key, value);
    // the young generation turns old before it would pass half the budget, so both together
    // stay within it (unless one value alone is over half)
    if (this.youngBytes + bytes > this.maxBytes / 2 && this.young.size > 0) {
      this.old = this.young;
      this.oldBytes = this.youngBytes;
      this.young = new Map();
      this.youngBytes = 0;
    }
    this.young.set(key, value);
    this.youngBytes += bytes;
  }
}
