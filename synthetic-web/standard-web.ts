import { PORT, type PageSpec, type SiteSpec, type RobotsSpec, prose } from './sites.js';

/**
 * The standard synthetic web: the dozen sites of the e2e crawls (mirrors, redirects, traps of path
 * and query, robots.txt outcomes, files) and what a correct crawl of each requests. The spec
 * types and rendering are in `sites.ts`.
 */

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
