/** Per-entry bookkeeping counted against the budget besides the page's bytes. */
const ENTRY_OVERHEAD = 64;

/**
 * The most recently used pages of the seen-set's exact layer, by page id, within a byte budget
 * (least recently used evicted first). A page known not to exist is held as an empty buffer.
 * Holds what the store returns for a page, pending writes included: the owner must `update` every
 * page it writes or deletes, and drop the cache when it drops its pending writes. Budget 0 holds
 * nothing. Not thread-safe.
 */
export class PageCache {
  private readonly pages = new Map<number, Buffer>();
  private bytes = 0;
  hits = 0;
  misses = 0;

  constructor(readonly maxBytes: number) {}

  /** The cached page (the empty buffer: no such page), or undefined when not cached. */
  get(id: number): Buffer | undefined {
    const page = this.pages.get(id);
    if (page === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.pages.delete(id);
    this.pages.set(id, page);
    return page;
  }

  /** Caches what the store returned for page `id` (undefined: no such page). */
  add(id: number, page: Buffer | undefined): void {
    if (this.maxBytes === 0) return;
    this.remove(id);
    const value = page ?? EMPTY;
    this.pages.set(id, value);
    this.bytes += value.length + ENTRY_OVERHEAD;
    // (an iterator is not made unless needed: finding a Map's first entry walks what was deleted before it)
    if (this.bytes > this.maxBytes)
      for (const [oldest, p] of this.pages) {
        if (this.bytes <= this.maxBytes) break;
        this.pages.delete(oldest);
        this.bytes -= p.length + ENTRY_OVERHEAD;
      }
  }

  /**
   * Page `id` was written (or deleted: undefined): a cached copy is replaced (or dropped); an
   * uncached one is cached only while that evicts nothing, so a sweep over more pages than fit
   * cannot flush the cache of the pages lookups use.
   */
  update(id: number, page: Buffer | undefined): void {
    if (page === undefined) this.remove(id);
    else if (this.pages.has(id)) this.add(id, page);
    else if (this.bytes + page.length + ENTRY_OVERHEAD <= this.maxBytes) this.add(id, page);
  }

  /** The cached page (the empty buffer: no such page), or undefined, without counting a lookup or refreshing it. */
  peek(id: number): Buffer | undefined {
    return this.pages.get(id);
  }

  get size(): number {
    return this.bytes;
  }

  private remove(id: number): void {
    const old = this.pages.get(id);
    if (old === undefined) return;
    this.pages.delete(id);
    this.bytes -= old.length + ENTRY_OVERHEAD;
  }
}

const EMPTY = Buffer.alloc(0);
