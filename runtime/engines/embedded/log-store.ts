import { CrawlError } from '../../../core/errors.js';
import type { ConsumedRawRecord, RawRecord } from '../../record.js';
import {
  DEFAULT_ROCKS_MEMORY,
  openRocks,
  type RocksMemory,
  type RocksMemoryBounds,
  type RocksPort,
  type RocksWrite,
} from '../../../state/rocks.js';
import { join } from 'node:path';
import { decodeMark, encodeMark, KeptSegments, type Placement } from './kept-segments.js';
import { TailCache } from './tail-cache.js';
import { decodeRecord, encodeRecords, endKey, positionKey, recordKey, recordPrefix, tpKey } from './log-format.js';

/** Set on a record whose stored frame could not be read; its value holds the raw bytes. */
export const CORRUPT_HEADER = 'x-crawlstream-corrupt';

/** Records to append to one topic partition within a commit. */
export interface Append {
  readonly topic: string;
  readonly partition: number;
  readonly records: readonly RawRecord[];
}

/** A consumer group's next offset to read in one topic partition. */
export interface Position {
  readonly group: string;
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/**
 * What a decoded record in the tail cache holds besides its encoded bytes: the record object, its
 * key and value views and parsed headers (a heap snapshot shows ~400 bytes), counted against the
 * cache's budget so that many small records cost what they take.
 */
const TAIL_RECORD_OVERHEAD = 400;
/** Deletes a truncation writes a batch. */
const TRUNCATE_BATCH = 1_000;

/** The log database's memory bounds. */
const LOG_MEMORY: RocksMemoryBounds = {
  ...DEFAULT_ROCKS_MEMORY,
  memtableBytes: 2 * DEFAULT_ROCKS_MEMORY.memtableBytes,
};

/** The key of the kept segments' committed end (kept-segments.ts). */
const KEPT_MARK_KEY = Buffer.from('k\u0000mark');

/**
 * The embedded engine's durable, partitioned topics, all in one RocksDB so that a commit —
 * appends to any partitions plus consumer positions — is one atomic, fsynced write batch: the
 * embedded equivalent of a Kafka transaction. The records of topics stored apart (`storeApart`:
 * the kept ones) are written once to append-only segments beside it (kept-segments.ts), the
 * batch holding a pointer to each. Single-writer: one process owns a data dir.
 */
export class EmbeddedLog {
  private readonly ends = new Map<string, number>();
  private readonly starts = new Map<string, number>();
  private readonly listeners = new Set<(topic: string, partition: number) => void>();
  private readonly tail = new TailCache();
  private readonly apart = new Set<string>();

  private constructor(
    private db: RocksPort,
    private readonly kept: KeptSegments,
  ) {}

  /** What the log holds in memory: RocksDB's own figures and the tail cache's bytes. */
  memory(): RocksMemory & { tail: number } {
    return { ...this.db.memory(), tail: this.tail.bytes };
  }

  /** Opens the log in `dir`; `segmentBytes`: the kept segments' size (kept-segments.ts, SEGMENT_BYTES). */
  static async open(dir: string, options: { segmentBytes?: number } = {}): Promise<EmbeddedLog> {
    // every record of every topic passes through this one database: memtables twice a task's,
    // so a fast crawl flushes half as often
    const db = await openRocks(dir, LOG_MEMORY);
    try {
      const mark = decodeMark(db.get(KEPT_MARK_KEY));
      return new EmbeddedLog(db, KeptSegments.open(join(dir, 'kept'), mark, options.segmentBytes));
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Stores the records this process appends to `topic` from now on in the kept segments: for
   * topics retention never deletes records of (kept, or without a consumer) and that are not
   * compacted; a kept record in RocksDB would be rewritten by every compaction of its SST file.
   * Reads find records wherever they were stored.
   */
  storeApart(topic: string): void {
    this.apart.add(topic);
  }

  /** Declares a topic; refuses a partition count that differs from the one on disk. */
  ensureTopic(topic: string, partitions: number): void {
    const metaKey = Buffer.from(`m\u0000${topic}`);
    const stored = this.db.get(metaKey);
    if (stored !== undefined && stored.readUInt32BE(0) !== partitions) {
      throw new CrawlError(
        'CS_TOPOLOGY',
        `topic ${topic} has ${stored.readUInt32BE(0)} partitions on disk, the topology declares ${partitions}; use a new --data dir`,
      );
    }
    if (stored === undefined) {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(partitions);
      this.db.write([{ key: metaKey, value: b }], { sync: true });
    }
    for (let p = 0; p < partitions; p++) {
      const tp = tpKey(topic, p);
      const prefix = recordPrefix(topic, p);
      const upper = recordPrefix(topic, p + 1);
      const end = this.storedEnd(topic, p);
      let start = end;
      for (const [k] of this.db.iterate(prefix, upper, { limit: 1 })) start = Number(k.readBigUInt64BE(k.length - 8));
      this.ends.set(tp, end);
      this.starts.set(tp, start);
    }
  }

  /** Where the partition ends on disk: its stored end, or past its last record. */
  private storedEnd(topic: string, partition: number): number {
    // the stored end survives retention deleting every record of the partition
    const storedEnd = this.db.get(endKey(topic, partition));
    let end = storedEnd === undefined ? 0 : Number(storedEnd.readBigUInt64BE(0));
    for (const [k] of this.db.iterate(recordPrefix(topic, partition), recordPrefix(topic, partition + 1), {
      reverse: true,
      limit: 1,
    }))
      end = Math.max(end, Number(k.readBigUInt64BE(k.length - 8)) + 1);
    return end;
  }

  /**
   * Closes the database and opens it again. After a write failed on a full disk RocksDB refuses
   * every write until it is reopened; reopening replays its WAL, which keeps every write that
   * succeeded and drops the failed one. Throws CS_DISK_FULL while the disk is still full (the log
   * is then closed: reopen again), and CS_INTERNAL when a partition ends elsewhere on disk than in
   * memory: a commit reported failed was durable after all (its fsync failed after its append),
   * and only a restart, which reads everything from the disk, goes on from there exactly.
   */
  async reopen(): Promise<void> {
    const old = this.db;
    // a closed native database must never be read (the binding's synchronous reads crash the
    // process): until it is open again, every use of it throws
    this.db = new ClosedRocks(old.path);
    // the close reports the write error that broke the database; the files are released all the same
    await old.close().catch(() => undefined);
    this.db = await openRocks(old.path, LOG_MEMORY);
    const mark = decodeMark(this.db.get(KEPT_MARK_KEY)) ?? { segment: 1, position: 0 };
    if (mark.segment !== this.kept.mark.segment || mark.position !== this.kept.mark.position)
      throw new CrawlError(
        'CS_INTERNAL',
        `the embedded log reopened with its kept segments ending at ${mark.segment}:${mark.position}, not ${this.kept.mark.segment}:${this.kept.mark.position}: a commit that failed was written after all; restart to go on from what the disk holds`,
      );
    for (const [tp, end] of this.ends) {
      const [topic, partition] = tp.split('\u0000') as [string, string];
      const onDisk = this.storedEnd(topic, Number(partition));
      if (onDisk !== end)
        throw new CrawlError(
          'CS_INTERNAL',
          `the embedded log reopened with ${topic}-${partition} ending at ${onDisk}, not ${end}: a commit that failed was written after all; restart to go on from what the disk holds`,
        );
    }
  }

  partitions(topic: string): number {
    const stored = this.db.get(Buffer.from(`m\u0000${topic}`));
    if (stored === undefined) throw new CrawlError('CS_TOPOLOGY', `topic ${topic} does not exist in this data dir`);
    return stored.readUInt32BE(0);
  }

  /** Offset the next appended record of this partition will get. */
  endOffset(topic: string, partition: number): number {
    return this.ends.get(tpKey(topic, partition)) ?? 0;
  }

  /** Earliest offset still stored (older ones were removed by retention). */
  startOffset(topic: string, partition: number): number {
    return this.starts.get(tpKey(topic, partition)) ?? 0;
  }

  /**
   * Keeps the latest appends of every partition of `topic` in memory, for consumers that tail it
   * (the engine's source topics); reads of other offsets and topics go to RocksDB as before.
   */
  cacheTail(topic: string): void {
    for (let p = 0; p < this.partitions(topic); p++) this.tail.enable(tpKey(topic, p), this.endOffset(topic, p));
  }

  /**
   * Up to `max` records from `from` on, in offset order, stopping once their frames reach
   * `maxBytes` (always at least one when there is any). Records may be shared with other readers:
   * do not change them.
   */
  read(topic: string, partition: number, from: number, max: number, maxBytes = Infinity): ConsumedRawRecord[] {
    const out: ConsumedRawRecord[] = [];
    if (from >= this.endOffset(topic, partition)) return out;
    const cached = this.tail.read(tpKey(topic, partition), from, max, maxBytes);
    if (cached !== undefined) return cached;
    let bytes = 0;
    // rows a native call: few when bytes may bind first, so no more is read than is handed out
    const batch = maxBytes === Infinity ? undefined : Math.min(max, 16);
    for (const [k, v] of this.db.iterate(recordKey(topic, partition, from), recordPrefix(topic, partition + 1), {
      limit: max,
      ...(batch !== undefined ? { batch } : {}),
    })) {
      const offset = Number(k.readBigUInt64BE(k.length - 8));
      let stored = v;
      try {
        stored = KeptSegments.isPointer(v) ? this.kept.read(v) : v;
        out.push({ ...decodeRecord(stored, topic, partition, offset), topic, partition, offset });
      } catch (err) {
        // handed on as an undecodable value so the engine dead-letters it instead of stalling
        out.push({
          key: Buffer.alloc(0),
          value: v,
          timestamp: 0,
          headers: { [CORRUPT_HEADER]: (err as Error).message },
          topic,
          partition,
          offset,
        });
      }
      bytes += stored.length;
      if (bytes >= maxBytes) break;
    }
    return out;
  }

  committedPosition(group: string, topic: string, partition: number): number {
    const raw = this.db.get(positionKey(group, topic, partition));
    return raw === undefined ? 0 : Number(raw.readBigUInt64BE(0));
  }

  /**
   * Appends and moves positions in one atomic, fsynced batch. Returns each partition's first new
   * offset. On failure nothing is visible and the in-memory ends are unchanged.
   */
  commit(appends: readonly Append[], positions: readonly Position[]): Map<string, number> {
    const batch: RocksWrite[] = [];
    // each record's frame, at its index in the batch; a record stored apart has a pointer there
    const all: RawRecord[] = [];
    for (const a of appends) for (const r of a.records) all.push(r);
    const frames = encodeRecords(all);
    const apart: number[] = [];
    const nextEnds = new Map<string, number>();
    const bases = new Map<string, number>();
    const tails: { tp: string; first: number; from: number; to: number; append: Append }[] = [];
    for (const a of appends) {
      if (a.records.length === 0) continue;
      const tp = tpKey(a.topic, a.partition);
      if (!this.ends.has(tp))
        throw new CrawlError('CS_TOPOLOGY', `append to undeclared partition ${a.topic}-${a.partition}`);
      let next = nextEnds.get(tp) ?? this.ends.get(tp)!;
      if (!bases.has(tp)) bases.set(tp, next);
      tails.push({ tp, first: next, from: batch.length, to: batch.length + a.records.length, append: a });
      const stored = this.apart.has(a.topic);
      for (let i = 0; i < a.records.length; i++) {
        if (stored) apart.push(batch.length);
        batch.push({ key: recordKey(a.topic, a.partition, next++), value: frames[batch.length]! });
      }
      nextEnds.set(tp, next);
    }
    let placement: Placement | undefined;
    if (apart.length > 0) {
      placement = this.kept.place(apart.map((i) => frames[i]!));
      for (let j = 0; j < apart.length; j++)
        batch[apart[j]!] = { key: batch[apart[j]!]!.key, value: placement.pointers[j]! };
      batch.push({ key: KEPT_MARK_KEY, value: encodeMark(placement.mark) });
    }
    for (const [tp, end] of nextEnds) {
      const [topic, partition] = tp.split('\u0000') as [string, string];
      const b = Buffer.allocUnsafe(8);
      b.writeBigUInt64BE(BigInt(end));
      batch.push({ key: endKey(topic, Number(partition)), value: b });
    }
    for (const p of positions) {
      const b = Buffer.allocUnsafe(8);
      b.writeBigUInt64BE(BigInt(p.offset));
      batch.push({ key: positionKey(p.group, p.topic, p.partition), value: b });
    }
    this.db.write(batch, { sync: true });
    if (placement !== undefined) this.kept.advance(placement);
    for (const [tp, end] of nextEnds) this.ends.set(tp, end);
    for (const t of tails)
      if (this.tail.caches(t.tp)) this.cacheAppend(t.tp, t.first, t.append, frames.slice(t.from, t.to));
    for (const a of appends) if (a.records.length > 0) for (const l of this.listeners) l(a.topic, a.partition);
    return bases;
  }

  /**
   * Hands a committed append to the tail cache: its records as they were appended, at their
   * offsets. A key or value that is a view of a larger buffer (a small one is a slice of an 8 KiB
   * pool slab shared with whatever else was allocated beside it; `written`, the frames, are views
   * of the commit's one buffer) is copied, all into one buffer of the append's own, so the cache
   * pins no more than it holds (a heap snapshot once found ~23 MiB of slabs behind ~2.4 MiB of
   * cached records). A value in a buffer of its own (a page) is cached as it is, not copied.
   * Sizes are the frames' (what the cache's bound counts).
   */
  private cacheAppend(tp: string, first: number, a: Append, written: readonly Buffer[]): void {
    let total = 0;
    for (const r of a.records) {
      if (!ownsBuffer(r.key)) total += r.key.length;
      if (r.value !== null && !ownsBuffer(r.value)) total += r.value.length;
    }
    const slab = total > 0 ? Buffer.allocUnsafeSlow(total) : undefined;
    let at = 0;
    const own = (b: Buffer): Buffer => {
      if (ownsBuffer(b)) return b;
      const length = b.copy(slab!, at);
      const copy = slab!.subarray(at, at + length);
      at += length;
      return copy;
    };
    const records: ConsumedRawRecord[] = [];
    const sizes: number[] = [];
    for (let i = 0; i < a.records.length; i++) {
      const r = a.records[i]!;
      const headers = r.headers !== undefined && Object.keys(r.headers).length > 0 ? r.headers : undefined;
      records.push({
        key: own(r.key),
        value: r.value === null ? null : own(r.value),
        timestamp: r.timestamp,
        ...(headers !== undefined ? { headers } : {}),
        topic: a.topic,
        partition: a.partition,
        offset: first + i,
      });
      sizes.push(written[i]!.length + TAIL_RECORD_OVERHEAD);
    }
    this.tail.appended(tp, first, records, sizes);
  }

  /**
   * Deletes records below `offset` (retention); positions are untouched. The keys are made from the
   * offsets, not read: iterating a partition's keys reads the blocks of its ~25 KB records (most of
   * truncation's CPU on real pages). A topic truncated this way is never compacted, so every offset
   * in the range has its record; deleting one that had none would only leave a tombstone.
   */
  truncateBefore(topic: string, partition: number, offset: number): void {
    const tp = tpKey(topic, partition);
    const start = this.starts.get(tp) ?? 0;
    const upTo = Math.min(offset, this.endOffset(topic, partition));
    if (upTo <= start) return;
    for (let from = start; from < upTo; from += TRUNCATE_BATCH) {
      const batch: RocksWrite[] = [];
      for (let o = from; o < Math.min(upTo, from + TRUNCATE_BATCH); o++)
        batch.push({ key: recordKey(topic, partition, o), value: null });
      this.db.write(batch);
    }
    this.starts.set(tp, upTo);
    this.tail.dropBelow(tp, upTo);
  }

  /** Deletes single records (compaction); reads skip the gaps, offsets never move. Not fsynced: a lost delete only keeps a record. */
  deleteRecords(topic: string, partition: number, offsets: readonly number[]): void {
    this.db.write(offsets.map((o) => ({ key: recordKey(topic, partition, o), value: null })));
    this.tail.forget(tpKey(topic, partition), this.endOffset(topic, partition));
  }

  /** Called after every commit that appended to (topic, partition). */
  onAppend(listener: (topic: string, partition: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    this.kept.close();
    await this.db.close();
  }
}

/** The log's database while it is closed between a failed write and its reopening. */
class ClosedRocks implements RocksPort {
  constructor(readonly path: string) {}

  private closed(): never {
    throw new CrawlError(
      'CS_STORE',
      `the embedded log at ${this.path} is closed until it reopens on a disk with space`,
    );
  }

  get(): Buffer | undefined {
    return this.closed();
  }
  getMany(): (Buffer | undefined)[] {
    return this.closed();
  }
  write(): void {
    this.closed();
  }
  iterate(): IterableIterator<[Buffer, Buffer]> {
    return this.closed();
  }
  property(): string | undefined {
    return undefined;
  }
  memory(): RocksMemory {
    return { memtables: 0, blockCache: 0, tableReaders: 0 };
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Whether `b` is the whole of an ArrayBuffer of its own (a large one: Node pools only small
 * allocations), so holding it holds nothing else; such a record (a 24 KiB page) is cached as
 * written, without a copy.
 */
function ownsBuffer(b: Buffer): boolean {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength;
}
