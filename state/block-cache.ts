/** Per-entry bookkeeping counted against the budget besides the block's bytes. */
const ENTRY_OVERHEAD = 64;

/**
 * The most recently used blocks of the seen-set's exact layer, by block id, within a byte budget
 * (least recently used evicted first). A block known not to exist is held as an empty buffer.
 * Holds what the store returns for a block, pending writes included: the owner must `update` every
 * block it writes or deletes, and drop the cache when it drops its pending writes. Budget 0 holds
 * nothing. Not thread-safe.
 */
export class BlockCache {
  private readonly blocks = new Map<number, Buffer>();
  private bytes = 0;
  hits = 0;
  misses = 0;

  constructor(readonly maxBytes: number) {}

  /** The cached block (the empty buffer: no such block), or undefined when not cached. */
  get(id: number): Buffer | undefined {
    const block = this.blocks.get(id);
    if (block === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.blocks.delete(id);
    this.blocks.set(id, block);
    return block;
  }

  /** Caches what the store returned for block `id` (undefined: no such block). */
  add(id: number, block: Buffer | undefined): void {
    if (this.maxBytes === 0) return;
    this.remove(id);
    const value = block ?? EMPTY;
    this.blocks.set(id, value);
    this.bytes += value.length + ENTRY_OVERHEAD;
    // (an iterator is not made unless needed: finding a Map's first entry walks what was deleted before it)
    if (this.bytes > this.maxBytes)
      for (const [oldest, p] of this.blocks) {
        if (this.bytes <= this.maxBytes) break;
        this.blocks.delete(oldest);
        this.bytes -= p.length + ENTRY_OVERHEAD;
      }
  }

  /**
   * Block `id` was written (or deleted: undefined): a cached copy is replaced (or dropped); an
   * uncached one is cached only while that evicts nothing, so a sweep over more blocks than fit
   * cannot flush the cache of the blocks lookups use.
   */
  update(id: number, block: Buffer | undefined): void {
    if (block === undefined) this.remove(id);
    else if (this.blocks.has(id)) this.add(id, block);
    else if (this.bytes + block.length + ENTRY_OVERHEAD <= this.maxBytes) this.add(id, block);
  }

  /** The cached block (the empty buffer: no such block), or undefined, without counting a lookup or refreshing it. */
  peek(id: number): Buffer | undefined {
    return this.blocks.get(id);
  }

  get size(): number {
    return this.bytes;
  }

  private remove(id: number): void {
    const old = this.blocks.get(id);
    if (old === undefined) return;
    this.blocks.delete(id);
    this.bytes -= old.length + ENTRY_OVERHEAD;
  }
}

const EMPTY = Buffer.alloc(0);
