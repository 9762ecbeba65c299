import { seededRandom } from './seeded-random.js';

/**
 * The synthetic web as data: the specs of sites, their robots.txt and pages, and how a page is
 * rendered. The server in `synthetic-web.ts` serves these specs; `politeness.ts` reads the same
 * specs to judge a crawl; `standard-web.ts`, `real-web.ts` and the others build webs of them.
 * Every host ends in `.test` and every absolute link points at a `.test` host.
 */

/** Placeholder for the server's port in bodies, links and header values; replaced when serving. */
export const PORT = '{{PORT}}';

/** What a page generator knows about the request it answers. */
export interface PageContext {
  readonly port: number;
  /** Host name, lowercased, without port. */
  readonly host: string;
  /** Path and query exactly as requested. */
  readonly path: string;
  /** 1-based count of non-robots.txt requests to this host on this server, this one included. */
  readonly pageHits: number;
}

export type Body = string | Uint8Array;

/**
 * One page. With `body` the bytes are served as given; without it an HTML page is rendered from
 * `title`, `head`, `links` (one `<a href>` each, written verbatim) and `html`. Strings may
 * carry {@link PORT}.
 */
export interface PageSpec {
  readonly status?: number; // 200
  readonly contentType?: string; // text/html; charset=utf-8
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Body | ((ctx: PageContext) => Body);
  readonly title?: string;
  readonly head?: string;
  readonly links?: readonly string[] | ((ctx: PageContext) => readonly string[]);
  readonly html?: string;
  /** Wait this long before sending headers (adds to the site's delayMs). */
  readonly delayMs?: number;
  /** Send `Content-Encoding: gzip` when the request accepts gzip; identity otherwise. */
  readonly gzip?: boolean;
}

/** robots.txt as served; a site without one answers 404. */
export interface RobotsSpec {
  readonly status: number;
  readonly body: string;
  /** Location of a 3xx robots.txt (may carry {@link PORT} or `{{HTTPS_PORT}}`). */
  readonly location?: string;
}

/** A site's https origin and how its http origin relates to it (served by `origins.ts`). */
export interface OriginsSpec {
  /** The http origin answers every request, robots.txt included, with 301 to the same path on https. */
  readonly httpToHttps?: boolean;
  /** robots.txt of the https origin; without it the https origin serves `SiteSpec.robots` too. */
  readonly httpsRobots?: RobotsSpec;
}

/** The first `requests` page requests to a host (robots.txt excluded) answer `status` with Retry-After. */
export interface ThrottleSpec {
  readonly requests: number;
  readonly status: number;
  readonly retryAfterSec: number;
}

export interface SiteSpec {
  /** Lowercase, ends in `.test`. */
  readonly host: string;
  /** Also serve every subdomain of `host` (`*.host`) with these pages; `PageContext.host` names the one asked. */
  readonly subdomains?: boolean;
  /** Its home page is one of the seed URLs. */
  readonly seed?: boolean;
  /**
   * The loopback address (127.0.0.0/8) it is served on; default 127.0.0.1. Sites that share one
   * share the per-IP limit, as hosts on one server do on the real web.
   */
  readonly address?: string;
  readonly robots?: RobotsSpec;
  /** Keyed by path without query and without `;jsessionid=` parameters. */
  readonly pages: Readonly<Record<string, PageSpec>>;
  /** Pages for paths not in `pages` (traps); undefined = 404. */
  readonly route?: (pathname: string) => PageSpec | undefined;
  /** Every page response (not robots.txt) waits this long before headers. */
  readonly delayMs?: number;
  readonly throttle?: ThrottleSpec;
  /** Its https origin (served when the web is started with `tls`). */
  readonly origins?: OriginsSpec;
  /**
   * Answers page requests itself, before `pages` and `route` (robots.txt, origins and throttle
   * come first); undefined falls through to them. For content that depends on the request's time
   * and validators (`fresh-web.ts`). The body is sent as returned: no {@link PORT} substitution.
   */
  readonly respond?: (req: SiteRequest) => SiteReply | undefined;
}

/** A page request as {@link SiteSpec.respond} sees it. */
export interface SiteRequest {
  readonly method: string;
  /** Host name, lowercased, without port. */
  readonly host: string;
  /** Path and query exactly as requested. */
  readonly path: string;
  /** The key into `SiteSpec.pages`: no query, no `;jsessionid=`. */
  readonly pathname: string;
  readonly port: number;
  /** Epoch ms when the request's headers arrived: the `start` of its log entry. */
  readonly time: number;
  readonly ifNoneMatch?: string;
  readonly ifModifiedSince?: string;
}

/** What {@link SiteSpec.respond} sends; Content-Length is added by the server (never on a 304). */
export interface SiteReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Body;
  /**
   * Send the body in chunks of `chunkBytes`, `gapMs` apart, stopping when the client goes away;
   * the log's `bytes` then counts only the chunks the socket took. For judging how much of a
   * body a client read: a body sent whole sits in socket buffers whether it is read or not.
   */
  readonly pace?: { readonly chunkBytes: number; readonly gapMs: number };
}

/** Renders a page's bytes for one request, with {@link PORT} substituted. */
export function renderPage(page: PageSpec, ctx: PageContext): Body {
  const raw =
    page.body === undefined ? renderHtml(page, ctx) : typeof page.body === 'function' ? page.body(ctx) : page.body;
  return typeof raw === 'string' ? fillPort(raw, ctx.port) : raw;
}

export function fillPort(text: string, port: number): string {
  return text.replaceAll(PORT, String(port));
}

function renderHtml(page: PageSpec, ctx: PageContext): string {
  const title = page.title ?? ctx.path;
  const links = typeof page.links === 'function' ? page.links(ctx) : (page.links ?? []);
  const items = links.map((href) => `<li><a href="${href}">${href.trim() || 'link'}</a></li>`).join('\n');
  return [
    '<!doctype html>',
    `<html><head><meta charset="utf-8"><title>${title}</title>${page.head ?? ''}</head>`,
    `<body><h1 id="top">${title}</h1>`,
    // distinct text per title so unrelated pages are never near-duplicates of each other
    `<p>${prose(title, 120)}</p>`,
    `<ul>\n${items}\n</ul>`,
    page.html ?? '',
    '</body></html>',
    '',
  ].join('\n');
}

/** Deterministic pseudo-words seeded by `seed`: equal seeds give equal text. */
export function prose(seed: string, words: number): string {
  let state = 2166136261;
  for (let i = 0; i < seed.length; i++) state = Math.imul(state ^ seed.charCodeAt(i), 16777619) >>> 0;
  const next = seededRandom(state);
  const syllables = [
    'ka',
    'lo',
    'mi',
    'ne',
    'ru',
    'sa',
    'ti',
    'vo',
    'ze',
    'pa',
    'qui',
    'dro',
    'fen',
    'gal',
    'hob',
    'jun',
  ];
  const out: string[] = [];
  for (let w = 0; w < words; w++) {
    let word = '';
    const n = 2 + Math.floor(next() * 3);
    for (let s = 0; s < n; s++) word += syllables[Math.floor(next() * syllables.length)];
    out.push(word);
  }
  return out.join(' ');
}
