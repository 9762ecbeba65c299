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
    for (const [oldest, p] of this.pages) {
      if (this.bytes <= this.maxBytes) break;
      this.pages.delete(oldest);
      this.bytes -= p.length + ENTRY_OVERHEAD;
    }
  }

  /** Page `id` was written (or deleted: undefined): a cached copy is replaced; an uncached one stays out. */
  update(id: number, page: Buffer | undefined): void {
    if (this.pages.has(id)) this.add(id, page);
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
