import { InvalidOptionError } from '../core/errors.js';
import { u32be } from '../core/hashing.js';
import { BlockCache } from './block-cache.js';
import {
  ALL_FROM,
  ALL_TO,
  META_KEY,
  MIN_BITS,
  NO_LEGACY_KEY,
  type SweepState,
  decodeSweepState,
  encodeSweepState,
  isBlockKey,
  isRunKey,
  layoutBits,
  blockId,
  blockKey,
  blockKeyOf,
  runKey,
  runSeq,
} from './seen-layout.js';
import { byValue, inSorted, lowerBound, mergeSorted, BlockArena } from './sorted-fingerprints.js';
import { type FingerprintScratch, UnmergedFingerprints } from './unmerged-fingerprints.js';
import { WarmScan } from './seen-warm-scan.js';
import { SweepPacing, type SweepPacingOptions } from './sweep-pacing.js';

/**
 * The key-value store under the seen-set's exact layer (values are opaque bytes). A
 * `KeyValueStore<Buffer, Buffer>` (RocksDB, changelogged) is one; reads must see this task's
 * uncommitted writes.
 */
export interface FingerprintStore {
  get(key: Buffer): Buffer | undefined;
  getMany(keys: readonly Buffer[]): (Buffer | undefined)[];
  put(key: Buffer, value: Buffer): void;
  delete(key: Buffer): void;
  /**
   * Every key with gte <= key < lt in key order, uncommitted writes included. `readAhead`: how
   * many entries to read from disk at a time (a hint: a short scan that may stop early asks for few).
   */
  range(gte: Buffer, lt: Buffer, readAhead?: number): IterableIterator<[Buffer, Buffer]>;
}

export interface ExactLayerOptions extends SweepPacingOptions {
  /** Fingerprints the partition is expected to hold: sizes the first block layout. */
  readonly expectedCount: number;
  /** Fingerprints per block the layout aims at when it is (re)sized. Default 512 (4 KiB blocks). */
  readonly blockTarget?: number;
  /** RAM for blocks, so a seen URL is confirmed (and a sweep merges) without a store read. Default 128 MiB: every block of ~15 M fingerprints. */
  readonly blockCacheBytes?: number;
}

/** Gauges of the exact layer. */
export interface ExactLayerStats {
  /** Fingerprints in RAM that are not yet merged into their block (they are in stored runs). */
  readonly unmerged: number;
  /** Run records in the store (one per `flush` with new fingerprints, deleted after a full sweep). */
  readonly runs: number;
  readonly blockBits: number;
  readonly sweeps: number;
  /** Fingerprints stored one key each by versions before runs and blocks; read, never rewritten. */
  readonly legacy: number;
  /** RAM held by the unmerged fingerprints' chains (arrays as allocated). */
  readonly ramBytes: number;
  /** Bytes of blocks cached, and block lookups answered from the cache / from the store. */
  readonly blockCacheBytes: number;
  readonly blockCacheHits: number;
  readonly blockCacheMisses: number;
  /** The warm scan has not yet read every fingerprint stored at open. */
  readonly warming: boolean;
  /** Store keys (blocks, runs, legacy fingerprints) the warm scan has read. */
  readonly warmKeys: number;
  /** Times a check or flush came before the runs were read, and finished reading them at once. */
  readonly runsForced: number;
}

const MAX_RAM_BITS = 24;
const READ_AHEAD = 256;
// a block the read-ahead skipped because it was cached
const NOT_READ = Buffer.alloc(0);

/**
 * The exact layer of the seen-set: every recorded 8-byte fingerprint, in a changelogged store, laid
 * out so that recording one costs a few bytes of a write instead of a store key of its own.
 *
 * - A **run** (`r` + sequence) holds the fingerprints recorded by one `flush`, in any order.
 * - A **block** (`p` + bits + index) holds, sorted, every merged fingerprint whose top `bits` bits
 *   are `index`. Blocks are sized for about `blockTarget` fingerprints each.
 * - In RAM, every fingerprint not yet merged into its block, chained per block: "seen?" is a walk of
 *   one short chain, then (if not there) one binary search in one block read from the store.
 * - A **sweep** merges the unmerged fingerprints into the blocks one block at a time, paced so a full
 *   sweep completes within `SweepPacing`'s span of new fingerprints;
 *   at its end every run written before it began is deleted. A sweep may start with more block
 *   bits than the last (the count grew): each block of the old layout is split as the sweep passes
 *   it.
 *
 * All changes are store writes, so the store (and its changelog) alone rebuilds this state: `open`
 * reads the layout record, then `warm` steps (`WarmScan`) read runs, blocks and legacy keys and
 * re-chain every run's fingerprints (those already merged are merged again, harmlessly).
 * Fingerprints that older versions stored one per 8-byte key are still found (one extra batched
 * read for what the blocks do not hold; for every miss until a scan has shown there are none) but
 * never moved.
 *
 * Ownership: bytes passed to `stage` are copied; `contains` keeps nothing. Not thread-safe; one
 * instance per task.
 */
export class ExactFingerprints {
  private readonly blockTarget: number;
  private readonly pacing: SweepPacing;
  private readonly firstBits: number;
  // the layout and the sweep's position, as stored under META_KEY
  private sweep: SweepState = { oldBits: 0, newBits: 0, cursor: 0, sweepStart: 0, nextSeq: 0, sweeps: 0 };
  private runs: number[] = [];
  private legacy = 0;
  private credit = 0;
  // chained per bucket of the top bits (>= newBits): one or two entries per bucket, and a block's
  // buckets are contiguous
  private unmerged = new UnmergedFingerprints(MIN_BITS);
  // scratch: the unmerged fingerprints of the block being merged
  private readonly fresh: FingerprintScratch = { hi: new Uint32Array(1024), lo: new Uint32Array(1024) };
  private readonly arena = new BlockArena();
  // fingerprints staged since the last flush, back to back
  private staged = Buffer.allocUnsafe(8 * 1024);
  private stagedCount = 0;
  private readonly cache: BlockCache;
  // blocks of the old layout read ahead of the sweep, in one range read: indexes [aheadFrom, aheadTo)
  private ahead: (Buffer | undefined)[] = [];
  private aheadFrom = 0;
  private aheadTo = 0;
  // reads the store once after `open`, a step at a time, handing every fingerprint to `onStored`
  private readonly scan: WarmScan;
  private runsForced = 0;
  private onStored: ((bytes: Buffer, offset: number) => void) | undefined;
  // a complete scan found no legacy keys (stored marker, or this task's scan): misses need no legacy read
  private noLegacy = false;

  constructor(
    private readonly store: FingerprintStore,
    options: ExactLayerOptions,
  ) {
    this.blockTarget = options.blockTarget ?? 512;
    if (!Number.isInteger(this.blockTarget) || this.blockTarget < 1)
      throw new InvalidOptionError(`blockTarget must be a positive integer, got ${this.blockTarget}`);
    this.pacing = new SweepPacing(options);
    const cacheBytes = options.blockCacheBytes ?? 128 * 2 ** 20;
    if (!Number.isInteger(cacheBytes) || cacheBytes < 0)
      throw new InvalidOptionError(`blockCacheBytes must be a whole number, got ${cacheBytes}`);
    this.cache = new BlockCache(cacheBytes);
    this.scan = new WarmScan((gte, lt, readAhead) => store.range(gte, lt, readAhead));
    this.firstBits = this.bitsFor(options.expectedCount);
  }

  /** RAM held by the unmerged fingerprints' chains (as `stats().ramBytes`, without building the rest). */
  get ramBytes(): number {
    return this.unmerged.byteLength;
  }

  /** The block cache's budget (`blockCacheBytes` until a memory plan resizes it). */
  get cacheBytes(): number {
    return this.cache.maxBytes;
  }

  /** A new budget for the block cache (`BlockCache.resize`); whatever it is, answers stay exact. */
  resizeCache(bytes: number): void {
    this.cache.resize(bytes);
  }

  /**
   * Opens the layout without reading any fingerprint: O(1) store reads (the layout record and
   * the legacy marker). The stored fingerprints are then read by `warm` steps, each handed to
   * `each(bytes, offset)` (blocks, runs and legacy keys; a fingerprint in both a run and a block
   * comes twice): runs first (they are chained into RAM: until they all are, "not recorded" cannot
   * be answered, so `contains` and `flush` finish that phase at once), then blocks and legacy keys
   * (needed by no answer: `contains` reads blocks from the store anyway). `count` (the recorded
   * count, if known) sizes the RAM index. Call once, before anything else.
   */
  open(count: number, each: (bytes: Buffer, offset: number) => void): void {
    const meta = decodeSweepState(this.store.get(META_KEY));
    this.sweep = meta ?? {
      oldBits: this.firstBits,
      newBits: this.firstBits,
      cursor: 0,
      sweepStart: 0,
      nextSeq: 0,
      sweeps: 0,
    };
    // room for what a sweep holds at most (half its span, and a half more): the runs read at a
    // reopen fill it without the copies of a doubling array
    this.unmerged = new UnmergedFingerprints(this.ramBitsFor(count), 0.75 * this.sweepSpan(count));
    this.runs = [];
    this.legacy = 0;
    this.noLegacy = this.store.get(NO_LEGACY_KEY) !== undefined;
    this.onStored = each;
    this.scan.start();
    // a new partition has nothing to read (one seek tells)
    if (meta === undefined && this.isEmpty()) {
      this.scan.skip();
      this.onStored = undefined;
      this.noLegacy = true;
    }
  }

  private isEmpty(): boolean {
    for (const _ of this.store.range(ALL_FROM, ALL_TO, 1)) return false;
    return true;
  }

  /** `open`, then every warm step at once (O(stored fingerprints)). Returns how many `each` calls that made. */
  load(count: number, each: (bytes: Buffer, offset: number) => void): number {
    let calls = 0;
    this.open(count, (bytes, offset) => {
      calls++;
      each(bytes, offset);
    });
    this.warm(Infinity);
    return calls;
  }

  /**
   * Reads stored fingerprints for about `budgetMs` (at least one store key, so every call makes
   * progress) from where the last step stopped. Returns true once every fingerprint stored at
   * `open` has been handed to `each` (then `each` is dropped and further calls return true at once).
   * Safe between any other calls: what a sweep moves meanwhile only moves to keys the scan has not
   * reached yet (a new layout's block keys sort after the old one's), and runs written after the run
   * phase hold staged fingerprints, which the caller saw already.
   */
  warm(budgetMs: number): boolean {
    if (!this.scan.step(performance.now() + budgetMs, (key, value) => this.warmKey(key, value))) return false;
    if (this.onStored !== undefined) {
      this.onStored = undefined;
      // legacy keys are never written again: one complete scan without any settles it for good
      if (this.legacy === 0 && !this.noLegacy) this.store.put(NO_LEGACY_KEY, Buffer.alloc(1));
      this.noLegacy = this.legacy === 0;
    }
    return true;
  }

  /** True once every stored fingerprint went through `warm` (or `load`). */
  get warmed(): boolean {
    return this.scan.done;
  }

  /**
   * True once the warm scan has read every stored run, so `contains`, `stage` and `flush` read
   * none: before that, the first of them reads the rest of the runs at once (O(unmerged
   * fingerprints), tens of seconds at tens of millions).
   */
  get runsRead(): boolean {
    return this.scan.runsRead;
  }

  /** Calls `each` for every stored fingerprint, as `load` does, without touching RAM state. */
  forEach(each: (bytes: Buffer, offset: number) => void): number {
    let calls = 0;
    for (const [key, value] of this.store.range(ALL_FROM, ALL_TO)) {
      if (key.length === 8) {
        each(key, 0);
        calls++;
      } else if (isBlockKey(key) || isRunKey(key)) {
        for (let o = 0; o + 8 <= value.length; o += 8) each(value, o);
        calls += value.length >>> 3;
      }
    }
    return calls;
  }

  /**
   * For each index i in `at`: whether the fingerprint at bytes 8i..8i+8 of `fps` is recorded
   * (staged ones included). Store reads: one batched read of the blocks needed.
   */
  contains(fps: Buffer, at: readonly number[]): boolean[] {
    this.ensureRuns();
    const n = at.length;
    const out: boolean[] = new Array(n).fill(false);
    const blockIds: number[] = [];
    const blockSlot = new Map<number, number>();
    const waiting: number[] = [];
    const slotOf: number[] = [];
    for (let w = 0; w < n; w++) {
      const o = 8 * at[w]!;
      const h = u32be(fps, o);
      const l = u32be(fps, o + 4);
      if (this.unmerged.has(h, l)) {
        out[w] = true;
        continue;
      }
      const [bits, index] = this.blockOf(h);
      const id = blockId(bits, index);
      let slot = blockSlot.get(id);
      if (slot === undefined) {
        slot = blockIds.length;
        blockSlot.set(id, slot);
        blockIds.push(id);
      }
      waiting.push(w);
      slotOf.push(slot);
    }
    if (waiting.length === 0) return out;
    const blocks: (Buffer | undefined)[] = new Array(blockIds.length);
    const missing: number[] = [];
    for (let k = 0; k < blockIds.length; k++) {
      blocks[k] = this.cache.get(blockIds[k]!);
      if (blocks[k] === undefined) missing.push(k);
    }
    if (missing.length > 0) {
      const read = this.store.getMany(missing.map((k) => blockKeyOf(blockIds[k]!)));
      for (let m = 0; m < missing.length; m++) {
        blocks[missing[m]!] = read[m];
        this.cache.add(blockIds[missing[m]!]!, read[m]);
      }
    }
    const legacyAsk: number[] = [];
    for (let k = 0; k < waiting.length; k++) {
      const w = waiting[k]!;
      const block = blocks[slotOf[k]!];
      const o = 8 * at[w]!;
      if (block !== undefined && inSorted(block, u32be(fps, o), u32be(fps, o + 4))) out[w] = true;
      else if (this.legacy > 0 || !(this.noLegacy || this.warmed)) legacyAsk.push(w);
    }
    if (legacyAsk.length > 0) {
      const found = this.store.getMany(legacyAsk.map((w) => fps.subarray(8 * at[w]!, 8 * at[w]! + 8)));
      for (let j = 0; j < legacyAsk.length; j++) if (found[j] !== undefined) out[legacyAsk[j]!] = true;
    }
    return out;
  }

  /** Records the fingerprint at bytes offset..offset+8 of `fps` (copied): `contains` sees it at once; the store at the next `flush`. */
  stage(fps: Uint8Array, offset: number): void {
    this.ensureRuns();
    this.unmerged.add(u32be(fps, offset), u32be(fps, offset + 4));
    if (this.staged.length < 8 * this.stagedCount + 8) {
      const grown = Buffer.allocUnsafe(2 * this.staged.length);
      this.staged.copy(grown, 0, 0, 8 * this.stagedCount);
      this.staged = grown;
    }
    const to = this.staged;
    const at = 8 * this.stagedCount++;
    for (let k = 0; k < 8; k++) to[at + k] = fps[offset + k]!;
  }

  /**
   * Writes the staged fingerprints as one run, then merges as many blocks as the pace asks for
   * (`count` is the total recorded, for the pace and the next layout). No-op when nothing is staged.
   */
  flush(count: number): void {
    const staged = this.stagedCount;
    if (staged === 0) return;
    // a sweep must see every unmerged fingerprint: it deletes the runs it merged
    this.ensureRuns();
    this.stagedCount = 0;
    this.store.put(runKey(this.sweep.nextSeq), Buffer.from(this.staged.subarray(0, 8 * staged)));
    this.runs.push(this.sweep.nextSeq++);
    this.credit += (staged * 2 ** this.sweep.newBits) / this.sweepSpan(count);
    while (this.credit >= 1) {
      this.credit -= 1;
      this.mergeBlock(count);
    }
    this.store.put(META_KEY, encodeSweepState(this.sweep));
  }

  stats(): ExactLayerStats {
    const ramBytes = this.unmerged.byteLength;
    return {
      unmerged: this.unmerged.size,
      runs: this.runs.length,
      blockBits: this.sweep.newBits,
      sweeps: this.sweep.sweeps,
      legacy: this.legacy,
      ramBytes,
      blockCacheBytes: this.cache.size,
      blockCacheHits: this.cache.hits,
      blockCacheMisses: this.cache.misses,
      warming: !this.warmed,
      warmKeys: this.scan.keys,
      runsForced: this.runsForced,
    };
  }

  /** One stored key of the warm scan: every fingerprint to `onStored`; runs also chained into RAM. */
  private warmKey(key: Buffer, value: Buffer): void {
    const each = this.onStored!;
    if (key.length === 8) {
      each(key, 0);
      this.legacy++;
    } else if (isBlockKey(key)) {
      for (let o = 0; o + 8 <= value.length; o += 8) each(value, o);
    } else if (isRunKey(key)) {
      for (let o = 0; o + 8 <= value.length; o += 8) {
        each(value, o);
        this.unmerged.add(value.readUInt32BE(o), value.readUInt32BE(o + 4));
      }
      const seq = runSeq(key);
      this.runs.push(seq); // key order is sequence order
      if (seq >= this.sweep.nextSeq) this.sweep.nextSeq = seq + 1;
    }
  }

  /** Finishes the run phase of the warm scan: every unmerged fingerprint is then in RAM. */
  private ensureRuns(): void {
    if (this.scan.runsRead) return;
    this.scan.finishRuns((key, value) => this.warmKey(key, value));
    this.runsForced++;
  }

  /** Which stored block would hold a fingerprint whose top 32 bits are `h`: [bits, index]. */
  private blockOf(h: number): [number, number] {
    const j = h >>> (32 - this.sweep.newBits);
    return j < this.sweep.cursor ? [this.sweep.newBits, j] : [this.sweep.oldBits, h >>> (32 - this.sweep.oldBits)];
  }

  /** Merges the unmerged fingerprints of block `cursor` (new layout) into it, then moves on. */
  private mergeBlock(count: number): void {
    const j = this.sweep.cursor;
    const split = this.sweep.newBits - this.sweep.oldBits;
    const oldIndex = j >>> split;
    const oldKey = blockKey(this.sweep.oldBits, oldIndex);
    let old = this.oldBlock(oldIndex);
    if (old !== undefined && split > 0) {
      const shift = 32 - this.sweep.newBits;
      old = old.subarray(8 * lowerBound(old, j * 2 ** shift), 8 * lowerBound(old, (j + 1) * 2 ** shift));
    }
    // this block's unmerged fingerprints, copied out of their chains, sorted
    const spread = this.unmerged.bits - this.sweep.newBits;
    const n = this.unmerged.take(j * 2 ** spread, (j + 1) * 2 ** spread, this.fresh);
    const { hi: freshHi, lo: freshLo } = this.fresh;
    if (n > 0 || split > 0) {
      const order: number[] = new Array(n);
      for (let k = 0; k < n; k++) order[k] = k;
      const merged = this.arena.copy(mergeSorted(old, byValue(order, freshHi, freshLo), freshHi, freshLo));
      if (merged.length > 0) {
        this.store.put(blockKey(this.sweep.newBits, j), merged);
        // merged blocks are cut from shared slabs, which die together once the next sweep has
        // replaced every block; a cache that holds only some blocks would keep a few of every
        // slab, and so every slab (all the blocks' bytes): it gets copies then. (Where all the
        // blocks fit the budget, the slabs it keeps alive are at most the budget.)
        this.cache.update(blockId(this.sweep.newBits, j), merged, !this.cacheHoldsAll(count));
      } else if (split === 0 && old !== undefined) {
        this.store.delete(oldKey);
        this.cache.update(blockId(this.sweep.oldBits, oldIndex), undefined);
      }
    }
    if (split > 0 && (j & (2 ** split - 1)) === 2 ** split - 1) {
      this.store.delete(oldKey);
      this.cache.update(blockId(this.sweep.oldBits, oldIndex), undefined);
    }
    this.sweep.cursor++;
    if (this.sweep.cursor === 2 ** this.sweep.newBits) this.endSweep(count);
  }

  /**
   * Block `index` of the old layout, from the block cache or the store. The sweep reads them in key
   * order, so uncached ones are read READ_AHEAD at a time in one batched read (pending writes
   * included). Only the sweep writes old-layout blocks, and only the one it has just read, so what
   * was read ahead stays current.
   */
  private oldBlock(index: number): Buffer | undefined {
    const id = blockId(this.sweep.oldBits, index);
    const cached = this.cache.peek(id);
    if (cached !== undefined) return cached.length === 0 ? undefined : cached;
    if (index < this.aheadFrom || index >= this.aheadTo) {
      this.aheadFrom = index;
      this.aheadTo = Math.min(index + READ_AHEAD, 2 ** this.sweep.oldBits);
      this.ahead = new Array(this.aheadTo - this.aheadFrom).fill(NOT_READ);
      const want: number[] = [];
      for (let i = this.aheadFrom; i < this.aheadTo; i++)
        if (this.cache.peek(blockId(this.sweep.oldBits, i)) === undefined) want.push(i);
      const read = this.store.getMany(want.map((i) => blockKey(this.sweep.oldBits, i)));
      for (let k = 0; k < want.length; k++) this.ahead[want[k]! - this.aheadFrom] = read[k];
    }
    const ahead = this.ahead[index - this.aheadFrom];
    // cached when read ahead, evicted since
    return ahead === NOT_READ ? this.store.get(blockKey(this.sweep.oldBits, index)) : ahead;
  }

  /** Every run written before the sweep began is now in blocks: delete them; start the next sweep. */
  private endSweep(count: number): void {
    let k = 0;
    while (k < this.runs.length && this.runs[k]! < this.sweep.sweepStart) this.store.delete(runKey(this.runs[k++]!));
    this.runs = this.runs.slice(k);
    this.sweep.sweeps++;
    this.sweep.sweepStart = this.sweep.nextSeq;
    this.sweep.oldBits = this.sweep.newBits;
    this.sweep.newBits = Math.max(this.sweep.oldBits, this.bitsFor(count));
    this.sweep.cursor = 0;
    this.ahead = [];
    this.aheadFrom = this.aheadTo = 0;
    // what is still unmerged was added since its block was merged
    this.unmerged.rebucket(this.ramBitsFor(count));
  }

  /** Whether the block cache has room for every block of a partition of `count` fingerprints. */
  private cacheHoldsAll(count: number): boolean {
    return 8 * count + 64 * 2 ** this.sweep.newBits <= this.cache.maxBytes;
  }

  /** New fingerprints within which a full sweep completes, at `count` recorded. */
  sweepSpan(count: number): number {
    return this.pacing.span(count);
  }

  /** Chain buckets for about two unmerged fingerprints each at the most a sweep lets wait. */
  private ramBitsFor(count: number): number {
    const most = this.sweepSpan(count);
    return Math.min(MAX_RAM_BITS, Math.max(this.sweep.newBits, Math.ceil(Math.log2(most)) - 1));
  }

  private bitsFor(count: number): number {
    return layoutBits(count, this.blockTarget);
  }
}
