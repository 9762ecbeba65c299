/** Per-entry bookkeeping counted against the budget besides the block's bytes. */
const ENTRY_OVERHEAD = 64;

/**
 * Recently used blocks of the seen-set's exact layer, by block id, within a byte budget. A block
 * known not to exist is held as an empty buffer. Holds what the store returns for a block, pending
 * writes included: the owner must `update` every block it writes or deletes, and drop the cache
 * when it drops its pending writes. Budget 0 holds nothing. Not thread-safe.
 *
 * Two generations, as `GenerationCache`: hits and new blocks go to the young one; when it would
 * pass half the budget it becomes the old one and the previous old one is dropped whole. Roughly
 * least recently used, with O(1) work per call: evicting a Map's oldest entries one at a time
 * walks the holes its deletions left (at hundreds of millions of fingerprints, where most lookups
 * miss, that walk was 40 % of an admit's CPU).
 */
export class BlockCache {
  private young = new Map<number, Buffer>();
  private old = new Map<number, Buffer>();
  private youngBytes = 0;
  private oldBytes = 0;
  hits = 0;
  misses = 0;

  constructor(private max: number) {}

  /** The budget: `size` stays within it. */
  get maxBytes(): number {
    return this.max;
  }

  /**
   * A new budget (a process memory plan granted this cache more or less). A smaller one keeps the
   * most recent blocks that fit: the old generation goes, and the young one keeps its newest
   * blocks up to half the budget. O(blocks held) when it shrinks; rare (a plan changes as tasks
   * come and go).
   */
  resize(maxBytes: number): void {
    this.max = maxBytes;
    if (this.oldBytes + this.youngBytes > maxBytes) this.dropOld();
    if (this.youngBytes <= maxBytes / 2) return;
    const entries = [...this.young];
    let from = entries.length;
    let bytes = 0;
    while (from > 0 && bytes + entries[from - 1]![1].length + ENTRY_OVERHEAD <= maxBytes / 2)
      bytes += entries[--from]![1].length + ENTRY_OVERHEAD;
    this.young = new Map(entries.slice(from));
    this.youngBytes = bytes;
  }

  /** The cached block (the empty buffer: no such block), or undefined when not cached. */
  get(id: number): Buffer | undefined {
    const young = this.young.get(id);
    if (young !== undefined) {
      this.hits++;
      return young;
    }
    const old = this.old.get(id);
    if (old === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.old.delete(id);
    this.oldBytes -= old.length + ENTRY_OVERHEAD;
    this.addYoung(id, old);
    return old;
  }

  /** Caches what the store returned for block `id` (undefined: no such block). */
  add(id: number, block: Buffer | undefined): void {
    if (this.maxBytes === 0) return;
    this.remove(id);
    this.addYoung(id, block ?? EMPTY);
  }

  /**
   * Block `id` was written (or deleted: undefined): a cached copy is replaced (or dropped); an
   * uncached one is cached only while that evicts nothing, so a sweep over more blocks than fit
   * cannot flush the cache of the blocks lookups use. `copy`: what is cached is a copy of `block`
   * (made only if it is cached), for a caller whose block shares memory that should not live as
   * long as the cache keeps it.
   */
  update(id: number, block: Buffer | undefined, copy = false): void {
    if (block === undefined) this.remove(id);
    else if (
      this.young.has(id) ||
      this.old.has(id) ||
      this.youngBytes + block.length + ENTRY_OVERHEAD <= this.maxBytes / 2
    )
      this.add(id, copy ? Buffer.from(block) : block);
  }

  /** The cached block (the empty buffer: no such block), or undefined, without counting a lookup or refreshing it. */
  peek(id: number): Buffer | undefined {
    return this.young.get(id) ?? this.old.get(id);
  }

  /** Bytes held (blocks and their bookkeeping): at most `maxBytes`. */
  get size(): number {
    return this.youngBytes + this.oldBytes;
  }

  private addYoung(id: number, block: Buffer): void {
    const bytes = block.length + ENTRY_OVERHEAD;
    if (bytes > this.maxBytes) return;
    if (this.youngBytes + bytes > this.maxBytes / 2 && this.young.size > 0) {
      this.old = this.young;
      this.oldBytes = this.youngBytes;
      this.young = new Map();
      this.youngBytes = 0;
    }
    // a block over half the budget: the old generation goes too, so both stay within it
    if (this.oldBytes + bytes > this.maxBytes) this.dropOld();
    this.young.set(id, block);
    this.youngBytes += bytes;
  }

  private dropOld(): void {
    this.old = new Map();
    this.oldBytes = 0;
  }

  private remove(id: number): void {
    const young = this.young.get(id);
    if (young !== undefined) {
      this.young.delete(id);
      this.youngBytes -= young.length + ENTRY_OVERHEAD;
    }
    const old = this.old.get(id);
    if (old !== undefined) {
      this.old.delete(id);
      this.oldBytes -= old.length + ENTRY_OVERHEAD;
    }
  }
}

const EMPTY = Buffer.alloc(0);
