import { createHash } from 'node:crypto';
import { InvalidOptionError } from '../core/errors.js';
import {
  ATOM_PATH,
  RSS_PATH,
  SITEMAP_INDEX,
  SITEMAP_PATHS,
  renderFeed,
  renderPage,
  renderSitemap,
  renderSitemapIndex,
  type RenderContext,
  type Rendered,
} from './fresh-content.js';
import {
  feedItem,
  feedItemsAt,
  freshLayout,
  versionAt,
  type FreshLayout,
  type FreshPage,
  type FreshWebOptions,
  type SitemapChild,
} from './fresh-schedule.js';
import { PORT, type SiteReply, type SiteRequest, type SiteSpec } from './sites.js';

export type { ChangeClass, FreshPage, FreshWebOptions, Reach, SitemapChild, Validators } from './fresh-schedule.js';
export { canRevalidate, CHANGE_CLASSES } from './fresh-schedule.js';
export { ATOM_PATH, RSS_PATH, SITEMAP_INDEX, SITEMAP_PATHS } from './fresh-content.js';

/**
 * A web whose pages change over time, for testing recrawl schedules (issue #15). Hosts
 * `news.fresh.test`, `shop.fresh.test`, … each have a home page linking its pages of every change
 * class (fast, slow, never, cosmetic, bursty; see `fresh-schedule.ts`), pages listed only in a
 * sitemap, and a robots.txt naming a sitemap index whose children are a plain XML sitemap, a
 * gzipped one and a text one. The first host also serves an RSS 2.0 and an Atom feed, linked from its home
 * page, that gain an item every `feedSec`; an item's page is reachable only from the feeds.
 *
 * Everything served is a function of the request's time (the `start` of its log entry) minus
 * `epoch`, the seed and the bumps, so a test can move the epoch instead of sleeping and a judge
 * can replay the schedule from the server's log.
 *
 * Validators: a strong ETag that is a hash of the exact bytes sent (so it changes with every
 * meaningful version, and with every cosmetic tick of a cosmetic page), and Last-Modified, the
 * time the bytes last changed (the version's start; a cosmetic page's tick). A page sends both,
 * one, or neither (`FreshPage.validators`); sitemaps and feeds send both. Conditional GET
 * follows RFC 9110 13.2.2: If-None-Match (weak comparison, `*` included) decides when present,
 * otherwise If-Modified-Since against Last-Modified; a match answers 304 with the validators and
 * no body.
 */
export class FreshWeb {
  readonly layout: FreshLayout;
  /** The sites to serve: `SyntheticWeb.start({ sites: web.sites })`. Every home page is a seed. */
  readonly sites: SiteSpec[];
  readonly #bumps = new Map<string, number[]>();
  readonly #byKey: ReadonlyMap<string, FreshPage>;
  #epoch = 0;

  constructor(options: FreshWebOptions = {}) {
    this.layout = freshLayout(options);
    this.epoch = options.epoch ?? Date.now();
    this.#byKey = new Map(this.layout.pages.map((p) => [`${p.host}${p.path}`, p]));
    this.sites = this.layout.hosts.map((host) => ({
      host,
      seed: true,
      robots: { status: 200, body: `User-agent: *\nDisallow:\nSitemap: http://${host}:${PORT}${SITEMAP_INDEX}\n` },
      pages: {},
      respond: (req) => this.#respond(req),
    }));
  }

  /** Epoch ms of web time 0, a whole second. Setting it rewinds or advances the whole web, bumps included. */
  get epoch(): number {
    return this.#epoch;
  }

  set epoch(ms: number) {
    if (!Number.isFinite(ms)) throw new InvalidOptionError(`epoch must be a finite number of ms, got ${String(ms)}`);
    this.#epoch = Math.floor(ms / 1000) * 1000;
  }

  /**
   * Moves the epoch so that `now` (epoch ms, default the clock) is web time `t` to `t + 1` (the
   * epoch is a whole second): a test's way to let time pass without sleeping. Moving the epoch
   * back by Δ also moves every past version's start, hence its Last-Modified, Δ earlier.
   */
  jumpTo(t: number, now: number = Date.now()): void {
    this.epoch = now - t * 1000;
  }

  /** `http://host:port/path` of a page as served on `port`. */
  url(page: FreshPage, port: number): string {
    return `http://${page.host}:${port}${page.path}`;
  }

  /** Web time, in seconds, of epoch ms `time` (default now). */
  webTime(time: number = Date.now()): number {
    return (time - this.#epoch) / 1000;
  }

  /** The page at `host` and `path` (no query), feed items included whether published yet or not. */
  page(host: string, path: string): FreshPage | undefined {
    const fixed = this.#byKey.get(`${host}${path}`);
    if (fixed !== undefined || host !== this.layout.feedHost) return fixed;
    const m = /^\/stories\/[a-z-]+-([0-9a-z]+)\.html$/.exec(path);
    if (m === null) return undefined;
    const k = parseInt(m[1]!, 36);
    if (!(k >= 1)) return undefined;
    const item = feedItem(this.layout, k);
    return item.path === path ? item : undefined;
  }

  /** Every page born at or before web time `t`: the layout's pages and the feed items published by then. */
  pagesAt(t: number): FreshPage[] {
    return [...this.layout.pages.filter((p) => p.bornSec <= t), ...feedItemsAt(this.layout, t)];
  }

  /** The page's bumps, ascending web seconds. */
  bumpsOf(page: FreshPage): readonly number[] {
    return this.#bumps.get(`${page.host}${page.path}`) ?? [];
  }

  /**
   * Schedules a meaningful change of a page at web time `atSec` (a whole second; default the next
   * whole second from now): from then on its content, ETag, Last-Modified and sitemap `lastmod`
   * are those of a new version. Returns `atSec`.
   */
  bump(host: string, path: string, atSec: number = Math.ceil(this.webTime())): number {
    const page = this.page(host, path);
    if (page === undefined) throw new InvalidOptionError(`no page ${path} on ${host} to bump`);
    if (!Number.isInteger(atSec) || atSec <= page.bornSec)
      throw new InvalidOptionError(
        `bump time must be a whole number of seconds after the page's birth (${page.bornSec}), got ${String(atSec)}`,
      );
    const key = `${host}${path}`;
    const times = [...(this.#bumps.get(key) ?? []), atSec].sort((a, b) => a - b);
    this.#bumps.set(key, times);
    return atSec;
  }

  /** The page's meaningful version at web time `t` and when it began; undefined before its birth. */
  versionAt(page: FreshPage, t: number): { version: number; sinceSec: number } | undefined {
    return versionAt(page, this.bumpsOf(page), t);
  }

  /** The page's HTML at web time `t` as served on `port` (for tests of its text). */
  htmlAt(page: FreshPage, t: number, port: number): string {
    return Buffer.from(renderPage(this.#context(port), page, t).body).toString('utf8');
  }

  #context(port: number): RenderContext {
    return { layout: this.layout, epoch: this.#epoch, port, versionAt: (p, t) => this.versionAt(p, t) };
  }

  #respond(req: SiteRequest): SiteReply | undefined {
    const t = this.webTime(req.time);
    const ctx = this.#context(req.port);
    const rendered = this.#render(ctx, req.host, req.pathname, t);
    if (rendered === undefined) return undefined;
    const { doc, validators } = rendered;
    const headers: Record<string, string> = {};
    if (validators === 'both' || validators === 'etag') {
      headers['etag'] = `"${createHash('sha256').update(doc.body).digest('base64url').slice(0, 22)}"`;
    }
    if (validators === 'both' || validators === 'last-modified') {
      headers['last-modified'] = new Date(this.#epoch + doc.lastModifiedSec * 1000).toUTCString();
    }
    if (notModified(req, headers['etag'], headers['last-modified'])) return { status: 304, headers, body: '' };
    return { status: 200, headers: { ...headers, 'content-type': doc.contentType }, body: doc.body };
  }

  #render(
    ctx: RenderContext,
    host: string,
    path: string,
    t: number,
  ): { doc: Rendered; validators: FreshPage['validators'] } | undefined {
    if (path === SITEMAP_INDEX) return { doc: renderSitemapIndex(ctx, host, t), validators: 'both' };
    const child = (Object.keys(SITEMAP_PATHS) as SitemapChild[]).find((c) => SITEMAP_PATHS[c] === path);
    if (child !== undefined) return { doc: renderSitemap(ctx, host, child, t), validators: 'both' };
    if (host === this.layout.feedHost && (path === RSS_PATH || path === ATOM_PATH)) {
      const kind = path === RSS_PATH ? 'rss' : 'atom';
      return { doc: renderFeed(ctx, feedItemsAt(this.layout, t), kind), validators: 'both' };
    }
    const page = this.page(host, path);
    if (page === undefined || this.versionAt(page, t) === undefined) return undefined;
    return { doc: renderPage(ctx, page, t), validators: page.validators };
  }
}

/** `new FreshWeb(options)`. */
export function freshWeb(options: FreshWebOptions = {}): FreshWeb {
  return new FreshWeb(options);
}

/** RFC 9110 13.2.2: whether a GET or HEAD is answered 304 given the validators the 200 would carry. */
function notModified(req: SiteRequest, etag: string | undefined, lastModified: string | undefined): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  if (req.ifNoneMatch !== undefined) {
    const opaque = (tag: string): string => tag.trim().replace(/^W\//, '');
    return req.ifNoneMatch
      .split(',')
      .some((tag) => tag.trim() === '*' || (etag !== undefined && opaque(tag) === opaque(etag)));
  }
  if (req.ifModifiedSince === undefined || lastModified === undefined) return false;
  const since = Date.parse(req.ifModifiedSince);
  return !Number.isNaN(since) && Date.parse(lastModified) <= since;
}
