import { M } from '../../core/metric-catalogue.js';
import type { Metrics } from '../../core/metrics.js';
import type { FetchRequest, FrontEntry, HostState, LinkBatch, PageRecord } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { safeSite } from './host-state.js';
import { importance, intervalBounds } from './recrawl-interval.js';
import { evidenceOfRate, publishingRate } from './change-rate.js';
import type { RecrawlSchedule } from './recrawl-schedule.js';
import type { RefetchPlanner } from './refetch-planner.js';
import { urlShape } from './url-shape.js';

/** The fields a lease carries for a revisit: validators and what the last visit found. */
export type RevisitFields = Pick<
  FetchRequest,
  | 'ifNoneMatch'
  | 'ifModifiedSince'
  | 'visit'
  | 'previousFetchTime'
  | 'previousStatus'
  | 'previousDigest'
  | 'previousSimhash'
>;

/** Feeds whose items came before their page record, remembered at once. */
const MAX_PENDING_RATES = 10_000;

const FIRST_VISIT: RevisitFields = {
  ifNoneMatch: null,
  ifModifiedSince: null,
  visit: 0,
  previousFetchTime: null,
  previousStatus: 0,
  previousDigest: null,
  previousSimhash: null,
};

/**
 * The frontier's side of freshness, over its RecrawlSchedule: page records in, due URLs out as
 * front entries, revisit fields for leases, sitemaps named in robots.txt as links. Owns no state
 * of its own beyond the schedule's stores, but for feeds' publishing rates read before the feed's
 * page record (a bounded map in RAM).
 */
export class Revisits {
  /** Feeds' publishing rates read before the feed's page record came (RAM only: a hint, lost in a crash). */
  private readonly pendingRates = new Map<string, number>();

  constructor(
    private readonly schedule: RecrawlSchedule,
    private readonly planner: RefetchPlanner,
    private readonly config: CrawlConfig,
    private readonly metrics: () => Metrics,
  ) {}

  get scheduled(): number {
    return this.schedule.size;
  }

  /**
   * Records a page record's visit in the schedule (`linkingSites`: other sites seen linking to its
   * site; `hostGapMs`: the gap its host keeps between fetches, for its refetch budget).
   */
  onPageRecord(page: PageRecord, linkingSites: number, hostGapMs: number): void {
    const weight = importance(page.depth, linkingSites);
    const budgetPerMs = this.config.recrawlShare / Math.max(1, hostGapMs);
    const result = this.schedule.recordVisit(page, (previous, changed) =>
      this.planner.plan(page, previous, changed, weight, budgetPerMs),
    );
    // a rate read before this record: a feed's is applied now; a sitemap's (first read: its kind
    // was not known yet) is dropped, as sitemaps learn from their polls
    const pending = this.pendingRates.get(page.url);
    if (pending !== undefined) {
      this.pendingRates.delete(page.url);
      if (page.kind === 'FEED') this.applyRate(page.url, pending, page.fetchTime);
    }
    if (result !== 'first' && result !== 'repeat') this.metrics().inc(M.revisitOutcomes, 1, result);
  }

  /** URLs due at `now` (at most `limit`), as front entries of revisits; counted by kind. */
  due(now: number, limit: number): FrontEntry[] {
    const out: FrontEntry[] = [];
    for (const d of this.schedule.takeDue(now, limit)) {
      const shape = urlShape(d.url);
      const site = safeSite(d.url);
      if (shape === undefined || site === null) continue;
      out.push({
        url: d.url,
        host: shape.host,
        origin: shape.origin,
        site,
        depth: d.depth,
        redirectHops: 0,
        discoveredAt: now,
        kind: d.kind,
        visit: d.visit,
      });
      this.metrics().inc(M.revisits, 1, d.kind);
    }
    return out;
  }

  /** The revisit fields of a lease for `url` on its `visit`-th revisit (0: a first visit, no lookup). */
  fieldsFor(url: string, visit: number): RevisitFields {
    if (visit === 0) return FIRST_VISIT;
    const h = this.schedule.get(url);
    if (h === undefined) return { ...FIRST_VISIT, visit };
    return {
      ifNoneMatch: h.etag,
      ifModifiedSince: h.lastModified,
      visit,
      previousFetchTime: h.lastFetch,
      previousStatus: h.status,
      previousDigest: h.digest,
      previousSimhash: h.simhash,
    };
  }

  /**
   * A sitemap or feed batch's known URLs whose lastmod is newer than their last fetch are due now.
   * Returns how many were made due.
   */
  noteLastmods(batch: LinkBatch, now: number): number {
    let n = 0;
    const dates: number[] = [];
    for (const link of batch.links) {
      if (link.lastmod == null) continue;
      dates.push(link.lastmod);
      if (this.schedule.dueNowIfNewer(link.url, link.lastmod, now)) n++;
    }
    if (n > 0) this.metrics().inc(M.revisitsEarly, n);
    if (batch.sourceUrl != null && this.config.recrawlPolicy === 'optimal')
      this.notePublishing(batch.sourceUrl, dates, batch.discoveredAt, now);
    return n;
  }

  /**
   * A feed's item dates are its publishing rate, better evidence than its polls: it is polled
   * about once per item from now on (within its lane), from the first read. A sitemap's dates are
   * its pages' changes, not its own: only feeds.
   */
  private notePublishing(feedUrl: string, dates: readonly number[], readAt: number, now: number): void {
    const history = this.schedule.get(feedUrl);
    if (history !== undefined && history.kind !== 'FEED') return;
    const rate = publishingRate(dates, readAt);
    if (rate === undefined) return;
    // the feed's page record (of the read these dates come from) may come after its items: until
    // it does, the feed is new or still marked queued
    if (history === undefined || history.queuedAt > 0) {
      if (this.pendingRates.size >= MAX_PENDING_RATES) this.pendingRates.delete(this.pendingRates.keys().next().value!);
      this.pendingRates.set(feedUrl, rate);
      return;
    }
    this.applyRate(feedUrl, rate, now);
  }

  private applyRate(feedUrl: string, rate: number, now: number): void {
    const { min, max } = intervalBounds('FEED', this.config);
    const interval = Math.round(Math.min(max, Math.max(min, 1 / rate)));
    this.schedule.notePublishing(feedUrl, evidenceOfRate(rate), interval, now);
  }

  /**
   * The sitemaps an origin's robots.txt names, of the host's own site, as a batch to admit (the
   * seen-set admits each once; they are then revisited on their own schedule); undefined when
   * there are none or sitemaps are off.
   */
  sitemapsOf(state: HostState, now: number): LinkBatch | undefined {
    if (!this.config.sitemaps) return undefined;
    const urls = new Set<string>();
    for (const r of state.robots) for (const url of r.sitemaps ?? []) if (safeSite(url) === state.site) urls.add(url);
    if (urls.size === 0) return undefined;
    return {
      site: state.site,
      sourceUrl: null,
      discoveredAt: now,
      fromFeed: true,
      links: [...urls].map((url) => ({ url, depth: 0, redirectHops: 0, kind: 'SITEMAP' as const, lastmod: null })),
    };
  }

  /** Whether a URL falls due within `withinMs` of `now`. */
  dueWithin(now: number, withinMs: number): boolean {
    const at = this.schedule.nextDueAt();
    return at !== undefined && at <= now + withinMs;
  }
}
