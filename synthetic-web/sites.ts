import { seededRandom } from './seeded-random.js';

/**
 * The synthetic web as data: sites, their robots.txt and pages. The server in
 * `synthetic-web.ts` serves these specs; `politeness.ts` reads the same specs to judge a crawl.
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

const at = (host: string, path = '/'): string => `http://${host}:${PORT}${path}`;
const allowAll: RobotsSpec = { status: 200, body: 'User-agent: *\nDisallow:\n' };
const noPrivate: RobotsSpec = { status: 200, body: 'User-agent: *\nDisallow: /private/\n' };

// www.alpha.test pages that mirror.test serves byte for byte; their relative links resolve to
// pages that exist on both hosts, so the expected crawl does not depend on which copy is first.
const alphaA: PageSpec = { title: 'Alpha A', links: ['b.html', 'c.html', '/'] };
const alphaB: PageSpec = {
  title: 'Alpha B',
  links: ['c.html', '/', `HTTP://WWW.ALPHA.TEST:${PORT}/a.html`, at('gamma.test')],
};
const alphaC: PageSpec = { title: 'Alpha C', links: ['b.html', '/', at('news.test', '/story.html')] };

function wwwAlpha(): SiteSpec {
  return {
    host: 'www.alpha.test',
    seed: true,
    robots: noPrivate,
    pages: {
      '/': {
        title: 'Alpha home',
        head: `<link rel="canonical" href="${at('www.alpha.test')}">`,
        links: [
          'a.html',
          './b.html',
          'c.html',
          `HTTP://WWW.ALPHA.TEST:${PORT}/a.html`,
          '/about/',
          '/private/secret.html',
          '#top',
          'javascript:void(0)',
          'mailto:x@y.test',
          'http://[::1',
          '  /spaces  ',
          at('blog.alpha.test'),
          at('beta.test'),
        ],
      },
      '/a.html': alphaA,
      '/b.html': alphaB,
      '/c.html': alphaC,
      // <base> makes `guide.html` resolve to /docs/guide.html; /about/guide.html does not exist
      '/about/': {
        title: 'About alpha',
        head: '<base href="/docs/">',
        links: ['guide.html', at('blog.alpha.test', '/about.html')],
      },
      '/docs/guide.html': { title: 'Alpha guide', links: ['../c.html', at('blog.alpha.test', '/2026/01/hello.html')] },
      '/spaces': { title: 'Alpha spaces', links: ['/'] },
      '/private/secret.html': { title: 'Alpha secret' },
    },
  };
}

function blogAlpha(): SiteSpec {
  return {
    host: 'blog.alpha.test',
    seed: true,
    robots: noPrivate,
    pages: {
      '/': {
        title: 'Alpha blog',
        links: [
          '2026/01/hello.html',
          '/2026/02/world.html',
          'tags/',
          'archive.html',
          'about.html',
          '/private/draft.html',
          at('www.alpha.test'),
          `//www.alpha.test:${PORT}/about/`,
          at('slow.test'),
          at('busy.test'),
        ],
        html: '<p><a rel="nofollow" href="/nofollow.html">sponsored</a></p>',
      },
      '/2026/01/hello.html': {
        title: 'Hello 2026',
        head: `<link rel="canonical" href="${at('blog.alpha.test', '/2026/01/hello.html')}">`,
        links: ['../02/world.html', '/', at('www.alpha.test', '/c.html')],
      },
      '/2026/02/world.html': {
        title: 'World 2026',
        links: ['../01/hello.html', '/tags/', at('trap.test'), at('redirect.test', '/old')],
      },
      '/tags/': { title: 'Blog tags', links: ['../2026/01/hello.html', '../archive.html', '#top'] },
      '/archive.html': { title: 'Blog archive', links: ['2026/01/hello.html', '2026/02/world.html', at('files.test')] },
      '/about.html': { title: 'About the blog', links: ['/', 'mailto:x@y.test'] },
      '/private/draft.html': { title: 'Blog draft' },
      '/nofollow.html': { title: 'Blog sponsor' },
    },
  };
}

/** A seeded site whose pages are generated from `path → hrefs`, titled `<host> <path>`. */
function simpleSite(
  host: string,
  robots: RobotsSpec | undefined,
  links: Record<string, string[]>,
  extra: Partial<SiteSpec> = {},
): SiteSpec {
  const pages: Record<string, PageSpec> = {};
  for (const [path, hrefs] of Object.entries(links)) pages[path] = { title: `${host} ${path}`, links: hrefs };
  return { host, seed: true, ...(robots ? { robots } : {}), pages, ...extra };
}

const newsLinks = ['/', '/story.html', '/print/story.html'];
/** The same article under three URLs; only the "updated" line differs between any two responses. */
const newsArticle: PageSpec = {
  body: (ctx) =>
    [
      '<!doctype html>',
      '<html><head><meta charset="utf-8"><title>Harbour reopens</title></head><body>',
      '<h1>Harbour reopens</h1>',
      `<p class="updated">Updated ${new Date().toISOString()} (edition ${ctx.pageHits})</p>`,
      `<p>${prose('news article', 300)}</p>`,
      `<ul>${newsLinks.map((h) => `<li><a href="${h}">${h}</a></li>`).join('')}</ul>`,
      '</body></html>',
      '',
    ].join('\n'),
};

/** Depth of the first depth-trap page a crawler meets: 14 segments, so 14 and 15 are fetched, 16 is cut. */
const DEEP_START = `/deep/${Array.from({ length: 13 }, (_, i) => i + 1).join('/')}/`;
const LONG_PATH = `/long/${'abcdefghij'.repeat(210)}`;
const sid = (): string => Math.random().toString(36).slice(2, 12);

function trapSite(): SiteSpec {
  return {
    host: 'trap.test',
    seed: true,
    robots: allowAll,
    pages: {
      '/': {
        title: 'Trap home',
        links: () => [
          'about.html',
          'a/',
          DEEP_START,
          LONG_PATH,
          `/shop.html?sid=${sid()}`,
          `/cart.html;jsessionid=${sid().toUpperCase()}`,
        ],
      },
      '/about.html': { title: 'Trap about', links: ['/'] },
      // every response links itself under a fresh session id
      '/shop.html': { title: 'Trap shop', links: () => [`/shop.html?sid=${sid()}`, '/'] },
      '/cart.html': { title: 'Trap cart', links: () => [`cart.html;jsessionid=${sid().toUpperCase()}`, '/'] },
    },
    route(pathname) {
      if (/^\/(a\/)+$/.test(pathname)) return { title: `Trap repeat ${pathname}`, links: ['a/'] };
      const deep = /^\/deep((?:\/\d+)*)\/$/.exec(pathname);
      if (deep) return { title: `Trap depth ${pathname}`, links: [`${(deep[1] ?? '').split('/').length}/`] };
      if (pathname.startsWith('/long/')) return { title: 'Trap long', links: ['/'] };
      return undefined;
    },
  };
}

function redirectSite(): SiteSpec {
  const moved = (status: number, location: string): PageSpec => ({
    status,
    headers: { location },
    title: `Moved to ${location}`,
  });
  return {
    host: 'redirect.test',
    seed: true,
    pages: {
      '/': { title: 'Redirect home', links: ['old', 'loop1'] },
      '/old': moved(301, at('redirect.test', '/new')),
      '/new': { title: 'Redirect target', links: ['/'] },
      '/loop1': moved(302, '/loop2'),
      '/loop2': moved(302, '/loop1'),
    },
  };
}

const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const PDF_TINY = '%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n';

function filesSite(): SiteSpec {
  return {
    host: 'files.test',
    seed: true,
    pages: {
      '/': { title: 'Files home', links: ['doc.pdf', 'image.png', 'compressed.html'] },
      '/doc.pdf': { contentType: 'application/pdf', body: PDF_TINY },
      '/image.png': { contentType: 'image/png', body: new Uint8Array(PNG_1X1) },
      '/compressed.html': { title: 'Files compressed', gzip: true, links: ['/'] },
    },
  };
}

/**
 * The standard synthetic web: 12 sites, each seeded at its home page. A correct crawl at a 1 s
 * per-host gap ends in about 30 s; `standardExpectations()` says what it fetches.
 */
export function standardWeb(): SiteSpec[] {
  return [
    wwwAlpha(),
    blogAlpha(),
    simpleSite('beta.test', undefined, {
      '/': [
        'one.html',
        'two.html',
        at('mirror.test', '/b.html'),
        at('mirror.test', '/c.html'),
        at('news.test', '/story.html'),
        at('news.test', '/print/story.html'),
      ],
      '/one.html': ['two.html', 'three.html', at('down.test', '/a.html')],
      '/two.html': ['three.html', at('www.alpha.test')],
      '/three.html': ['four.html', at('files.test', '/doc.pdf')],
      '/four.html': ['/'],
    }),
    simpleSite(
      'gamma.test',
      { status: 200, body: 'User-agent: *\nCrawl-delay: 2\n' },
      {
        '/': ['g1.html', 'g2.html'],
        '/g1.html': ['g3.html', at('down.test')],
        '/g2.html': ['/', at('news.test', '/print/story.html')],
        '/g3.html': [at('blog.alpha.test')],
      },
    ),
    simpleSite(
      'slow.test',
      allowAll,
      {
        '/': ['s1.html', 's2.html', 's3.html'],
        '/s1.html': ['/'],
        '/s2.html': [at('busy.test', '/b1.html')],
        '/s3.html': ['s1.html'],
      },
      { delayMs: 200 },
    ),
    simpleSite(
      'busy.test',
      allowAll,
      {
        '/': ['b1.html', 'b2.html', 'b3.html'],
        '/b1.html': ['/'],
        '/b2.html': ['b3.html'],
        '/b3.html': [at('slow.test')],
      },
      {
        throttle: { requests: 2, status: 429, retryAfterSec: 2 },
      },
    ),
    simpleSite(
      'down.test',
      { status: 503, body: 'Service Unavailable\n' },
      { '/': ['a.html', 'b.html'], '/a.html': ['b.html'], '/b.html': ['/'] },
    ),
    { host: 'mirror.test', seed: true, pages: { '/': alphaA, '/b.html': alphaB, '/c.html': alphaC } },
    {
      host: 'news.test',
      seed: true,
      pages: { '/': newsArticle, '/story.html': newsArticle, '/print/story.html': newsArticle },
    },
    trapSite(),
    redirectSite(),
    filesSite(),
  ];
}

/**
 * An endless calendar on `calendar.test`: `/cal/2026-01` links the next month, forever.
 * Not part of `standardWeb()`.
 */
export function calendarTrapSite(): SiteSpec {
  return {
    host: 'calendar.test',
    seed: true,
    pages: { '/': { title: 'Calendar', links: ['/cal/2026-01'] } },
    route(pathname) {
      const m = /^\/cal\/(\d{4})-(\d{2})$/.exec(pathname);
      if (!m) return undefined;
      const after = new Date(Date.UTC(Number(m[1]), Number(m[2]), 1)); // Date months count from 0: this is the next month
      const next = `${after.getUTCFullYear()}-${String(after.getUTCMonth() + 1).padStart(2, '0')}`;
      return { title: `Calendar ${m[1]}-${m[2]}`, links: [`/cal/${next}`] };
    },
  };
}

/** What a correct crawl of one host requests; paths include the query. */
export interface SiteExpectation {
  /** Requested at least once (robots.txt included). */
  readonly fetch: readonly string[];
  /** Never requested; an entry ending in `*` matches any path with that prefix. */
  readonly never: readonly string[];
  /** A policy choice either way (e.g. following rel=nofollow). */
  readonly optional: readonly string[];
}

/**
 * The expected crawl of `standardWeb()`: robots.txt honoured (5xx = disallow all), rel=nofollow
 * optional, session ids (`sid`, `jsessionid`) stripped, and traps cut at URL length > 2000, path
 * depth > 15 non-empty segments, or a segment present 3 times.
 */
export function standardExpectations(): Readonly<Record<string, SiteExpectation>> {
  const site = (fetch: string[], never: string[] = [], optional: string[] = []): SiteExpectation => ({
    fetch: ['/robots.txt', ...fetch],
    never,
    optional,
  });
  return {
    'www.alpha.test': site(
      ['/', '/a.html', '/b.html', '/c.html', '/about/', '/docs/guide.html', '/spaces'],
      ['/private/*', '/about/guide.html'],
    ),
    'blog.alpha.test': site(
      ['/', '/2026/01/hello.html', '/2026/02/world.html', '/tags/', '/archive.html', '/about.html'],
      ['/private/*'],
      ['/nofollow.html'],
    ),
    'beta.test': site(['/', '/one.html', '/two.html', '/three.html', '/four.html']),
    'gamma.test': site(['/', '/g1.html', '/g2.html', '/g3.html']),
    'slow.test': site(['/', '/s1.html', '/s2.html', '/s3.html']),
    'busy.test': site(['/', '/b1.html', '/b2.html', '/b3.html']),
    'down.test': { fetch: ['/robots.txt'], never: ['/', '/a.html', '/b.html'], optional: [] },
    'mirror.test': site(['/', '/b.html', '/c.html']),
    'news.test': site(['/', '/story.html', '/print/story.html']),
    'trap.test': site(
      ['/', '/about.html', '/a/', '/a/a/', DEEP_START, `${DEEP_START}14/`, '/shop.html', '/cart.html'],
      ['/a/a/a/*', `${DEEP_START}14/15/*`, '/long/*', '/shop.html?*', '/cart.html;*'],
    ),
    'redirect.test': site(['/', '/old', '/new', '/loop1', '/loop2']),
    'files.test': site(['/', '/doc.pdf', '/image.png', '/compressed.html']),
  };
}
