import type { RequestLogEntry } from '../../synthetic-web/request-log.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';

const at = (host: string, path = '/') => `http://${host}:{{PORT}}${path}`;

/**
 * A small web for the scope and filter tests: one seeded site (`news.test`, and its subdomain
 * `blog.news.test`) whose home links to pages in scope, to binaries by suffix, to a denied
 * path, to sites nobody seeded, and to a redirect out of scope.
 */
export function scopeWeb(): SiteSpec[] {
  const home = {
    links: [
      '/a',
      '/b',
      '/img/photo.JPG',
      '/files/data.zip',
      '/media/talk.mp4?t=1',
      '/private/secret',
      '/away',
      at('blog.news.test'),
      at('other.test'),
      at('other.test', '/deep'),
      at('ads.test'),
    ],
  };
  return [
    {
      host: 'news.test',
      seed: true,
      subdomains: true,
      pages: {
        '/': home,
        '/a': { links: ['/b', '/fonts/x.woff2'] },
        '/b': { links: ['/a'] },
        '/c': { links: ['/a'] },
        '/away': { status: 301, headers: { location: at('elsewhere.test', '/landing') } },
        '/img/photo.JPG': { contentType: 'image/jpeg', body: new Uint8Array(64) },
        '/files/data.zip': { contentType: 'application/zip', body: new Uint8Array(64) },
        '/media/talk.mp4': { contentType: 'video/mp4', body: new Uint8Array(64) },
        '/fonts/x.woff2': { contentType: 'font/woff2', body: new Uint8Array(64) },
        '/private/secret': { links: [] },
      },
    },
    // not seeded in the first run; the second run seeds it, and its home links back into news.test
    { host: 'other.test', pages: { '/': { links: [at('news.test', '/c'), at('third.test')] }, '/deep': {} } },
    { host: 'ads.test', pages: { '/': {} } },
    { host: 'elsewhere.test', pages: { '/landing': {} } },
    { host: 'third.test', pages: { '/': {} } },
  ];
}

/** Requests the scope (seed-sites of news.test) and the filters forbid: to sites not seeded, binaries, the denied path. */
export function forbiddenRequests(log: readonly RequestLogEntry[], seeded: readonly string[]): RequestLogEntry[] {
  return log.filter((e) => {
    const site = e.host.split('.').slice(-2).join('.');
    return !seeded.includes(site) || /\.(jpg|zip|mp4|woff2)(\?|$)/i.test(e.path) || e.path.startsWith('/private/');
  });
}

/** `host` + path of each request, robots.txt excluded. */
export const fetchedPaths = (log: readonly RequestLogEntry[]): Set<string> =>
  new Set(log.filter((e) => e.path !== '/robots.txt').map((e) => `${e.host}${e.path}`));

/** The crawl options both engines' tests run with. */
export const SCOPE_OPTIONS = ['--scope', 'seed-sites', '--deny', 're:/private/'];
