import type { KeyValueStore } from '../../state/state-store.js';
import type { FrontEntry } from '../../schemas/types.js';
import { CHUNK_ENTRIES, chunkOf, FRONT_ENTRY, nextChunkStart, QueueChunk } from './queue-chunk.js';
import type { UrlShape } from './url-shape.js';

/**
 * Priority bands, most urgent first: seeds (and new or due sitemap and feed URLs), important,
 * normal, suspect; then revisits of pages, which share the picks with the other four
 * (`--recrawl-share`) when both wait.
 */
export const BANDS = ['seed', 'important', 'normal', 'suspect', 'revisit'] as const;
export type Band = 0 | 1 | 2 | 3 | 4;
/** Due revisits of pages. */
export const REVISIT_BAND: Band = 4;
const BAND_COUNT = BANDS.length;
/** Suspect and demoted URLs: they wait for a refill even when their host holds a slot. */
export const LOWEST_BAND: Band = 3;
/** A low band still trickles: out of every 15 picks, 8 / 4 / 2 / 1 go to bands 0..3 when all have URLs. */
const WEIGHTS = [8, 4, 2, 1];

/** A chunk of one band's FIFO: entries CHUNK_ENTRIES × chunk onwards. */
export interface FrontKey {
  band: number;
  chunk: number;
}

/** `band(u8) chunk(u64 BE)`: a band's chunks are contiguous and in FIFO order. */
export const frontKeySerde = {
  serialize: ({ band, chunk }: FrontKey): Buffer => {
    const b = Buffer.allocUnsafe(9);
    b[0] = band;
    b.writeUInt32BE(Math.floor(chunk / 2 ** 32), 1);
    b.writeUInt32BE(chunk >>> 0, 5);
    return b;
  },
  deserialize: (b: Buffer): FrontKey => ({ band: b[0]!, chunk: b.readUInt32BE(1) * 2 ** 32 + b.readUInt32BE(5) }),
};

/** The band a URL starts in: seeds first; shallow pages important; trap-like URLs suspect. */
export function bandOf(url: string, shape: UrlShape | undefined, depth: number): Band {
  if (depth === 0) return 0;
  if (shape === undefined) return 3;
  const params = shape.search.length > 1 ? countOf(shape.search, 0x26) + 1 : 0;
  if (params > 3 || url.length > 300 || depth > 10 || pathDepth(shape.pathname) > 8) return 3;
  if (depth <= 2) return 1;
  return 2;
}

function countOf(s: string, code: number): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === code) n++;
  return n;
}

function pathDepth(pathname: string): number {
  let n = 0;
  for (let i = 0; i < pathname.length; i++) {
    if (pathname.charCodeAt(i) !== 0x2f && (i === 0 || pathname.charCodeAt(i - 1) === 0x2f)) n++;
  }
  return n;
}

// stands in for entries of a tail chunk that was missing from the store
const LOST: FrontEntry = { url: '', host: '', origin: '', site: '', depth: 0, redirectHops: 0, discoveredAt: 0 };

/** A chunk held in memory: the head or tail chunk of a band. */
interface Held {
  readonly chunk: number;
  readonly value: QueueChunk;
  /** Entries in `value`; `fresh` ones follow them. */
  encoded: number;
  /** Entries pushed since the chunk was last handed to the store, not yet encoded. */
  fresh: FrontEntry[];
  /** Appended to since it was last handed to the store. */
  dirty: boolean;
  /** Handed to the store at least once (or read from it): dropping it needs a delete. */
  stored: boolean;
}

/**
 * Mercator front queues of one frontier task: one FIFO per band, on disk in chunks of
 * CHUNK_ENTRIES entries (store `frontier-front`, value: the entries' FrontEntry Avro encodings
 * back to back), bounds in `frontier-meta`. URLs wait here until their host gets an active slot.
 *
 * Only a band's head and tail chunks are in memory. Pushes and pops change them there; `flush()`
 * hands the changed chunks and bounds to the stores, and must run before the call that changed
 * them returns (a commit runs only between calls, so it always sees them). Entries are encoded
 * when their chunk goes to the store: a URL whose host gets a slot in the same call (most, while
 * slots are free) passes through without being encoded or written.
 */
export class FrontQueues {
  private readonly heads = Array<number>(BAND_COUNT).fill(0);
  private readonly tails = Array<number>(BAND_COUNT).fill(0);
  private readonly held: Held[][] = BANDS.map(() => []);
  private readonly boundsDirty = Array<boolean>(BAND_COUNT).fill(false);
  private credits = [...WEIGHTS];
  private revisitCredit = 0;

  /** `revisitShare`: the part of the picks revisits get while discovery bands wait too, in [0, 1]. */
  constructor(
    private readonly store: KeyValueStore<FrontKey, QueueChunk>,
    readBound: (name: string) => number,
    private readonly writeBound: (name: string, value: number) => void,
    private readonly revisitShare = 0.5,
  ) {
    for (let b = 0; b < BAND_COUNT; b++) {
      this.heads[b] = readBound(`front-head-${b}`);
      this.tails[b] = readBound(`front-tail-${b}`);
    }
  }

  get size(): number {
    let n = 0;
    for (let b = 0; b < BAND_COUNT; b++) n += this.tails[b]! - this.heads[b]!;
    return n;
  }

  /** URLs waiting in one band. */
  sizeOf(band: Band): number {
    return this.tails[band]! - this.heads[band]!;
  }

  push(band: Band, entry: FrontEntry): void {
    let tail = this.tails[band]!;
    if (tail === this.heads[band]! && tail % CHUNK_ENTRIES !== 0) {
      // an emptied FIFO restarts on a chunk boundary (only bounds written by older versions are not)
      tail = nextChunkStart(tail);
      this.heads[band] = tail;
    }
    const held = this.hold(band, chunkOf(tail), tail % CHUNK_ENTRIES === 0);
    held.fresh.push(entry);
    held.dirty = true;
    this.tails[band] = tail + 1;
    this.boundsDirty[band] = true;
  }

  /** The next URL by biased selection across bands, removed from its queue; undefined when all are empty. */
  pop(): FrontEntry | undefined {
    if (this.heads[REVISIT_BAND]! < this.tails[REVISIT_BAND]!) {
      if (this.size === this.sizeOf(REVISIT_BAND)) return this.take(REVISIT_BAND);
      // both wait: revisits get `revisitShare` of the picks, spread evenly
      this.revisitCredit += this.revisitShare;
      if (this.revisitCredit >= 1) {
        this.revisitCredit -= 1;
        return this.take(REVISIT_BAND);
      }
    }
    for (let tries = 0; tries < 2; tries++) {
      for (let b = 0; b < 4; b++) {
        if (this.credits[b]! <= 0 || this.heads[b]! >= this.tails[b]!) continue;
        this.credits[b]!--;
        return this.take(b);
      }
      // every non-empty band spent its credit: a new round
      this.credits = [...WEIGHTS];
    }
    return undefined;
  }

  /** Hands changed chunks and bounds to the stores. */
  flush(): void {
    for (let b = 0; b < BAND_COUNT; b++) {
      for (const h of this.held[b]!) if (h.dirty) this.write(b, h);
      if (this.boundsDirty[b]) {
        this.writeBound(`front-head-${b}`, this.heads[b]!);
        this.writeBound(`front-tail-${b}`, this.tails[b]!);
        this.boundsDirty[b] = false;
      }
    }
  }

  private take(band: number): FrontEntry | undefined {
    while (this.heads[band]! < this.tails[band]!) {
      const head = this.heads[band]!;
      const chunk = chunkOf(head);
      const held = this.hold(band, chunk, false);
      const index = head % CHUNK_ENTRIES;
      // a chunk missing from the store loses its entries, as a missing entry always did
      const missing = index < held.encoded && held.value.byteLength === 0;
      let entry: FrontEntry | undefined;
      if (index >= held.encoded) entry = held.fresh[index - held.encoded];
      else if (!missing) entry = held.value.entryAt(index, FRONT_ENTRY);
      if (entry?.url === '') entry = undefined;
      let next = missing ? Math.min(nextChunkStart(head), this.tails[band]!) : head + 1;
      if (next === this.tails[band]!) {
        next = next % CHUNK_ENTRIES === 0 ? next : nextChunkStart(head);
        this.tails[band] = next;
      }
      this.heads[band] = next;
      this.boundsDirty[band] = true;
      if (chunkOf(next) !== chunk) this.drop(band, held);
      if (entry !== undefined) return entry;
    }
    return undefined;
  }

  /** The chunk in memory, read from the store, or new; at most a head and a tail chunk stay held. */
  private hold(band: number, chunk: number, fresh: boolean): Held {
    const list = this.held[band]!;
    for (const h of list) if (h.chunk === chunk) return h;
    const tail = this.tails[band]!;
    const isTail = chunk === chunkOf(tail);
    let value = fresh ? undefined : this.store.get({ band, chunk });
    const stored = value !== undefined;
    if (value === undefined && !fresh && isTail) {
      // the tail chunk is missing: placeholders keep the place of its lost entries
      value = new QueueChunk();
      for (let i = chunk * CHUNK_ENTRIES; i < tail; i++) FRONT_ENTRY.write(value, LOST);
    }
    const encoded = fresh ? 0 : isTail ? tail - chunk * CHUNK_ENTRIES : CHUNK_ENTRIES;
    const h: Held = { chunk, value: value ?? new QueueChunk(), encoded, fresh: [], dirty: false, stored };
    // keep the chunks of the head and the tail; one that is neither goes back to the store
    const keep = [chunkOf(this.heads[band]!), chunkOf(tail)];
    for (let i = list.length - 1; i >= 0; i--) {
      const old = list[i]!;
      if (keep.includes(old.chunk)) continue;
      if (old.dirty) this.write(band, old);
      list.splice(i, 1);
    }
    list.push(h);
    return h;
  }

  private write(band: number, h: Held): void {
    for (const e of h.fresh) FRONT_ENTRY.write(h.value, e);
    h.encoded += h.fresh.length;
    h.fresh = [];
    this.store.put({ band, chunk: h.chunk }, h.value);
    h.dirty = false;
    h.stored = true;
  }

  private drop(band: number, h: Held): void {
    const list = this.held[band]!;
    list.splice(list.indexOf(h), 1);
    if (h.stored) this.store.delete({ band, chunk: h.chunk });
  }
}
