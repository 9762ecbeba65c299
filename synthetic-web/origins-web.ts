import { HTTPS_PORT } from './origins.js';
import { PORT, type SiteSpec } from './sites.js';

/**
 * Real-web shapes of robots.txt across origins, for a web started with `tls`:
 * - `secure.test`: its http origin 301s everything (robots.txt included) to https; the https
 *   robots.txt disallows /private/, which pages link to relatively and by absolute http URLs;
 * - `hops5.test` / `hops6.test`: robots.txt reaches its rules after 5 / 6 redirects on its host
 *   (relative, absolute and cross-scheme Locations mixed); with 6 the origin is unavailable;
 * - `loop.test`: robots.txt redirects in a loop: unavailable;
 * - `shop.test`: robots.txt redirects to `https://www.shop.test/robots.txt` (another host of the
 *   site), whose rules disallow /cart/ on both hosts.
 * Home pages are the seeds (`http://host:PORT/`).
 */
export function originsWeb(): SiteSpec[] {
  return [
    {
      host: 'secure.test',
      seed: true,
      robots: { status: 200, body: 'User-agent: *\nAllow: /\n' },
      origins: {
        httpToHttps: true,
        httpsRobots: { status: 200, body: 'User-agent: *\nDisallow: /private/\n' },
      },
      pages: {
        '/': {
          title: 'secure home',
          links: ['/open.html', '/private/a.html', `http://secure.test:${PORT}/private/b.html`],
        },
        '/open.html': { title: 'secure open', links: ['private/c.html', '/'] },
        '/private/a.html': { title: 'secure private a' },
        '/private/b.html': { title: 'secure private b' },
        '/private/c.html': { title: 'secure private c' },
      },
    },
    {
      host: 'shop.test',
      seed: true,
      robots: { status: 301, body: '', location: `https://www.shop.test:${HTTPS_PORT}/robots.txt` },
      pages: {
        '/': { title: 'shop home', links: ['/item.html', '/cart/add.html'] },
        '/item.html': { title: 'shop item', links: ['/cart/view.html'] },
        '/cart/add.html': { title: 'shop cart add' },
        '/cart/view.html': { title: 'shop cart view' },
      },
    },
    {
      host: 'www.shop.test',
      seed: true,
      robots: { status: 200, body: 'User-agent: *\nDisallow: /cart/\n' },
      origins: { httpToHttps: true },
      pages: {
        '/': { title: 'www shop home', links: ['/cart/', '/about.html'] },
        '/about.html': { title: 'www shop about' },
        '/cart/': { title: 'www shop cart' },
      },
    },
    chainSite('hops5.test', 5),
    chainSite('hops6.test', 6),
    {
      host: 'loop.test',
      seed: true,
      robots: { status: 302, body: '', location: '/robots/loop.txt' },
      pages: {
        '/': { title: 'loop home', links: ['/a.html'] },
        '/a.html': { title: 'loop a' },
        '/robots/loop.txt': { status: 301, headers: { location: `http://loop.test:${PORT}/robots.txt` } },
      },
    },
  ];
}

/** robots.txt redirected `hops` times on the site's own host, ending at rules that disallow /secret/. */
function chainSite(host: string, hops: number): SiteSpec {
  const step = (i: number) => `/robots/step-${i}.txt`;
  // a mix of the shapes Locations take: absolute, dot-relative, path-absolute
  const location = (i: number) =>
    i % 3 === 0 ? step(i) : i % 3 === 1 ? `http://${host}:${PORT}${step(i)}` : `./step-${i}.txt`;
  const pages: Record<string, SiteSpec['pages'][string]> = {
    '/': { title: `${host} home`, links: ['/open.html', '/secret/a.html'] },
    '/open.html': { title: `${host} open`, links: ['/secret/b.html'] },
    '/secret/a.html': { title: `${host} secret a` },
    '/secret/b.html': { title: `${host} secret b` },
  };
  for (let i = 1; i < hops; i++) pages[step(i)] = { status: 301, headers: { location: location(i + 1) } };
  pages[step(hops)] = { contentType: 'text/plain', body: 'User-agent: *\nDisallow: /secret/\n' };
  return { host, seed: true, robots: { status: 302, body: '', location: location(1) }, pages };
}

/** What a polite crawler fetches and never fetches of `originsWeb()`, by scheme, host and path. */
export const originsExpectations = {
  fetch: [
    'http secure.test /robots.txt',
    'https secure.test /robots.txt',
    'https secure.test /',
    'https secure.test /open.html',
    'http hops5.test /robots.txt',
    'http hops5.test /robots/step-5.txt',
    'http hops5.test /',
    'http hops5.test /open.html',
    'http hops6.test /robots.txt',
    'http shop.test /robots.txt',
    'https www.shop.test /robots.txt',
    'http shop.test /',
    'http shop.test /item.html',
    'https www.shop.test /about.html',
  ],
  never: [
    'https secure.test /private/a.html',
    'https secure.test /private/b.html',
    'https secure.test /private/c.html',
    'http secure.test /private/a.html',
    'http secure.test /private/b.html',
    'http hops5.test /secret/a.html',
    'http hops5.test /secret/b.html',
    'http hops6.test /',
    'http hops6.test /robots/step-6.txt',
    'http loop.test /',
    'http shop.test /cart/add.html',
    'http shop.test /cart/view.html',
    'https www.shop.test /cart/',
  ],
};
