import type { FetchKind, FrontEntry, QueueEntry } from '../../schemas/types.js';
import { CrawlError } from '../../core/errors.js';

/**
 * Entries per chunk of an on-disk FIFO. The entry with sequence number `s` is entry `s % 64` of
 * chunk `floor(s / 64)`, so a queue's head and tail sequence numbers alone locate every entry.
 * Part of the stored format of `frontier-queue` and `frontier-front`: changing it needs a
 * migration.
 */
export const CHUNK_ENTRIES = 64;

export function chunkOf(seq: number): number {
  return Math.floor(seq / CHUNK_ENTRIES);
}

/** The first sequence number of the chunk after the one holding `seq`: where an emptied FIFO restarts. */
export function nextChunkStart(seq: number): number {
  return (chunkOf(seq) + 1) * CHUNK_ENTRIES;
}

/**
 * Up to CHUNK_ENTRIES consecutive entries of one FIFO, stored as one value: the Avro binary
 * encodings of the entries (QueueEntry or FrontEntry, schemas/), back to back, with no header.
 * Appending writes at the end of a growable buffer; reading finds entry `i` by skipping `i`
 * entries from the start, or from a remembered position when reading forward.
 *
 * Bytes already written never change, so `bytes()` handed to a store stays valid while more
 * entries are appended.
 */
export class QueueChunk {
  private buf: Buffer;
  private len: number;
  // a remembered entry start, so reading forward does not rescan the chunk
  private markIndex = 0;
  private markPos = 0;
  /** Read position of the entry codecs. */
  pos = 0;

  constructor(bytes?: Buffer) {
    this.buf = bytes ?? Buffer.allocUnsafe(256);
    this.len = bytes ? bytes.length : 0;
  }

  get byteLength(): number {
    return this.len;
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.len);
  }

  /** Entry `index` (0-based) of the chunk, read in `format`. */
  entryAt<E>(index: number, format: EntryFormat<E>): E {
    this.moveTo(index, format);
    const entry = format.read(this);
    this.markIndex = index + 1;
    this.markPos = this.pos;
    return entry;
  }

  /** A new chunk holding a copy of entries `from` (inclusive) to `to` (exclusive), in memory of its own. */
  copyEntries<E>(from: number, to: number, format: EntryFormat<E>): QueueChunk {
    this.moveTo(from, format);
    const start = this.pos;
    for (let i = from; i < to; i++) format.skip(this);
    // memory of its own, not a slice of Node's shared 8 KiB pool, which it would keep alive: copies
    // are kept while their host is active
    const copy = Buffer.allocUnsafeSlow(this.pos - start);
    this.buf.copy(copy, 0, start, this.pos);
    return new QueueChunk(copy);
  }

  private moveTo<E>(index: number, format: EntryFormat<E>): void {
    if (index < this.markIndex) {
      this.markIndex = 0;
      this.markPos = 0;
    }
    this.pos = this.markPos;
    for (let i = this.markIndex; i < index; i++) {
      if (this.pos >= this.len) throw new CrawlError('CS_STORE', `queue chunk holds fewer than ${index + 1} entries`);
      format.skip(this);
    }
    if (this.pos >= this.len) throw new CrawlError('CS_STORE', `queue chunk holds fewer than ${index + 1} entries`);
    this.markIndex = index;
    this.markPos = this.pos;
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n, 256));
    this.buf.copy(grown, 0, 0, this.len);
    this.buf = grown;
  }

  /** Avro `long`/`int`: zigzag, then base-128 varint, low groups first. Exact up to 2^53. */
  writeLong(n: number): void {
    this.reserve(10);
    const b = this.buf;
    let p = this.len;
    if (n >= -0x20000000 && n < 0x20000000) {
      let z = (n << 1) ^ (n >> 31);
      while (z > 0x7f) {
        b[p++] = (z & 0x7f) | 0x80;
        z >>>= 7;
      }
      b[p++] = z;
    } else {
      // |n| >= 2^29 (epoch milliseconds): z >= 2^30, so at least five groups; the low 28 bits by
      // integer ops, the rest (below 2^26 for |n| < 2^53) after one division
      const z = n >= 0 ? n * 2 : -n * 2 - 1;
      let high = Math.floor(z / 0x10000000);
      const low = z - high * 0x10000000;
      b[p++] = (low & 0x7f) | 0x80;
      b[p++] = ((low >>> 7) & 0x7f) | 0x80;
      b[p++] = ((low >>> 14) & 0x7f) | 0x80;
      b[p++] = (low >>> 21) | 0x80;
      while (high > 0x7f) {
        b[p++] = (high & 0x7f) | 0x80;
        high >>>= 7;
      }
      b[p++] = high;
    }
    this.len = p;
  }

  /**
   * Avro `string` of `s` from char `start` on. An ASCII rest (every normalized URL) is copied char
   * by char after its length; anything else goes through `writeString`.
   */
  writeStringFrom(s: string, start: number): void {
    const n = s.length - start;
    this.reserve(n + 10);
    const at = this.len;
    this.writeLong(n);
    const b = this.buf;
    let p = this.len;
    for (let i = start; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        this.len = at;
        this.writeString(start === 0 ? s : s.slice(start));
        return;
      }
      b[p++] = c;
    }
    this.len = p;
  }

  /** Avro `string`: byte length as a long, then UTF-8. */
  writeString(s: string): void {
    // written after a 1-byte length, which holds up to 63 bytes; longer ones move up behind theirs
    this.reserve(1 + 3 * s.length + 10);
    const b = this.buf as RawBuffer;
    const at = this.len;
    const n = b.utf8Write(s, at + 1, 3 * s.length);
    if (n < 64) {
      b[at] = n << 1;
      this.len = at + 1 + n;
      return;
    }
    let extra = 0;
    for (let z = n << 1; z > 0x7f; z >>>= 7) extra++;
    b.copyWithin(at + 1 + extra, at + 1, at + 1 + n);
    this.writeLong(n);
    this.len = at + 1 + extra + n;
  }

  readLong(): number {
    const b = this.buf;
    let p = this.pos;
    let byte = b[p++]!;
    let z = byte & 0x7f;
    let scale = 0x80;
    while (byte & 0x80) {
      byte = b[p++]!;
      z += (byte & 0x7f) * scale;
      scale *= 0x80;
    }
    if (p > this.len) throw new CrawlError('CS_STORE', 'queue chunk ends inside a number');
    this.pos = p;
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }

  readString(): string {
    const n = this.readLong();
    const start = this.pos;
    if (n < 0 || start + n > this.len) throw new CrawlError('CS_STORE', 'queue chunk ends inside a string');
    this.pos = start + n;
    return (this.buf as RawBuffer).utf8Slice(start, start + n);
  }

  skipString(): void {
    const n = this.readLong();
    this.pos += n;
  }

  skipLong(): void {
    while (this.buf[this.pos++]! & 0x80);
  }
}

/** Buffer methods without the argument checks of `write` and `toString` (present in every Node). */
export interface RawBuffer extends Buffer {
  utf8Write(s: string, offset: number, maxBytes: number): number;
  utf8Slice(start: number, end: number): string;
  hexWrite(s: string, offset: number, maxBytes: number): number;
}

/** How one kind of entry is written to and read from a chunk; field order is that of its schema. */
export interface EntryFormat<E> {
  write(chunk: QueueChunk, entry: E): void;
  read(chunk: QueueChunk): E;
  skip(chunk: QueueChunk): void;
}

/** The symbols of the Avro enum FetchKind, in schema order: an entry stores the index. */
export const FETCH_KINDS: readonly FetchKind[] = ['PAGE', 'ROBOTS', 'SITEMAP', 'FEED'];

function readKind(c: QueueChunk): FetchKind {
  return FETCH_KINDS[c.readLong()] ?? 'PAGE';
}

function kindIndex(kind: FetchKind | undefined): number {
  return kind === undefined || kind === 'PAGE' ? 0 : FETCH_KINDS.indexOf(kind);
}

/** schemas/queue-entry.avsc: url, depth, redirectHops, attempts, discoveredAt, kind, visit (queue format 3). */
export const QUEUE_ENTRY: EntryFormat<QueueEntry> = {
  write(c, e) {
    writeQueueEntry(c, e);
  },
  read(c) {
    const url = c.readString();
    const depth = c.readLong();
    const redirectHops = c.readLong();
    const attempts = c.readLong();
    const discoveredAt = c.readLong();
    const kind = readKind(c);
    return { url, depth, redirectHops, attempts, discoveredAt, kind, visit: c.readLong() };
  },
  skip(c) {
    c.skipString();
    for (let i = 0; i < 6; i++) c.skipLong();
  },
};

/** What a back queue writes of an entry: a QueueEntry, or a FrontEntry on its way from a front queue (attempts 0). */
export type NewEntry = Pick<QueueEntry, 'url' | 'depth' | 'redirectHops' | 'discoveredAt' | 'kind' | 'visit'> & {
  readonly attempts?: number;
};

/** `QUEUE_ENTRY.write` of `e` with its url from char `urlStart` on (and attempts 0 when `e` has none). */
export function writeQueueEntry(c: QueueChunk, e: NewEntry, urlStart = 0): void {
  c.writeStringFrom(e.url, urlStart);
  c.writeLong(e.depth);
  c.writeLong(e.redirectHops);
  c.writeLong(e.attempts ?? 0);
  c.writeLong(e.discoveredAt);
  c.writeLong(kindIndex(e.kind));
  c.writeLong(e.visit ?? 0);
}

/** schemas/front-entry.avsc: url, host, origin, site, depth, redirectHops, discoveredAt, kind, visit (queue format 3). */
export const FRONT_ENTRY: EntryFormat<FrontEntry> = {
  write(c, e) {
    c.writeString(e.url);
    c.writeString(e.host);
    c.writeString(e.origin);
    c.writeString(e.site);
    c.writeLong(e.depth);
    c.writeLong(e.redirectHops);
    c.writeLong(e.discoveredAt);
    c.writeLong(kindIndex(e.kind));
    c.writeLong(e.visit ?? 0);
  },
  read(c) {
    const url = c.readString();
    const host = c.readString();
    const origin = c.readString();
    const site = c.readString();
    const depth = c.readLong();
    const redirectHops = c.readLong();
    const discoveredAt = c.readLong();
    const kind = readKind(c);
    return { url, host, origin, site, depth, redirectHops, discoveredAt, kind, visit: c.readLong() };
  },
  skip(c) {
    for (let i = 0; i < 4; i++) c.skipString();
    for (let i = 0; i < 5; i++) c.skipLong();
  },
};

/** Chunks as store values: their bytes as they are. */
export const chunkSerde = {
  serialize: (chunk: QueueChunk): Buffer => chunk.bytes(),
  deserialize: (bytes: Buffer): QueueChunk => new QueueChunk(bytes),
};
