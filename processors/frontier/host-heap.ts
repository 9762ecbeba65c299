/**
 * Hosts ordered by the time they may next be fetched. Entries are hints: a host may be in the heap
 * more than once or no longer be ready; the frontier checks the host's stored state on every pop.
 */
export class HostHeap {
  private readonly items: { at: number; host: string }[] = [];

  get size(): number {
    return this.items.length;
  }

  push(host: string, at: number): void {
    const items = this.items;
    items.push({ at, host });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.at <= items[i]!.at) break;
      [items[parent], items[i]] = [items[i]!, items[parent]!];
      i = parent;
    }
  }

  /** The earliest entry, left in the heap; undefined when empty. */
  peek(): { readonly at: number; readonly host: string } | undefined {
    return this.items[0];
  }

  /** Earliest time in the heap, or undefined when empty. */
  peekTime(): number | undefined {
    return this.items[0]?.at;
  }

  pop(): { at: number; host: string } | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && items[l]!.at < items[m]!.at) m = l;
        if (r < items.length && items[r]!.at < items[m]!.at) m = r;
        if (m === i) break;
        [items[m], items[i]] = [items[i]!, items[m]!];
        i = m;
      }
    }
    return top;
  }
}
