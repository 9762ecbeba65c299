import type { HostState } from '../../schemas/types.js';
import { KeyFilter } from '../../state/key-filter.js';
import type { HostStore } from './frontier-stores.js';

/**
 * The host states of one frontier task, over store `frontier-hosts`: states of active hosts stay
 * decoded in memory (the hot set never goes back to RocksDB for a read), and every state changed
 * during a call is handed to the store once, by `flush()`, however often it changed. `flush()`
 * must run before the call returns (a commit runs only between calls, so it sees every change).
 * Once `all()` has been read to its end, a host the store never held is answered without a read.
 */
export class HostTable {
  private readonly cache = new Map<string, HostState>();
  private readonly dirty = new Map<string, HostState>();
  /** Every host stored or written, once a scan of the store completed (`scanned`). */
  private readonly known = new KeyFilter();
  private scanned = false;

  constructor(
    private readonly store: HostStore,
    /** Whether a host holds an active slot: only those stay cached. */
    private readonly isActive: (host: string) => boolean,
  ) {}

  get(host: string): HostState | undefined {
    const known = this.cache.get(host) ?? this.dirty.get(host);
    if (known) return known;
    if (this.scanned && !this.known.mightHave(host)) return undefined;
    const state = this.store.get(host);
    if (state && this.isActive(host)) this.cache.set(host, state);
    return state;
  }

  /** Records a change to `state` (the object returned by `get`, or a new host's). */
  put(state: HostState): void {
    this.dirty.set(state.host, state);
    if (this.isActive(state.host)) this.cache.set(state.host, state);
  }

  /** The host left its active slot: its state need not stay in memory. */
  forget(host: string): void {
    this.cache.delete(host);
  }

  /** Every stored host state (uncommitted changes included), in host order. */
  *all(): IterableIterator<[string, HostState]> {
    for (const entry of this.store.range('', '\uffff')) {
      this.known.note(entry[0]);
      yield entry;
    }
    this.scanned = true;
  }

  flush(): void {
    for (const state of this.dirty.values()) {
      this.known.note(state.host);
      this.store.put(state.host, state);
    }
    this.dirty.clear();
  }
}
