import type { HostState, QueueEntry } from '../../schemas/types.js';
import type { KeyValueStore } from '../../state/state-store.js';
import {
  CHUNK_ENTRIES,
  chunkOf,
  nextChunkStart,
  QUEUE_ENTRY,
  QueueChunk,
  writeQueueEntry,
  type NewEntry,
} from './queue-chunk.js';

/** A chunk of one host's FIFO: entries CHUNK_ENTRIES × chunk onwards. */
export interface QueueKey {
  host: string;
  chunk: number;
}

/** `host \0 chunk(u64 BE)`: a host's chunks are contiguous and in FIFO order. */
export const queueKeySerde = {
  serialize: ({ host, chunk }: QueueKey): Buffer => {
    const n = Buffer.byteLength(host, 'utf8');
    const b = Buffer.allocUnsafe(n + 9);
    b.write(host, 0, n, 'utf8');
    b[n] = 0;
    b.writeUInt32BE(Math.floor(chunk / 2 ** 32), n + 1);
    b.writeUInt32BE(chunk >>> 0, n + 5);
    return b;
  },
  deserialize: (b: Buffer): QueueKey => {
    const zero = b.indexOf(0);
    return { host: b.toString('utf8', 0, zero), chunk: b.readUInt32BE(zero + 1) * 2 ** 32 + b.readUInt32BE(zero + 5) };
  },
};

export type QueueStore = KeyValueStore<QueueKey, QueueChunk>;

/**
 * Entries of a host's head kept in memory after a read, so that most leases read no store: a
 * host is leased once per gap, round-robin with every other host, so a cache of whole chunks
 * would hold every active host's head chunk. A few entries each is the trade.
 */
const WINDOW_ENTRIES = 16;

// stands in for entries of a tail chunk that was missing from the store, so later entries keep their place
const MISSING: QueueEntry = { url: '', depth: 0, redirectHops: 0, attempts: 0, discoveredAt: 0 };

/**
 * The back queues of one frontier task: one FIFO per host, on disk in chunks of CHUNK_ENTRIES
 * entries (store `frontier-queue`, value: the entries' QueueEntry Avro encodings back to back).
 * A URL that starts with its host's `origin` and then '/' is stored without the origin (entries
 * are read back whole); a host's `origin` never changes, so it stays the one they were cut from.
 * A host's bounds are `headSeq` and `tailSeq` of its HostState; the caller stores that state.
 * An emptied FIFO restarts on the next chunk boundary, so a chunk always starts at its first
 * entry and a queue's bounds alone locate every entry.
 *
 * Across calls only a copy of the next WINDOW_ENTRIES entries of each read head stays in memory
 * (until `forget`); entries never change once written and sequence numbers are never reused, so
 * the copy is never stale. Tail chunks appended to are kept until `flush()`, which must run before
 * the call that appended returns (a commit runs only between calls, so it always sees them).
 */
export class BackQueues {
  /** Tail chunks appended to in this call, by host. */
  private readonly open = new Map<string, { chunk: number; value: QueueChunk }>();
  /** Copies of head entries `seq` (inclusive) to `end` (exclusive), by host. */
  private readonly windows = new Map<string, { seq: number; end: number; value: QueueChunk }>();

  constructor(private readonly store: QueueStore) {}

  /** Appends `entry` (attempts 0 when it has none, as a new URL) at the tail of the host's FIFO (advances `state.tailSeq`). */
  append(state: HostState, entry: NewEntry): void {
    if (state.tailSeq === state.headSeq && state.tailSeq % CHUNK_ENTRIES !== 0) {
      // only bounds written by older versions are off a boundary while empty
      state.headSeq = state.tailSeq = nextChunkStart(state.tailSeq);
    }
    const chunk = chunkOf(state.tailSeq);
    let open = this.open.get(state.host);
    if (open === undefined || open.chunk !== chunk) {
      if (open !== undefined) this.store.put({ host: state.host, chunk: open.chunk }, open.value);
      open = {
        chunk,
        value:
          state.tailSeq % CHUNK_ENTRIES === 0 ? new QueueChunk() : this.tailChunk(state.host, chunk, state.tailSeq),
      };
      this.open.set(state.host, open);
    }
    // a URL of the host's origin is stored as its path (and query): no chunk repeats the origin
    const origin = state.origin;
    writeQueueEntry(open.value, entry, startsWithOrigin(entry.url, origin) ? origin.length : 0);
    state.tailSeq++;
  }

  /**
   * The entry at the head of the host's FIFO; undefined when it is empty, null when the entry was
   * lost (its chunk is missing from the store): pop it like any other.
   */
  head(state: HostState): QueueEntry | null | undefined {
    const seq = state.headSeq;
    if (seq >= state.tailSeq) return undefined;
    const window = this.windows.get(state.host);
    let entry: QueueEntry;
    if (window !== undefined && seq >= window.seq && seq < window.end) {
      entry = window.value.entryAt(seq - window.seq, QUEUE_ENTRY);
    } else {
      const chunk = chunkOf(seq);
      const open = this.open.get(state.host);
      const value =
        open !== undefined && open.chunk === chunk ? open.value : this.store.get({ host: state.host, chunk });
      if (value === undefined) return null;
      const index = seq % CHUNK_ENTRIES;
      const end = Math.min(seq + WINDOW_ENTRIES, (chunk + 1) * CHUNK_ENTRIES, state.tailSeq);
      const copy = value.copyEntries(index, index + end - seq, QUEUE_ENTRY);
      this.windows.set(state.host, { seq, end, value: copy });
      entry = copy.entryAt(0, QUEUE_ENTRY);
    }
    if (entry.url === '') return null;
    if (entry.url.charCodeAt(0) === 0x2f) entry.url = state.origin + entry.url;
    return entry;
  }

  /** The host left its active slot: nothing of its FIFO need stay in memory. */
  forget(host: string): void {
    this.windows.delete(host);
  }

  /** Removes the head entry (advances `state.headSeq`); a chunk is deleted with its last entry. */
  pop(state: HostState): void {
    const chunk = chunkOf(state.headSeq);
    state.headSeq++;
    if (state.headSeq === state.tailSeq) {
      state.headSeq = state.tailSeq = (chunk + 1) * CHUNK_ENTRIES;
      this.drop(state.host, chunk);
    } else if (chunkOf(state.headSeq) !== chunk) {
      this.drop(state.host, chunk);
    }
  }

  /** Removes every entry; returns how many there were. */
  clear(state: HostState): number {
    const n = state.tailSeq - state.headSeq;
    if (n <= 0) return 0;
    this.windows.delete(state.host);
    for (let c = chunkOf(state.headSeq); c <= chunkOf(state.tailSeq - 1); c++) this.drop(state.host, c);
    state.headSeq = state.tailSeq = state.tailSeq % CHUNK_ENTRIES === 0 ? state.tailSeq : nextChunkStart(state.tailSeq);
    return n;
  }

  /** Hands the tail chunks appended to in this call to the store. */
  flush(): void {
    for (const [host, { chunk, value }] of this.open) this.store.put({ host, chunk }, value);
    this.open.clear();
  }

  private tailChunk(host: string, chunk: number, tailSeq: number): QueueChunk {
    const stored = this.store.get({ host, chunk });
    if (stored !== undefined) return stored;
    const value = new QueueChunk();
    for (let i = chunk * CHUNK_ENTRIES; i < tailSeq; i++) QUEUE_ENTRY.write(value, MISSING);
    return value;
  }

  private drop(host: string, chunk: number): void {
    const open = this.open.get(host);
    if (open !== undefined && open.chunk === chunk) this.open.delete(host);
    this.store.delete({ host, chunk });
  }
}

/** Whether `url` starts with `origin` and then '/' (compared char by char: cheaper than startsWith here). */
function startsWithOrigin(url: string, origin: string): boolean {
  const n = origin.length;
  if (url.charCodeAt(n) !== 0x2f) return false;
  for (let i = n - 1; i >= 0; i--) if (url.charCodeAt(i) !== origin.charCodeAt(i)) return false;
  return true;
}
