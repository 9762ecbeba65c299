import { M } from '../core/metric-catalogue.js';
import { InvalidOptionError } from '../core/errors.js';
import type { Metrics } from '../core/metrics.js';
import { bloomSizing, type BloomSizing } from './bloom-filter.js';
import { ScalableBloom } from './scalable-bloom.js';
import {
  ExactFingerprints,
  type ExactLayerOptions,
  type ExactLayerStats,
  type FingerprintStore,
} from './seen-exact.js';
import { COUNT_KEY, decodeCount, encodeCount } from './seen-layout.js';
import type { MemoryBudget, MemoryClaim, MemoryShare } from './memory-budget.js';

export type { FingerprintStore } from './seen-exact.js';

/**
 * The filter a set reopened over n stored fingerprints is sized for: 1.25 n. Past it the filter
 * grows by a segment as large as all before it (`ScalableBloom`), so over a partition's life it
 * holds 1–2 × its count either way; a reopen starts it near the low end (2 × n would take a
 * 400 M-fingerprint partition's filter from 0.7 to 1.1 GB only for room a growth gives anyway).
 */
const REOPEN_HEADROOM = 1.25;

export interface SeenSetOptions {
  /** Fingerprints this partition is expected to hold (n); sizes the first filter segments. */
  readonly expectedCount: number;
  /** Target Bloom false-positive rate (p) of all segments together, e.g. 0.01. */
  readonly falsePositiveRate: number;
  /**
   * Default true: the filter grows by segments as the partition does. False: it keeps the size
   * `init()` gave it (RAM fixed; past that count more new URLs take a store read).
   */
  readonly growFilter?: boolean;
  /** Tuning of the exact layer's blocks and sweeps (see `ExactFingerprints`); defaults suit a crawl. */
  readonly exact?: Omit<ExactLayerOptions, 'expectedCount'>;
  /**
   * The process's memory plan, shared with its other seen-sets: from `init()` to `close()` the
   * filter and the unmerged fingerprints are claimed in it (as they grow: at `init`, after an
   * admit that recorded new ones, at `warm`'s end and `reportMetrics`) and the block cache gets
   * its grant (`exact.blockCacheBytes` asked).
   * Absent: the cache keeps the size asked.
   */
  readonly memory?: MemoryBudget;
}

/** Gauges of one seen-set, as plain numbers for metrics. */
export interface SeenSetStats {
  /** Fingerprints recorded (those stored at init plus those admitted since; a store from before the count was kept: once warm). */
  readonly count: number;
  /** Bits of all the filter's segments. */
  readonly bloomBits: number;
  /** Hashes of the newest segment. */
  readonly bloomHashes: number;
  readonly bloomSegments: number;
  /** RAM of the Bloom bit array. */
  readonly bloomBytes: number;
  /** Fraction of Bloom bits set. */
  readonly fill: number;
  /** The current chance a new fingerprint needs a store read (the segments' union). */
  readonly estimatedFalsePositiveRate: number;
  readonly targetFalsePositiveRate: number;
  /** The estimated rate is above the target (segments grew from an over-full start, or copies were counted twice). */
  readonly warning: boolean;
  /** Segments added since the filter was built at `init()`: growth, never a scan of the store. */
  readonly rebuilds: number;
  /** Fingerprints the Bloom called "maybe seen" that the store then confirmed or refuted (not those checked only because it was warming). */
  readonly storeChecks: number;
  /** Of those, the ones the store did not hold: Bloom false positives, admitted as new. */
  readonly bloomFalsePositives: number;
  /** The filter is not yet filled from the store (`warm`): every check reads the exact layer. */
  readonly warming: boolean;
  /** Fingerprints checked against the exact layer only because the filter was warming (the filter had not got them). */
  readonly warmChecks: number;
  /** New fingerprints within which a full sweep of the exact layer completes at this count. */
  readonly sweepSpan: number;
  /** The exact layer's runs, blocks and sweeps. */
  readonly exact: ExactLayerStats;
}

/**
 * The seen-set of one partition: a Bloom filter in RAM in front of exact 8-byte fingerprints in
 * a store (`ExactFingerprints`: runs and sorted blocks). "Definitely new" skips the store; every
 * "maybe seen" is confirmed against the exact layer in one batched read, so a Bloom false positive
 * never loses a new URL: the only errors left are 64-bit fingerprint collisions.
 *
 * The filter is sized at `init()` for max(expectedCount, REOPEN_HEADROOM × stored) but filled
 * afterwards, by bounded `warm` steps off the critical path (init reads O(1) keys; until the
 * filter holds every stored fingerprint each check goes to the exact layer, so answers are exact
 * throughout), and grows by segments (`ScalableBloom`) as the partition does: never a rescan of
 * the store while the crawl runs, never a size it cannot hold (a filter stays under 2^32 bits; a
 * larger segment is sharded over several). Bits set by writes the runtime later discards (a failed commit)
 * stay set: that only costs a store read, never a lost URL. After a failed commit the task must be
 * closed and a new one `init()`ed (both engines do): the exact layer's RAM part follows the
 * store's pending writes.
 *
 * Not thread-safe; one instance per task, used from `process()` and punctuators.
 */
export class SeenSet {
  private readonly target: number;
  private readonly expectedCount: number;
  private readonly growFilter: boolean;
  private readonly exact: ExactFingerprints;
  private bloom!: ScalableBloom;
  private recorded = 0;
  private storeChecks = 0;
  private falsePositives = 0;
  // the filter does not yet hold every stored fingerprint: none may be taken as new on its word
  private warming = false;
  private found = 0;
  private countKnown = true;
  private warmChecks = 0;
  private readonly memory: MemoryBudget | undefined;
  private closed = false;
  private claims: { bloom: MemoryClaim; chains: MemoryClaim; blocks: MemoryShare } | undefined;

  constructor(
    private readonly store: FingerprintStore,
    options: SeenSetOptions,
  ) {
    validateSizing(options.expectedCount, options.falsePositiveRate);
    this.expectedCount = options.expectedCount;
    this.target = options.falsePositiveRate;
    this.growFilter = options.growFilter ?? true;
    this.exact = new ExactFingerprints(store, { ...options.exact, expectedCount: options.expectedCount });
    this.memory = options.memory;
  }

  /**
   * Opens the set without reading any fingerprint (O(1) store reads: the count and the exact
   * layer's layout record), with the filter sized as before but empty: the set is **warming**
   * until `warm` steps have filled it. Call once before `admit`.
   */
  init(): void {
    const count = decodeCount(this.store.get(COUNT_KEY));
    const sizedFor = Math.max(this.expectedCount, Math.ceil(REOPEN_HEADROOM * (count ?? 0)));
    const bloom = new ScalableBloom(sizedFor, this.target, this.growFilter);
    this.bloom = bloom;
    this.exact.open(count ?? 0, (bytes, offset) => {
      bloom.add(bytes, offset);
      this.found++;
    });
    this.found = 0;
    this.recorded = count ?? 0;
    this.countKnown = count !== undefined;
    this.warming = !this.exact.warmed;
    this.plan();
  }

  /**
   * Leaves the process's memory plan (`SeenSetOptions.memory`) for good: its claims and cache
   * grant go back, and nothing after joins it again. Idempotent; the set still answers.
   */
  close(): void {
    this.closed = true;
    const c = this.claims;
    this.claims = undefined;
    c?.bloom.release();
    c?.chains.release();
    c?.blocks.release();
  }

  /** Claims the filter's and the chains' RAM as they are now in the memory plan (joining it at the first call). */
  private plan(): void {
    const memory = this.memory;
    if (memory === undefined || this.closed) return;
    const bloom = this.bloom.byteLength;
    const chains = this.exact.ramBytes;
    if (this.claims === undefined) {
      const asked = this.exact.cacheBytes;
      this.claims = {
        bloom: memory.claim('seen-bloom', bloom),
        chains: memory.claim('seen-chains', chains),
        blocks: memory.share('seen-blocks', asked, (granted) => this.exact.resizeCache(granted)),
      };
    } else {
      this.claims.bloom.update(bloom);
      this.claims.chains.update(chains);
    }
  }

  /**
   * Fills the filter from the store for about `budgetMs` (at least one store key per call, so
   * `warm(0)` always progresses); returns true once it holds every fingerprint stored at `init`,
   * from then on at once. Meant for a punctuator or the gaps between records: each call is bounded,
   * so the task's thread (heartbeats, polls) is never held for long. Until then, answers are exact
   * all the same: every fingerprint is checked against the exact layer, as "maybe seen" ones always
   * are (one batched read per call). The exact layer's runs are read first; an `admit` or `has`
   * before they all are reads the rest of them at once (see `ExactFingerprints.open`).
   */
  warm(budgetMs: number): boolean {
    if (!this.warming) return true;
    if (!this.exact.warm(budgetMs)) return false;
    this.warming = false;
    // a store without a count (written before there was one) counts its scan
    if (!this.countKnown) this.recorded += this.found;
    this.plan();
    return true;
  }

  /**
   * True once `warm` has read the exact layer's runs (the fingerprints not yet merged into
   * blocks), which the warm steps read first. Until then an `admit` or `has` reads every run left
   * at once, O(unmerged fingerprints) on the caller's thread: a caller that must not be held so
   * long (a task's thread, with heartbeats and polls on it) warms until this is true first.
   */
  get runsRead(): boolean {
    return !this.warming || this.exact.runsRead;
  }

  /** `warm` to the end at once: O(stored fingerprints). For tests, benches and tools. */
  warmAll(): void {
    this.warm(Infinity);
  }

  /**
   * For each fingerprint (8 bytes): true when it was new, and is now recorded (in the Bloom and,
   * as a pending write, in the store); false when it was seen before, including earlier in the
   * same batch. Store reads: one batched block read for the "maybe seen" ones; none for the others.
   */
  admit(fingerprints: readonly Buffer[]): boolean[] {
    return this.admitPacked(packed(fingerprints));
  }

  /** `admit` of the fingerprints packed back to back in `fps` (fingerprint i at bytes 8i..8i+8; not kept). */
  admitPacked(fps: Buffer): boolean[] {
    const n = fps.length >>> 3;
    const out: boolean[] = new Array(n);
    let admitted = 0;
    const maybe: number[] = [];
    // while warming, "not in the filter" proves nothing: the filter's word only counts for stats
    let bloomNew: boolean[] | undefined;
    if (this.warming) bloomNew = [];
    for (let i = 0; i < n; i++) {
      // one hash for check and insert: a bit that was not set means "definitely new"
      if (this.bloom.add(fps, 8 * i)) {
        maybe.push(i);
        bloomNew?.push(false);
      } else if (bloomNew !== undefined) {
        maybe.push(i);
        bloomNew.push(true);
      } else {
        out[i] = true;
        this.exact.stage(fps, 8 * i);
        admitted++;
      }
    }
    if (maybe.length > 0) {
      // staged ones count as found, so a repeat of an earlier new one in this batch is seen
      const found = this.exact.contains(fps, maybe);
      this.countChecks(maybe.length, bloomNew);
      let admittedHere: Set<string> | undefined;
      for (let j = 0; j < maybe.length; j++) {
        const i = maybe[j]!;
        if (found[j]) {
          out[i] = false;
          continue;
        }
        // a Bloom false positive, unless an earlier one of these was the same fingerprint
        const key = fps.toString('latin1', 8 * i, 8 * i + 8);
        admittedHere ??= new Set();
        if (admittedHere.has(key)) {
          out[i] = false;
          continue;
        }
        admittedHere.add(key);
        if (bloomNew?.[j] !== true) this.falsePositives++;
        out[i] = true;
        this.exact.stage(fps, 8 * i);
        admitted++;
      }
    }
    if (admitted > 0) {
      this.recorded += admitted;
      this.exact.flush(this.recorded);
      // a store without a count (older versions) gets one once its scan has counted it
      if (this.countKnown || !this.warming) this.store.put(COUNT_KEY, encodeCount(this.recorded));
      // the filter may have grown a segment, the chains their arrays
      if (this.claims !== undefined) this.plan();
    }
    return out;
  }

  /** Like `admit` without recording anything: true = seen before. Batched the same way. */
  has(fingerprints: readonly Buffer[]): boolean[] {
    const fps = packed(fingerprints);
    const out: boolean[] = new Array(fingerprints.length).fill(false);
    const maybe: number[] = [];
    const warming = this.warming;
    const bloomNew: boolean[] = [];
    for (let i = 0; i < fingerprints.length; i++) {
      const might = this.bloom.mightContain(fps, 8 * i);
      if (might || warming) {
        maybe.push(i);
        bloomNew.push(!might);
      }
    }
    const found = maybe.length === 0 ? [] : this.exact.contains(fps, maybe);
    this.countChecks(maybe.length, warming ? bloomNew : undefined);
    for (let j = 0; j < found.length; j++) {
      out[maybe[j]!] = found[j]!;
      if (found[j]) continue;
      if (!bloomNew[j]) this.falsePositives++;
    }
    return out;
  }

  /** Store checks the filter asked for, and those made only because it was warming. */
  private countChecks(checked: number, bloomNew: readonly boolean[] | undefined): void {
    let warmOnly = 0;
    if (bloomNew !== undefined) for (const b of bloomNew) if (b) warmOnly++;
    this.warmChecks += warmOnly;
    this.storeChecks += checked - warmOnly;
  }

  stats(): SeenSetStats {
    const estimated = this.bloom.estimatedFalsePositiveRate();
    return {
      count: this.recorded,
      bloomBits: this.bloom.bits,
      bloomHashes: this.bloom.hashes,
      bloomSegments: this.bloom.segmentCount,
      bloomBytes: this.bloom.byteLength,
      fill: this.bloom.fill(),
      estimatedFalsePositiveRate: estimated,
      targetFalsePositiveRate: this.target,
      warning: estimated > this.target,
      rebuilds: this.bloom.grown,
      storeChecks: this.storeChecks,
      bloomFalsePositives: this.falsePositives,
      warming: this.warming,
      warmChecks: this.warmChecks,
      sweepSpan: this.exact.sweepSpan(this.recorded),
      exact: this.exact.stats(),
    };
  }

  /** Publishes `stats()` as gauges `seen_set_*{owner}` (warning and warming as 0/1). */
  reportMetrics(metrics: Metrics, owner: string): void {
    this.plan();
    const s = this.stats();
    metrics.setGauge(M.seenSetFingerprints, owner, s.count);
    metrics.setGauge(M.seenSetBloomBytes, owner, s.bloomBytes);
    metrics.setGauge(M.seenSetBloomFill, owner, s.fill);
    metrics.setGauge(M.seenSetBloomFpRateEstimate, owner, s.estimatedFalsePositiveRate);
    metrics.setGauge(M.seenSetBloomWarning, owner, s.warning ? 1 : 0);
    metrics.setGauge(M.seenSetBloomRebuilds, owner, s.rebuilds);
    metrics.setGauge(M.seenSetUnmerged, owner, s.exact.unmerged);
    metrics.setGauge(M.seenSetRuns, owner, s.exact.runs);
    metrics.setGauge(M.seenSetSweeps, owner, s.exact.sweeps);
    metrics.setGauge(M.seenSetRunsForced, owner, s.exact.runsForced);
    metrics.setGauge(M.seenSetWarming, owner, s.warming ? 1 : 0);
    metrics.setGauge(M.cacheBytes, owner, s.exact.blockCacheBytes, 'seen-blocks');
    metrics.setGauge(M.cacheBytes, owner, s.bloomBytes, 'seen-bloom');
  }

  /** The filter's bits, newest hashes, segments, filters (shards) and the count they were sized for (for tests and benches). */
  sizing(): BloomSizing & { sizedFor: number; segments: number; filters: number; largestFilterBits: number } {
    return {
      bits: this.bloom.bits,
      hashes: this.bloom.hashes,
      sizedFor: this.bloom.capacity,
      segments: this.bloom.segmentCount,
      filters: this.bloom.filterCount,
      largestFilterBits: this.bloom.largestFilterBits,
    };
  }
}

/** Validates the seen-set's sizing options eagerly, naming what is wrong. */
function validateSizing(expectedCount: number, falsePositiveRate: number): void {
  if (!Number.isSafeInteger(expectedCount) || expectedCount < 1)
    throw new InvalidOptionError(`seen-set expected count must be a positive integer, got ${expectedCount}`);
  bloomSizing(1, falsePositiveRate); // the rate, in (0, 1)
}

/** 8-byte fingerprints back to back in one new buffer. */
function packed(fps: readonly Buffer[]): Buffer {
  const out = Buffer.allocUnsafe(8 * fps.length);
  for (let i = 0; i < fps.length; i++) out.set(fps[i]!.subarray(0, 8), 8 * i);
  return out;
}
