import { InvalidOptionError } from '../core/errors.js';
import { seededRandom } from './seeded-random.js';

/**
 * The changing web as a schedule: which pages exist, when each one's meaningful content changes,
 * which validators it sends and how a crawler can reach it. Pure data and pure functions of web
 * time (seconds since the web's epoch); `fresh-web.ts` serves it, `staleness.ts` judges a crawl
 * against it.
 */

/**
 * How a page's meaningful content changes: `fast` and `slow` every `periodSec`; `never`;
 * `cosmetic`, whose meaningful content never changes but whose bytes do (a timestamp and a
 * rotating ad line, every `cosmeticSec`); and `bursty`, a burst of `burst.changes` changes
 * `burst.gapSec` apart every `periodSec`, quiet in between (a story being edited, then left).
 */
export type ChangeClass = 'fast' | 'slow' | 'never' | 'cosmetic' | 'bursty';
// bursty last: a host's pages are laid out in this order, so layouts without bursty pages are
// those of the web before it had them
export const CHANGE_CLASSES: readonly ChangeClass[] = ['fast', 'slow', 'never', 'cosmetic', 'bursty'];

/** Which validators a page's 200 carries: both, one, or none (such a page can never answer 304). */
export type Validators = 'both' | 'etag' | 'last-modified' | 'none';

/** How a crawler finds a page: links from the host's pages, only a sitemap, or only a feed. */
export type Reach = 'linked' | 'sitemap' | 'feed';

/** The child sitemap that lists a page. */
export type SitemapChild = 'xml' | 'gz' | 'txt';

export interface FreshPage {
  readonly host: string;
  /** Path without query. */
  readonly path: string;
  readonly changeClass: ChangeClass;
  /** Seconds between meaningful changes (of a `bursty` page: between bursts); Infinity for `never` and `cosmetic`. */
  readonly periodSec: number;
  /**
   * The k-th scheduled change (k ≥ 1) is at `phaseSec + k * periodSec`; a `bursty` page's k-th
   * burst starts there. 0 ≤ phaseSec < periodSec.
   */
  readonly phaseSec: number;
  /**
   * `bursty` pages only: the k-th burst's changes are at `phaseSec + k * periodSec + j * gapSec`
   * for j from 0 to `changes − 1`; a burst ends before the next begins.
   */
  readonly burst?: { readonly changes: number; readonly gapSec: number };
  readonly validators: Validators;
  readonly reach: Reach;
  /** Undefined for feed items, which no sitemap lists. */
  readonly sitemap?: SitemapChild;
  /** The page exists from this web time on (0, or a feed item's publication); 404 before. */
  readonly bornSec: number;
}

export interface FreshWebOptions {
  /** Periods, phases and the text of every page follow from it. Default 1. */
  seed?: number;
  /** Epoch ms of web time 0, rounded down to a whole second. Default: now. */
  epoch?: number;
  /**
   * 1 to 100; default 3. The first four are `news`, `shop`, `docs` and `wiki.fresh.test`, then
   * `site5.fresh.test`, `site6.fresh.test`, ….
   */
  hosts?: number;
  /**
   * Linked pages per host by class (the home page is one more, `slow`). Default 2 fast, 2 slow,
   * 3 never, 1 cosmetic, 0 bursty. With `sitemapOnly`, at most 100 pages a host besides its home.
   */
  perHost?: Partial<Record<ChangeClass, number>>;
  /** Pages per host listed only in a sitemap (classes never, slow, never, …). Default 3. */
  sitemapOnly?: number;
  /** Inclusive range of fast periods, whole seconds. Default [15, 30]. */
  fastSec?: readonly [number, number];
  /** Inclusive range of slow periods, whole seconds. Default [120, 300]. */
  slowSec?: readonly [number, number];
  /** Inclusive range of the seconds from one burst's start to the next's, whole seconds. Default [120, 300]. */
  burstySec?: readonly [number, number];
  /** Meaningful changes in one burst. Default 4. */
  burstChanges?: number;
  /** Seconds between the changes of one burst; a burst must end before `burstySec[0]`. Default 5. */
  burstGapSec?: number;
  /** A cosmetic page's bytes change every this many seconds. Default 5. */
  cosmeticSec?: number;
  /** A new feed item every this many seconds, the first at `feedSec`. Default 30. */
  feedSec?: number;
  /** Items a feed lists, newest first. Default 20. */
  feedSize?: number;
}

export interface FreshLayout {
  readonly hosts: readonly string[];
  /** The host serving the RSS and Atom feeds (the first). */
  readonly feedHost: string;
  /** Every page but feed items, in host order then declaration order. */
  readonly pages: readonly FreshPage[];
  readonly cosmeticSec: number;
  readonly feedSec: number;
  readonly feedSize: number;
}

const NAMED_HOSTS = ['news.fresh.test', 'shop.fresh.test', 'docs.fresh.test', 'wiki.fresh.test'];
// every home page links every other one: 100 hosts is 99 links to other hosts a home page
const MAX_HOSTS = 100;
const WORDS = ['river', 'stone', 'maple', 'harbor', 'lantern', 'meadow', 'copper', 'willow', 'summit', 'falcon'];
// pageName gives this many distinct names
const MAX_PAGES_PER_HOST = WORDS.length * WORDS.length;
// about one fast page in six and one never page in eight send no validators; the rest mostly both
const VALIDATOR_CYCLE: Record<ChangeClass, readonly Validators[]> = {
  fast: ['both', 'etag', 'last-modified', 'both', 'both', 'none'],
  slow: ['both', 'last-modified', 'etag', 'both'],
  never: ['both', 'etag', 'last-modified', 'both', 'both', 'both', 'both', 'none'],
  cosmetic: ['both'],
  bursty: ['both', 'last-modified', 'etag', 'both'],
};
const SITEMAP_ONLY_CLASSES: readonly ChangeClass[] = ['never', 'slow'];
const CHILDREN: readonly SitemapChild[] = ['xml', 'gz', 'txt'];

function wholeSeconds(name: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min)
    throw new InvalidOptionError(`${name} must be an integer ≥ ${min}, got ${String(value)}`);
  return value;
}

function range(name: string, value: readonly [number, number]): readonly [number, number] {
  wholeSeconds(`${name}[0]`, value[0], 1);
  wholeSeconds(`${name}[1]`, value[1], value[0]);
  return value;
}

/** The name of the i-th host (from 0): four named ones, then `site5.fresh.test`, …. */
function hostName(i: number): string {
  return NAMED_HOSTS[i] ?? `site${i + 1}.fresh.test`;
}

/** Validates the options and lays the web out; equal options give equal layouts. */
export function freshLayout(options: FreshWebOptions = {}): FreshLayout {
  const seed = options.seed ?? 1;
  const hostCount = wholeSeconds('hosts', options.hosts ?? 3, 1);
  if (hostCount > MAX_HOSTS) throw new InvalidOptionError(`hosts must be at most ${MAX_HOSTS}, got ${hostCount}`);
  const bursty = range('burstySec', options.burstySec ?? [120, 300]);
  const periods: Partial<Record<ChangeClass, readonly [number, number]>> = {
    fast: range('fastSec', options.fastSec ?? [15, 30]),
    slow: range('slowSec', options.slowSec ?? [120, 300]),
    bursty,
  };
  const burst = {
    changes: wholeSeconds('burstChanges', options.burstChanges ?? 4, 1),
    gapSec: wholeSeconds('burstGapSec', options.burstGapSec ?? 5, 1),
  };
  const burstSpan = (burst.changes - 1) * burst.gapSec;
  if (burstSpan >= bursty[0])
    throw new InvalidOptionError(
      `a burst, (burstChanges − 1) × burstGapSec = ${burstSpan} s, must end before the next begins: burstySec[0] must be > ${burstSpan}, got ${bursty[0]}`,
    );
  const perHost: Record<ChangeClass, number> = {
    fast: 2,
    slow: 2,
    never: 3,
    cosmetic: 1,
    bursty: 0,
    ...options.perHost,
  };
  for (const cls of CHANGE_CLASSES) wholeSeconds(`perHost.${cls}`, perHost[cls], 0);
  const sitemapOnly = wholeSeconds('sitemapOnly', options.sitemapOnly ?? 3, 0);
  const perHostTotal = CHANGE_CLASSES.reduce((sum, cls) => sum + perHost[cls], sitemapOnly);
  if (perHostTotal > MAX_PAGES_PER_HOST)
    throw new InvalidOptionError(
      `perHost and sitemapOnly must add up to at most ${MAX_PAGES_PER_HOST} pages a host (the distinct page names), got ${perHostTotal}`,
    );
  const random = seededRandom(seed);
  const counters: Record<ChangeClass, number> = { fast: 0, slow: 0, never: 0, cosmetic: 0, bursty: 0 };
  const hosts = Array.from({ length: hostCount }, (_, i) => hostName(i));
  const pages: FreshPage[] = [];
  for (const host of hosts) {
    const add = (path: string, changeClass: ChangeClass, reach: Reach, sitemap: SitemapChild): void => {
      const between = periods[changeClass];
      const periodSec = between ? between[0] + Math.floor(random() * (between[1] - between[0] + 1)) : Infinity;
      const phaseSec = Number.isFinite(periodSec) ? Math.floor(random() * periodSec) : 0;
      const cycle = VALIDATOR_CYCLE[changeClass];
      const validators =
        reach === 'linked' && path !== '/' ? cycle[counters[changeClass]++ % cycle.length]! : ('both' as const);
      const page: FreshPage = { host, path, changeClass, periodSec, phaseSec, validators, reach, sitemap, bornSec: 0 };
      pages.push(changeClass === 'bursty' ? { ...page, burst } : page);
    };
    add('/', 'slow', 'linked', 'xml');
    let n = 0;
    for (const cls of CHANGE_CLASSES)
      for (let i = 0; i < perHost[cls]; i++) add(`/${pageName(n)}.html`, cls, 'linked', CHILDREN[n++ % 3]!);
    // the first sitemap-only page of a host is in the plain sitemap, the second in the gzipped one, the third in the text one
    for (let i = 0; i < sitemapOnly; i++)
      add(`/listed/${pageName(n++)}.html`, SITEMAP_ONLY_CLASSES[i % 2]!, 'sitemap', CHILDREN[i % 3]!);
  }
  return {
    hosts,
    feedHost: hosts[0]!,
    pages,
    cosmeticSec: wholeSeconds('cosmeticSec', options.cosmeticSec ?? 5, 1),
    feedSec: wholeSeconds('feedSec', options.feedSec ?? 30, 1),
    feedSize: wholeSeconds('feedSize', options.feedSize ?? 20, 1),
  };
}

/** A readable name, no numbered template (a crawler's trap rules must not fire on it). */
function pageName(i: number): string {
  return `${WORDS[i % WORDS.length]}-${WORDS[Math.floor(i / WORDS.length) % WORDS.length]}`;
}

/** The k-th feed item (k ≥ 1) of the layout: a `never` page published at `k * feedSec`. */
export function feedItem(layout: FreshLayout, k: number): FreshPage {
  return {
    host: layout.feedHost,
    path: `/stories/${pageName(k * 7)}-${k.toString(36)}.html`,
    changeClass: 'never',
    periodSec: Infinity,
    phaseSec: 0,
    validators: 'both',
    reach: 'feed',
    bornSec: k * layout.feedSec,
  };
}

/** Feed items published at or before web time `t`, oldest first. */
export function feedItemsAt(layout: FreshLayout, t: number): FreshPage[] {
  const count = t < 0 ? 0 : Math.floor(t / layout.feedSec);
  return Array.from({ length: count }, (_, i) => feedItem(layout, i + 1));
}

/**
 * Times of a page's meaningful changes in (after, until], ascending: its scheduled changes (a
 * bursty page's bursts) and its bumps (`bumps`, sorted ascending), both after its birth. Times
 * are whole seconds.
 */
export function changesBetween(page: FreshPage, bumps: readonly number[], after: number, until: number): number[] {
  const out: number[] = [];
  const lo = Math.max(after, page.bornSec);
  if (Number.isFinite(page.periodSec)) {
    // a periodic page is a burst of one change
    const { changes, gapSec } = page.burst ?? { changes: 1, gapSec: 0 };
    // the first cycle whose last change is after lo
    const first = Math.max(1, Math.floor((lo - page.phaseSec - (changes - 1) * gapSec) / page.periodSec) + 1);
    for (let k = first; page.phaseSec + k * page.periodSec <= until; k++)
      for (let j = 0; j < changes; j++) {
        const at = page.phaseSec + k * page.periodSec + j * gapSec;
        if (at > lo && at <= until) out.push(at);
      }
  }
  for (const b of bumps) if (b > lo && b <= until) out.push(b);
  return [...new Set(out)].sort((a, b) => a - b);
}

/**
 * The page's meaningful version at web time `t` (0 at birth, +1 per change time), and when that
 * version began; undefined before the page is born.
 */
export function versionAt(
  page: FreshPage,
  bumps: readonly number[],
  t: number,
): { version: number; sinceSec: number } | undefined {
  if (t < page.bornSec) return undefined;
  const changes = changesBetween(page, bumps, -Infinity, t);
  return { version: changes.length, sinceSec: changes.at(-1) ?? page.bornSec };
}

/** Whether a request for the page can ever be answered 304: it sends a validator. */
export function canRevalidate(page: FreshPage): boolean {
  return page.validators !== 'none';
}
