import { InvalidOptionError } from '../core/errors.js';
import { CHANGE_CLASSES, canRevalidate, changesBetween, type ChangeClass, type FreshPage } from './fresh-schedule.js';
import type { FreshWeb } from './fresh-web.js';
import type { RequestLogEntry } from './request-log.js';

/**
 * How stale a crawler kept the changing web (`fresh-web.ts`), judged from the server's request
 * log and the web's schedule alone, never from the crawler's own records.
 *
 * The crawler's copy of a page is the meaningful version the web had at the `start` of the
 * latest GET of the page answered 200 or 304 (a 304 confirms the copy is current); HEADs,
 * aborted requests and other statuses leave the copy as it was. A page is stale while its
 * current meaningful version differs from the crawler's copy; a cosmetic page's timestamp and
 * ad are not meaningful, so it is never stale once fetched. Before its first fetch a page is
 * stale from its birth (the epoch, or a feed item's publication) unless
 * `staleBeforeFirstFetch: false`; requests before `from` still set the copy.
 */

export interface StalenessOptions {
  /** Start of the window, epoch ms (like log entries' `start`). */
  from: number;
  /** End of the window, epoch ms. */
  to: number;
  /** Which pages count; default every page of the web born by `to` (feed items included). */
  pages?: (page: FreshPage) => boolean;
  /** Count the time from a page's birth to its first fetch as stale. Default true. */
  staleBeforeFirstFetch?: boolean;
}

export interface PageStaleness {
  readonly page: FreshPage;
  /** Seconds in the window during which the crawler's copy was out of date (or missing). */
  readonly staleSec: number;
  /** GETs answered 200 or 304 whose `start` is in the window. */
  readonly fetches: number;
  /** Of those, 304s with no body. */
  readonly notModified: number;
  /** Meaningful changes in the window. */
  readonly changes: number;
}

export interface ClassStaleness {
  pages: number;
  staleSec: number;
  fetches: number;
  notModified: number;
}

export interface StalenessReport {
  /** Sum of `staleSec` over the pages counted. */
  readonly totalSec: number;
  readonly pages: readonly PageStaleness[];
  /** Every class of `CHANGE_CLASSES`, zeros for a class the counted pages lack. */
  readonly byClass: Readonly<Record<ChangeClass, ClassStaleness>>;
  /** Sum of `fetches`. */
  readonly fetches: number;
  /**
   * GETs in the window, answered 200 or 304, to counted `never` pages that send a validator
   * (`canRevalidate`), other than each page's first such GET ever.
   */
  readonly neverRevisits: number;
  /** Of those, 304s with no body. */
  readonly neverNotModified: number;
  /** neverNotModified / neverRevisits; NaN when there were no revisits. */
  readonly neverNotModifiedShare: number;
}

/** Path without query or fragment. */
function pathnameOf(path: string): string {
  const cut = path.search(/[?#]/);
  return cut < 0 ? path : path.slice(0, cut);
}

/** The log's GETs that gave the crawler a copy (200 or 304, not aborted), by page key, in order. */
function copiesByPage(log: readonly RequestLogEntry[]): Map<string, RequestLogEntry[]> {
  const out = new Map<string, RequestLogEntry[]>();
  for (const e of log) {
    if (e.method !== 'GET' || e.aborted === true || (e.status !== 200 && e.status !== 304)) continue;
    const key = `${e.host}${pathnameOf(e.path)}`;
    const list = out.get(key);
    if (list) list.push(e);
    else out.set(key, [e]);
  }
  for (const list of out.values()) list.sort((a, b) => a.start - b.start);
  return out;
}

/** The pages counted by `options`: born by `to`, accepted by `options.pages`. */
export function countedPages(web: FreshWeb, options: StalenessOptions): FreshPage[] {
  if (!(options.to >= options.from))
    throw new InvalidOptionError(`staleness window must have to ≥ from, got ${options.from} … ${options.to}`);
  const filter = options.pages ?? (() => true);
  return web.pagesAt(web.webTime(options.to)).filter(filter);
}

/** Staleness of every counted page over the window, from the log; see the module comment. */
export function staleness(log: readonly RequestLogEntry[], web: FreshWeb, options: StalenessOptions): StalenessReport {
  const pages = countedPages(web, options);
  const copies = copiesByPage(log);
  const staleBefore = options.staleBeforeFirstFetch ?? true;
  const a = web.webTime(options.from);
  const b = web.webTime(options.to);
  const byClass = Object.fromEntries(
    CHANGE_CLASSES.map((c) => [c, { pages: 0, staleSec: 0, fetches: 0, notModified: 0 }]),
  ) as Record<ChangeClass, ClassStaleness>;
  const results: PageStaleness[] = [];
  let neverRevisits = 0;
  let neverNotModified = 0;
  for (const page of pages) {
    const bumps = web.bumpsOf(page);
    const gets = (copies.get(`${page.host}${page.path}`) ?? [])
      .map((e) => ({ e, at: web.webTime(e.start) }))
      .filter(({ at }) => web.versionAt(page, at) !== undefined);
    const inWindow = gets.filter(({ at }) => at >= a && at <= b);
    const notModified = inWindow.filter(({ e }) => e.status === 304 && e.bytes === 0).length;
    if (page.changeClass === 'never' && canRevalidate(page)) {
      const revisits = inWindow.filter(({ e }) => e !== gets[0]?.e);
      neverRevisits += revisits.length;
      neverNotModified += revisits.filter(({ e }) => e.status === 304 && e.bytes === 0).length;
    }
    const start = Math.max(a, page.bornSec);
    let staleSec = 0;
    let changes = 0;
    if (start < b) {
      const changeTimes = changesBetween(page, bumps, start, b).filter((c) => c < b);
      changes = changeTimes.filter((c) => c > a).length;
      const cuts = [start, b, ...changeTimes, ...gets.map(({ at }) => at).filter((at) => at > start && at < b)];
      const points = [...new Set(cuts)].sort((x, y) => x - y);
      let next = 0; // gets[0 .. next) started at or before the current point
      for (let i = 0; i + 1 < points.length; i++) {
        const x = points[i]!;
        while (next < gets.length && gets[next]!.at <= x) next++;
        const current = web.versionAt(page, x)!.version;
        const latest = next === 0 ? undefined : web.versionAt(page, gets[next - 1]!.at)!.version;
        const stale = latest === undefined ? staleBefore : latest !== current;
        if (stale) staleSec += points[i + 1]! - x;
      }
    }
    results.push({ page, staleSec, fetches: inWindow.length, notModified, changes });
    const cls = byClass[page.changeClass];
    cls.pages++;
    cls.staleSec += staleSec;
    cls.fetches += inWindow.length;
    cls.notModified += notModified;
  }
  return {
    totalSec: results.reduce((sum, r) => sum + r.staleSec, 0),
    pages: results,
    byClass,
    fetches: results.reduce((sum, r) => sum + r.fetches, 0),
    neverRevisits,
    neverNotModified,
    neverNotModifiedShare: neverRevisits === 0 ? NaN : neverNotModified / neverRevisits,
  };
}

/** {@link fixedIntervalStaleness}'s options: the window and pages of `staleness`, and a warm-up. */
export interface FixedIntervalOptions extends StalenessOptions {
  /**
   * Run the schedule, at the same interval, from the epoch up to `from` too, so its copies at
   * `from` are a steady state's, like those of a crawler that has run since the start; only the
   * window's `fetchCount` fetches count. Default true; irrelevant when `from` is the epoch.
   */
  warmUp?: boolean;
}

/**
 * The report `staleness` gives for a fixed-interval schedule with `fetchCount` fetches (200s) of
 * the counted pages in the window: fetch i at `from + i * (to - from) / fetchCount` (i from 0,
 * or with the warm-up from the first i at or after the epoch), to the next page in a round-robin
 * that alternates hosts (each host's pages in layout order, feed items by publication) and skips
 * pages not yet born. It knows the URLs but not when pages change: the baseline an adaptive
 * schedule with the same number of fetches is compared to. Per-host politeness is not enforced;
 * with the hosts alternating, one host's fetches are about `hosts * (to - from) / fetchCount`
 * apart.
 */
export function fixedIntervalStaleness(
  web: FreshWeb,
  fetchCount: number,
  options: FixedIntervalOptions,
): StalenessReport {
  if (!Number.isInteger(fetchCount) || fetchCount < 0)
    throw new InvalidOptionError(`fetch count must be a non-negative integer, got ${String(fetchCount)}`);
  const pages = countedPages(web, options);
  const byHost = web.layout.hosts.map((h) => pages.filter((p) => p.host === h));
  const order: FreshPage[] = [];
  for (let i = 0; order.length < pages.length; i++)
    for (const list of byHost) if (i < list.length) order.push(list[i]!);
  const log: RequestLogEntry[] = [];
  let cursor = 0;
  const gap = (options.to - options.from) / fetchCount;
  const warmUp = options.warmUp ?? true;
  const first = warmUp && gap > 0 ? -Math.max(0, Math.floor((options.from - web.epoch) / gap)) : 0;
  for (let i = first; i < fetchCount && order.length > 0; i++) {
    const time = options.from + i * gap;
    const t = web.webTime(time);
    for (let tries = 0; tries < order.length; tries++) {
      const page = order[cursor]!;
      cursor = (cursor + 1) % order.length;
      if (page.bornSec > t) continue;
      log.push({
        seq: log.length + 1,
        host: page.host,
        method: 'GET',
        path: page.path,
        start: time,
        end: time,
        status: 200,
        bytes: 1,
      });
      break;
    }
  }
  return staleness(log, web, options);
}

/**
 * Seconds from web time `sinceSec` to the first GET of `page` answered 200 or 304 whose `start`
 * is at or after it; undefined when there is none. For "a bumped page is fetched within one
 * recrawl-min" (`sinceSec` = the bump) and "a new feed item within one feed interval".
 */
export function fetchDelay(
  log: readonly RequestLogEntry[],
  web: FreshWeb,
  page: FreshPage,
  sinceSec: number,
): number | undefined {
  let first: number | undefined;
  for (const e of copiesByPage(log).get(`${page.host}${page.path}`) ?? []) {
    const at = web.webTime(e.start);
    if (at >= sinceSec && (first === undefined || at < first)) first = at;
  }
  return first === undefined ? undefined : first - sinceSec;
}

/** Each feed item published in [from, to] (epoch ms) with its {@link fetchDelay} from publication. */
export function feedItemDelays(
  log: readonly RequestLogEntry[],
  web: FreshWeb,
  window: { from: number; to: number },
): { page: FreshPage; delaySec: number | undefined }[] {
  const from = web.webTime(window.from);
  return web
    .pagesAt(web.webTime(window.to))
    .filter((p) => p.reach === 'feed' && p.bornSec >= from)
    .map((page) => ({ page, delaySec: fetchDelay(log, web, page, page.bornSec) }));
}
