import type { RocksPort, RocksWrite } from './rocks.js';
import type { Serde } from '../core/serde.js';
import type { ChangeloggedStore, KeyValueStore } from './state-store.js';

/** A write waiting for the commit; encoded once, at the commit, however often it was overwritten. */
interface Pending<V> {
  key: Buffer;
  deleted: boolean;
  decoded: V | undefined;
  encoded: Buffer | undefined;
}

/** The pending map's key of an encoded key; without `toString`'s argument checks. */
const latin1 = (b: Buffer): string =>
  (b as Buffer & { latin1Slice(start: number, end: number): string }).latin1Slice(0, b.length);

const CHECKPOINT_PREFIX = Buffer.from('\u0000checkpoint\u0000');

/** The RocksDB key range [gte, lt) holding the committed entries of store `name` (each key is the prefix + the store's key). */
export function storeKeyRange(name: string): { gte: Buffer; lt: Buffer } {
  return { gte: Buffer.from(`s\u0000${name}\u0000`), lt: Buffer.from(`s\u0000${name}\u0001`) };
}

/** The RocksDB key of store `name`'s checkpoint (8 bytes, big-endian: the next changelog offset to apply). */
export function checkpointKeyOf(name: string): Buffer {
  return Buffer.concat([CHECKPOINT_PREFIX, Buffer.from(name)]);
}

/**
 * A KeyValueStore in a task's RocksDB under the prefix `s\0<name>\0`. Writes wait in memory
 * until the runtime commits them (after the changelog is durable), so local state never runs
 * ahead of the changelog; the checkpoint key records how far it has been applied.
 *
 * Ownership: a value read back while its write is pending is the very object that was put; the
 * store encodes it at commit time, so put it back after changing it (the frontier always does).
 */
export class RocksKeyValueStore<K, V> implements KeyValueStore<K, V>, ChangeloggedStore {
  private readonly prefix: Buffer;
  private readonly end: Buffer;
  private readonly checkpointKey: Buffer;
  private pending = new Map<string, Pending<V>>();
  /**
   * The pending writes in key order, built by the first `range` over many of them and kept until
   * the next commit; keys first written after it was built are inserted in order, or, past
   * SORTED_INSERT_MAX, wait unsorted in `unsorted`.
   */
  private sorted: Pending<V>[] | undefined;
  private unsorted: Pending<V>[] = [];

  constructor(
    readonly name: string,
    private readonly db: RocksPort,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
  ) {
    const range = storeKeyRange(name);
    this.prefix = range.gte;
    this.end = range.lt;
    this.checkpointKey = checkpointKeyOf(name);
  }

  get(key: K): V | undefined {
    const raw = this.keySerde.serialize(key);
    const p = this.pending.get(latin1(raw));
    if (p) return p.deleted ? undefined : p.decoded;
    const stored = this.db.get(Buffer.concat([this.prefix, raw]));
    return stored === undefined ? undefined : this.valueSerde.deserialize(stored);
  }

  getMany(keys: readonly K[]): (V | undefined)[] {
    const out: (V | undefined)[] = new Array(keys.length);
    const misses: Buffer[] = [];
    const missAt: number[] = [];
    const checkPending = this.pending.size > 0;
    for (let i = 0; i < keys.length; i++) {
      const raw = this.keySerde.serialize(keys[i]!);
      const p = checkPending ? this.pending.get(latin1(raw)) : undefined;
      if (p) {
        out[i] = p.deleted ? undefined : p.decoded;
        continue;
      }
      misses.push(Buffer.concat([this.prefix, raw]));
      missAt.push(i);
    }
    const stored = this.db.getMany(misses);
    for (let j = 0; j < stored.length; j++) {
      const raw = stored[j];
      out[missAt[j]!] = raw === undefined ? undefined : this.valueSerde.deserialize(raw);
    }
    return out;
  }

  put(key: K, value: V): void {
    this.write(this.keySerde.serialize(key), false, value);
  }

  delete(key: K): void {
    this.write(this.keySerde.serialize(key), true, undefined);
  }

  /** A key written again keeps its one pending entry (changed in place), so the sorted overlay stays valid. */
  private write(raw: Buffer, deleted: boolean, decoded: V | undefined): void {
    const id = latin1(raw);
    const p = this.pending.get(id);
    if (p !== undefined) {
      p.deleted = deleted;
      p.decoded = decoded;
      p.encoded = undefined;
      return;
    }
    const fresh: Pending<V> = { key: raw, deleted, decoded, encoded: undefined };
    this.pending.set(id, fresh);
    if (this.sorted === undefined) return;
    if (this.sorted.length <= SORTED_INSERT_MAX) this.sorted.splice(lowerBound(this.sorted, raw), 0, fresh);
    else this.unsorted.push(fresh);
  }

  /**
   * Pending writes with from <= key < to, in key order. Few pending writes are filtered as they
   * are; many are kept sorted across calls (until the commit) and cut by binary search, so a
   * task that ranges often between commits (the near-duplicate index: 20 ranges a page) does not
   * compare every pending key on every call.
   */
  private overlay(from: Buffer, to: Buffer): Pending<V>[] {
    const within = (p: Pending<V>) => Buffer.compare(p.key, from) >= 0 && Buffer.compare(p.key, to) < 0;
    if (this.pending.size < SORTED_OVERLAY_MIN) return [...this.pending.values()].filter(within).sort(byKey);
    if (this.sorted === undefined || this.unsorted.length > UNSORTED_MAX) {
      this.sorted = [...this.pending.values()].sort(byKey);
      this.unsorted = [];
    }
    const sorted = this.sorted;
    const out = sorted.slice(lowerBound(sorted, from), lowerBound(sorted, to));
    const late = this.unsorted.filter(within);
    return late.length === 0 ? out : out.concat(late).sort(byKey);
  }

  *range(gte: K, lt: K, limit?: number): IterableIterator<[K, V]> {
    const from = this.keySerde.serialize(gte);
    const to = this.keySerde.serialize(lt);
    const overlay = this.overlay(from, to);
    let i = 0;
    for (const [fullKey, value] of this.db.iterate(
      Buffer.concat([this.prefix, from]),
      Buffer.concat([this.prefix, to]),
      limit !== undefined ? { batch: limit } : {},
    )) {
      const key = fullKey.subarray(this.prefix.length);
      while (i < overlay.length && Buffer.compare(overlay[i]!.key, key) < 0) {
        const p = overlay[i++]!;
        if (!p.deleted) yield [this.keySerde.deserialize(p.key), p.decoded as V];
      }
      if (i < overlay.length && Buffer.compare(overlay[i]!.key, key) === 0) {
        const p = overlay[i++]!;
        if (!p.deleted) yield [this.keySerde.deserialize(p.key), p.decoded as V];
        continue;
      }
      yield [this.keySerde.deserialize(key), this.valueSerde.deserialize(value)];
    }
    for (; i < overlay.length; i++) {
      const p = overlay[i]!;
      if (!p.deleted) yield [this.keySerde.deserialize(p.key), p.decoded as V];
    }
  }

  private encoded(p: Pending<V>): Buffer | null {
    return p.deleted ? null : (p.encoded ??= this.valueSerde.serialize(p.decoded as V));
  }

  pendingChanges(): { key: Buffer; value: Buffer | null }[] {
    return [...this.pending.values()].map((p) => ({ key: p.key, value: this.encoded(p) }));
  }

  pendingCount(): number {
    return this.pending.size;
  }

  applyCommitted(nextOffset: number): void {
    const pending = [...this.pending.values()];
    const n = pending.length;
    const order = keyOrder(pending);
    // full keys (prefix + key) as views of one buffer: no allocation per key
    const pl = this.prefix.length;
    let bytes = n * pl;
    for (let i = 0; i < n; i++) bytes += pending[i]!.key.length;
    const slab = Buffer.allocUnsafe(bytes);
    const batch: RocksWrite[] = new Array(n + 1);
    let at = 0;
    for (let j = 0; j < n; j++) {
      const p = pending[order[j]!]!;
      const start = at;
      slab.set(this.prefix, at);
      slab.set(p.key, at + pl);
      at += pl + p.key.length;
      batch[j] = { key: slab.subarray(start, at), value: this.encoded(p) };
    }
    batch[n] = { key: this.checkpointKey, value: offsetBytes(nextOffset) };
    // no fsync: the changelog is the durable copy; a lost tail is replayed from the checkpoint
    this.db.write(batch);
    this.resetPending();
  }

  discardPending(): void {
    this.resetPending();
  }

  private resetPending(): void {
    this.pending = new Map();
    this.sorted = undefined;
    this.unsorted = [];
  }

  checkpoint(): number {
    const raw = this.db.get(this.checkpointKey);
    return raw === undefined ? 0 : Number(raw.readBigUInt64BE(0));
  }

  restore(records: { key: Buffer; value: Buffer | null }[], nextOffset: number): void {
    const batch: RocksWrite[] = records.map((r) => ({ key: Buffer.concat([this.prefix, r.key]), value: r.value }));
    batch.push({ key: this.checkpointKey, value: offsetBytes(nextOffset) });
    this.db.write(batch);
  }

  committedRawMany(keys: readonly Buffer[]): (Buffer | undefined)[] {
    return this.db.getMany(keys.map((key) => Buffer.concat([this.prefix, key])));
  }

  *entries(): IterableIterator<[Buffer, Buffer]> {
    for (const [k, v] of this.db.iterate(this.prefix, this.end)) yield [k.subarray(this.prefix.length), v];
  }

  flush(): void {
    // writes become durable through the changelog at commit; nothing to do here
  }

  close(): void {
    this.resetPending();
  }
}

/** From this many pending writes on, `range` keeps them sorted between calls. */
const SORTED_OVERLAY_MIN = 64;
/** Up to this many sorted pending writes, a new key is inserted in place (a binary search and a move of pointers). */
const SORTED_INSERT_MAX = 8_192;
/** Beyond that, keys written after the sort that `range` filters one by one before it sorts again. */
const UNSORTED_MAX = 256;

const byKey = (a: Pending<unknown>, b: Pending<unknown>): number => Buffer.compare(a.key, b.key);

/** The index of the first of `sorted` whose key is >= `key`. */
function lowerBound(sorted: readonly Pending<unknown>[], key: Buffer): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (Buffer.compare(sorted[mid]!.key, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const MAX_SORTED = 2 ** 20;

/**
 * Indexes of `pending` in the order of their keys' first 4 bytes after the prefix all of them
 * share (ties in any order): RocksDB's memtable inserts keys in order about twice as fast as
 * random ones. Sorted as packed numbers, natively; left as they are past MAX_SORTED writes.
 */
function keyOrder(pending: readonly Pending<unknown>[]): Uint32Array {
  const n = pending.length;
  const out = new Uint32Array(n);
  if (n < 2 || n > MAX_SORTED) {
    for (let i = 0; i < n; i++) out[i] = i;
    return out;
  }
  const first = pending[0]!.key;
  let common = first.length;
  for (let i = 1; i < n && common > 0; i++) {
    const k = pending[i]!.key;
    let j = 0;
    while (j < common && j < k.length && k[j] === first[j]) j++;
    common = j;
  }
  const packed = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const k = pending[i]!.key;
    const c = common;
    const head = (k[c] ?? 0) * 2 ** 24 + (k[c + 1] ?? 0) * 2 ** 16 + (k[c + 2] ?? 0) * 2 ** 8 + (k[c + 3] ?? 0);
    packed[i] = head * MAX_SORTED + i;
  }
  packed.sort();
  for (let j = 0; j < n; j++) out[j] = packed[j]! % MAX_SORTED;
  return out;
}

function offsetBytes(offset: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(offset));
  return b;
}
