import type { KeyValueStore } from '../../state/state-store.js';
import type { FetchKind, PageRecord, UrlHistory } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { pageChanged } from '../common/change.js';
import { fingerprintHex } from '../common/fingerprint.js';
import { intervalBounds } from './recrawl-interval.js';
import type { IntervalChoice } from './refetch-planner.js';
import type { ChangeEvidence } from './change-rate.js';
import { numberBytes, readNumber } from './host-state.js';

/** Per-URL history, keyed by the URL's 8-byte fingerprint. */
export type HistoryStore = KeyValueStore<Buffer, UrlHistory>;
/** The due index: key `nextDue (u64 BE ms) ‖ fingerprint (8 bytes)`, empty value; sorted by due time. */
export type DueStore = KeyValueStore<Buffer, Buffer>;
/** The slice of `frontier-meta` the schedule keeps its count in. */
export type CountStore = KeyValueStore<string, Buffer>;

const COUNT_KEY = 'history-count';
const END_OF_TIME = Number.MAX_SAFE_INTEGER;

/** What a visit found, for the revisit counters. */
export type VisitResult = 'first' | 'changed' | 'unchanged' | 'not-modified' | 'repeat';

/** A URL that fell due, as the frontier queues it again. */
export interface DueUrl {
  readonly url: string;
  readonly kind: FetchKind;
  readonly depth: number;
  /** Visits so far (≥ 1). */
  readonly visit: number;
}

/**
 * The recrawl schedule of one frontier partition: each fetched URL's history (store
 * `frontier-history`) and a due index by time (store `frontier-due`), both on disk and
 * changelogged; RAM holds only a scan cursor, so a partition of 10^8 URLs costs no RAM per URL.
 *
 * Contract: every URL with a recorded visit has exactly one due entry, at its history's
 * `nextDue`. Taking a due URL moves its entry a full `--recrawl-max` ahead (and marks it queued)
 * in the same call that queues it, so a revisit lost on the way (its site blocked, its fetch
 * dropped) comes back then rather than never; its next page record sets the real next due time.
 * Writes are ordinary store writes, committed with the queue they feed: after a crash the two
 * agree.
 */
export class RecrawlSchedule {
  /** No due key below this time is live; due times only move forward past it (new ones are ≥ now). */
  private cursor = 0;
  private count: number;

  constructor(
    private readonly history: HistoryStore,
    private readonly due: DueStore,
    private readonly meta: CountStore,
    private readonly config: CrawlConfig,
  ) {
    this.count = readNumber(meta.get(COUNT_KEY));
  }

  /** URLs with a history (and so a due entry). */
  get size(): number {
    return this.count;
  }

  /** The history of `url`; undefined when no visit of it has been recorded. */
  get(url: string): UrlHistory | undefined {
    return this.history.get(keyOf(url));
  }

  /**
   * Records a visit from its page record and schedules the next one after the interval `plan`
   * chooses (from the URL's history, undefined on a first visit, and whether the visit found a
   * change). Idempotent: a record no newer than the last recorded visit changes nothing
   * ('repeat') and `plan` is not called.
   */
  recordVisit(
    page: PageRecord,
    plan: (previous: UrlHistory | undefined, changed: boolean) => IntervalChoice,
  ): VisitResult {
    const fp = keyOf(page.url);
    const previous = this.history.get(fp);
    if (previous !== undefined && page.fetchTime <= previous.lastFetch) return 'repeat';
    const kind = page.kind ?? 'PAGE';
    const notModified = page.notModified === true;
    let result: VisitResult = 'first';
    let changed = false;
    if (previous !== undefined) {
      changed = pageChanged(
        { status: previous.status, digest: previous.digest, simhash: previous.simhash },
        { status: page.status, digest: page.payloadDigest, simhash: page.simhash },
        notModified,
      );
      result = notModified ? 'not-modified' : changed ? 'changed' : 'unchanged';
      this.due.delete(dueKey(previous.nextDue, fp));
    } else this.count++;
    const choice = plan(previous, changed);
    const intervalMs = Math.round(choice.intervalMs);
    const nextDue = page.fetchTime + Math.max(intervalBounds(kind, this.config).min, intervalMs);
    // a 304 carries the last visit's validators and payload when it sent none of its own
    const next: UrlHistory = {
      url: page.url,
      kind,
      depth: page.depth,
      lastFetch: page.fetchTime,
      status: notModified && previous !== undefined ? previous.status : page.status,
      etag: page.etag ?? previous?.etag ?? null,
      lastModified: page.lastModified ?? previous?.lastModified ?? null,
      digest: notModified ? (previous?.digest ?? page.payloadDigest) : page.payloadDigest,
      simhash: notModified ? (previous?.simhash ?? page.simhash) : page.simhash,
      intervalMs,
      nextDue,
      visits: (previous?.visits ?? 0) + 1,
      changes: (previous?.changes ?? 0) + (result === 'changed' ? 1 : 0),
      queuedAt: 0,
      rateVisits: choice.evidence.visits,
      rateChanges: choice.evidence.changes,
      rateExposureMs: choice.evidence.exposureMs,
      rateBucket: choice.bucket,
    };
    this.history.put(fp, next);
    this.due.put(dueKey(nextDue, fp), EMPTY);
    // a record read late (a lagging input) may fall due before where the scan has got to
    if (nextDue < this.cursor) this.cursor = nextDue;
    this.meta.put(COUNT_KEY, numberBytes(this.count));
    return result;
  }

  /**
   * Up to `limit` URLs due at `now`, earliest first, each marked queued and its due entry moved
   * a full --recrawl-max ahead (see the class contract). Due entries with no matching history
   * (left by an older write) are removed.
   */
  takeDue(now: number, limit: number): DueUrl[] {
    const keys: Buffer[] = [];
    for (const [key] of this.due.range(dueKey(this.cursor, null), dueKey(now + 1, null), limit)) {
      keys.push(key);
      if (keys.length >= limit) break;
    }
    const out: DueUrl[] = [];
    for (const key of keys) {
      const at = readDue(key);
      const fp = key.subarray(8);
      const h = this.history.get(fp);
      this.due.delete(key);
      this.cursor = Math.max(this.cursor, at);
      if (h === undefined || h.nextDue !== at) continue;
      h.queuedAt = now;
      h.nextDue = now + this.config.recrawlMaxMs;
      this.history.put(fp, h);
      this.due.put(dueKey(h.nextDue, fp), EMPTY);
      out.push({ url: h.url, kind: h.kind, depth: h.depth, visit: h.visits });
    }
    return out;
  }

  /**
   * A sitemap or feed says `url` changed at `lastmod`: when that is after its last fetch and no
   * revisit of it is already queued, it is due now. Returns whether it was made due.
   */
  dueNowIfNewer(url: string, lastmod: number, now: number): boolean {
    const fp = keyOf(url);
    const h = this.history.get(fp);
    if (h === undefined || lastmod <= h.lastFetch || h.queuedAt > 0 || h.nextDue <= now) return false;
    this.due.delete(dueKey(h.nextDue, fp));
    h.nextDue = now;
    this.history.put(fp, h);
    this.due.put(dueKey(now, fp), EMPTY);
    this.cursor = Math.min(this.cursor, now);
    return true;
  }

  /**
   * A feed's items say it publishes `ratePerMs` items per ms: that becomes its evidence (four
   * visits' worth at that rate, see change-rate.ts) and, when that brings its next poll forward
   * and none is queued, its next poll (`intervalMs` after its last fetch, at least `now`).
   * Returns whether the poll moved.
   */
  notePublishing(url: string, evidence: ChangeEvidence, intervalMs: number, now: number): boolean {
    const fp = keyOf(url);
    const h = this.history.get(fp);
    if (h === undefined || h.kind !== 'FEED') return false;
    h.rateVisits = evidence.visits;
    h.rateChanges = evidence.changes;
    h.rateExposureMs = evidence.exposureMs;
    const due = Math.round(Math.max(now, h.lastFetch + intervalMs));
    const moved = h.queuedAt === 0 && due < h.nextDue;
    if (moved) {
      this.due.delete(dueKey(h.nextDue, fp));
      h.nextDue = due;
      h.intervalMs = Math.round(intervalMs);
      this.due.put(dueKey(due, fp), EMPTY);
      if (due < this.cursor) this.cursor = due;
    }
    this.history.put(fp, h);
    return moved;
  }

  /** The earliest due time in the index, or undefined when nothing is scheduled. */
  nextDueAt(): number | undefined {
    for (const [key] of this.due.range(dueKey(this.cursor, null), dueKey(END_OF_TIME, null), 1)) return readDue(key);
    return undefined;
  }
}

const EMPTY = Buffer.alloc(0);

function keyOf(url: string): Buffer {
  return Buffer.from(fingerprintHex(url), 'hex');
}

/** `at` as 8 bytes big-endian, then the fingerprint (none: the lowest key of that time). */
function dueKey(at: number, fp: Buffer | null): Buffer {
  const key = Buffer.alloc(fp === null ? 8 : 16);
  key.writeUInt32BE(Math.floor(at / 2 ** 32), 0);
  key.writeUInt32BE(at >>> 0, 4);
  if (fp !== null) fp.copy(key, 8);
  return key;
}

function readDue(key: Buffer): number {
  return key.readUInt32BE(0) * 2 ** 32 + key.readUInt32BE(4);
}
