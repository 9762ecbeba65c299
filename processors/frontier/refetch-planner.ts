import type { HostRates, PageRecord, SiteState, TemplateRate, UrlHistory } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { changeRate, NO_EVIDENCE, observe, withPrior, type ChangeEvidence } from './change-rate.js';
import { firstInterval, intervalBounds, nextInterval } from './recrawl-interval.js';
import {
  bucketRate,
  optimalInterval,
  rateBucket,
  RATE_BUCKETS,
  solvePrice,
  type IntervalBounds,
} from './refetch-policy.js';
import { skeletonKeyOf, templateKeyOf } from './url-templates.js';
import { urlShape } from './url-shape.js';

/** What a visit decides for its URL's history. */
export interface IntervalChoice {
  readonly intervalMs: number;
  readonly evidence: ChangeEvidence;
  /** Its bucket in its host's rate histogram; -1: none. */
  readonly bucket: number;
}

/** The site states the planner keeps its rate fields in (SitePolicy). */
export interface SiteRates {
  ratesOf(site: string): SiteState;
  ratesChanged(site: string): void;
}

/** Site evidence decays slower than a URL's: it sums all of the site's pages. */
const SITE_DECAY = 0.995;
/**
 * The prior (the template's or site's evidence) weighs as much as PRIOR_WEIGHT of a URL's own
 * observations on a first visit, and less with each of its own, nothing from PRIOR_FADE on: a
 * page's own history, not its neighbours', decides once it has one (a never-changing page of a
 * busy site goes to --recrawl-max; a fast page is not pulled back to its site's mean).
 */
const PRIOR_WEIGHT = 2;
const PRIOR_FADE = 2;
/** A template's evidence is its pages' prior (rather than the site's) once it weighs this many visits. */
const TEMPLATE_EVIDENCE = 3;
/** Hosts whose rate histogram a site keeps. */
export const HOST_RATE_SLOTS = 32;
/** Templates whose evidence a site keeps. */
export const TEMPLATE_RATE_SLOTS = 16;
/** A URL's interval grows to at most this many times the time its evidence has watched it. */
const GROWTH = 2;
/** A host's price is solved again after this many changes to its histogram (or when its budget changes). */
const PRICE_REUSE = 16;
/** Hosts whose price is remembered. */
const PRICE_CACHE = 10_000;

interface CachedPrice {
  price: number;
  budgetPerMs: number;
  uses: number;
}

/**
 * Chooses each fetched URL's next interval. Policy `optimal`: the URL's change rate is
 * estimated from its revisits (change-rate.ts), with its URL template's evidence as the prior
 * once the template has some, else its site's (a new page starts from what pages like it do),
 * and the interval is the staleness- (or age-) optimal one at its host's price
 * (refetch-policy.ts): the host's pages together want at most `budgetPerMs` fetches, the share of
 * the host's politeness capacity revisits get. Sitemaps and feeds are polled at their own
 * estimated rate (about one poll per change), within their lane. Policy `adaptive`: the
 * halve/grow rule (recrawl-interval.ts `nextInterval`).
 *
 * Owns a cache of host prices only; histograms and evidence live in the site states.
 */
export class RefetchPlanner {
  private readonly prices = new Map<string, CachedPrice>();

  constructor(
    private readonly config: CrawlConfig,
    private readonly sites: SiteRates,
  ) {}

  /**
   * The next interval of `page`'s URL after a visit that found `changed` (`previous`: its
   * history, undefined on a first visit); `importance` ≤ 1 (recrawl-interval.ts) makes it sooner.
   * `budgetPerMs`: revisit fetches per ms the page's host can take. Updates its host's histogram
   * and its site's and template's evidence.
   */
  plan(
    page: PageRecord,
    previous: UrlHistory | undefined,
    changed: boolean,
    importance: number,
    budgetPerMs: number,
  ): IntervalChoice {
    const kind = page.kind ?? 'PAGE';
    const bounds = intervalBounds(kind, this.config);
    const observed = previous === undefined ? undefined : page.fetchTime - previous.lastFetch;
    const own =
      previous === undefined ? firstEvidence(page, this.config) : observe(evidenceOf(previous), observed!, changed);
    if (this.config.recrawlPolicy === 'adaptive') {
      const intervalMs =
        previous === undefined
          ? firstInterval(kind, this.config)
          : nextInterval(previous.intervalMs, changed, kind, this.config);
      return { intervalMs, evidence: own, bucket: -1 };
    }
    if (kind !== 'PAGE') {
      const rate = changeRate(own);
      const wanted = rate === undefined ? firstInterval(kind, this.config) : rate === 0 ? bounds.max : 1 / rate;
      return { intervalMs: grown(wanted, own, bounds), evidence: own, bucket: -1 };
    }
    const state = this.sites.ratesOf(page.site);
    const template = templateRate(state, page.url, observed !== undefined);
    if (observed !== undefined) noteSite(state, template, observed, changed);
    const prior = template !== undefined && template.visits >= TEMPLATE_EVIDENCE ? template : siteEvidence(state);
    const rate = changeRate(withPrior(own, prior, PRIOR_WEIGHT * Math.max(0, 1 - own.visits / PRIOR_FADE)));
    const bucket = rate === undefined ? -1 : rateBucket(rate);
    const counts = hostCounts(state, page.host);
    moveBucket(counts, previous?.rateBucket ?? -1, bucket);
    this.sites.ratesChanged(page.site);
    if (rate === undefined) return { intervalMs: firstInterval(kind, this.config), evidence: own, bucket };
    const price = this.price(page.host, counts, budgetPerMs, bounds);
    // priced as its bucket's rate, as the price was solved: the host's pages then want its budget, not more
    const wanted = optimalInterval(bucketRate(bucket), price, bounds, 1 / importance, this.config.recrawlObjective);
    // a first visit has only its neighbours' evidence: no longer than the first interval
    const intervalMs =
      previous === undefined ? Math.min(wanted, firstInterval(kind, this.config)) : grown(wanted, own, bounds);
    return { intervalMs, evidence: own, bucket };
  }

  private price(host: string, counts: readonly number[], budgetPerMs: number, bounds: IntervalBounds): number {
    const cached = this.prices.get(host);
    if (cached !== undefined && cached.budgetPerMs === budgetPerMs && ++cached.uses < PRICE_REUSE) return cached.price;
    const price = solvePrice(counts, budgetPerMs, bounds, this.config.recrawlObjective);
    if (cached === undefined && this.prices.size >= PRICE_CACHE) this.prices.delete(this.prices.keys().next().value!);
    this.prices.delete(host);
    this.prices.set(host, { price, budgetPerMs, uses: 0 });
    return price;
  }
}

/** A Last-Modified this recent says nothing of the page's history (dynamic pages send the time of the request). */
const FRESH_LAST_MODIFIED_MS = 60_000;

/**
 * A page's evidence at its first visit: none, or what its Last-Modified says, one observation of
 * no change from then to the fetch (at most --recrawl-max), so a page unchanged for years is not
 * watched for weeks to learn it. A Last-Modified within the last minute, in the future or
 * unparseable says nothing.
 */
export function firstEvidence(page: PageRecord, config: CrawlConfig): ChangeEvidence {
  const modified = page.lastModified == null ? NaN : Date.parse(page.lastModified);
  const age = page.fetchTime - modified;
  if (!(age >= FRESH_LAST_MODIFIED_MS)) return NO_EVIDENCE;
  return observe(NO_EVIDENCE, Math.min(age, config.recrawlMaxMs), false);
}

/** A URL's own evidence as its history holds it. */
export function evidenceOf(h: UrlHistory): ChangeEvidence {
  return { visits: h.rateVisits ?? 0, changes: h.rateChanges ?? 0, exposureMs: h.rateExposureMs ?? 0 };
}

function siteEvidence(s: SiteState): ChangeEvidence | undefined {
  const visits = s.rateVisits ?? 0;
  if (visits <= 0) return undefined;
  return { visits, changes: s.rateChanges ?? 0, exposureMs: s.rateExposureMs ?? 0 };
}

function noteSite(s: SiteState, template: TemplateRate | undefined, observedMs: number, changed: boolean): void {
  const e = observe(siteEvidence(s) ?? NO_EVIDENCE, observedMs, changed, SITE_DECAY);
  s.rateVisits = e.visits;
  s.rateChanges = e.changes;
  s.rateExposureMs = e.exposureMs;
  if (template === undefined) return;
  const t = observe(template, observedMs, changed, SITE_DECAY);
  template.visits = t.visits;
  template.changes = t.changes;
  template.exposureMs = t.exposureMs;
}

/**
 * The evidence of `url`'s template on its site (the template key, or for a hand-named URL its
 * skeleton's), undefined for a site's root. With `create`, a template not yet tracked takes a
 * slot: a free one, or the least-visited one's when all TEMPLATE_RATE_SLOTS are taken.
 */
function templateRate(s: SiteState, url: string, create: boolean): TemplateRate | undefined {
  const shape = urlShape(url);
  if (shape === undefined) return undefined;
  const key = templateKeyOf(shape.host, shape) ?? skeletonKeyOf(shape.host, shape);
  if (key === undefined) return undefined;
  const table = (s.templateRates ??= []);
  let least: TemplateRate | undefined;
  for (const t of table) {
    if (t.key === key) return t;
    if (least === undefined || t.visits < least.visits) least = t;
  }
  if (!create) return undefined;
  if (table.length < TEMPLATE_RATE_SLOTS || least === undefined) {
    const fresh = { key, visits: 0, changes: 0, exposureMs: 0 };
    table.push(fresh);
    return fresh;
  }
  return Object.assign(least, { key, visits: 0, changes: 0, exposureMs: 0 });
}

/**
 * The rate histogram of `host` in its site's state (RATE_BUCKETS counts); a host not yet tracked
 * takes a slot: a free one, or the one of the host with the fewest pages when all
 * HOST_RATE_SLOTS are taken (its pages are then priced as if alone until they come back).
 */
function hostCounts(s: SiteState, host: string): number[] {
  const table = (s.hostRates ??= []);
  let least: HostRates | undefined;
  let leastPages = Infinity;
  for (const h of table) {
    if (h.host === host) return h.counts;
    const pages = h.counts.reduce((a, b) => a + b, 0);
    if (pages < leastPages) [least, leastPages] = [h, pages];
  }
  const counts = Array<number>(RATE_BUCKETS).fill(0);
  if (table.length < HOST_RATE_SLOTS || least === undefined) table.push({ host, counts });
  else Object.assign(least, { host, counts });
  return counts;
}

function moveBucket(counts: number[], from: number, to: number): void {
  if (from === to) return;
  if (from >= 0 && counts[from]! > 0) counts[from]!--;
  if (to >= 0) counts[to]!++;
}

/**
 * `wanted`, but no longer than GROWTH × the time the URL's evidence has watched it (so one
 * unchanged revisit does not send a page to --recrawl-max), within `bounds`.
 */
function grown(wanted: number, own: ChangeEvidence, bounds: IntervalBounds): number {
  const cap = own.visits > 0 ? Math.max(bounds.min, GROWTH * own.exposureMs) : bounds.max;
  return Math.min(bounds.max, Math.max(bounds.min, Math.min(wanted, cap)));
}
