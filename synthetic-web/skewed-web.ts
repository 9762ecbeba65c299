import { type SiteSpec } from './sites.js';
import { calendarTrapSite } from './standard-web.js';

const WORDS = [
  'river',
  'stone',
  'maple',
  'harbor',
  'lantern',
  'meadow',
  'copper',
  'willow',
  'summit',
  'falcon',
  'orchard',
  'canyon',
];

/** A distinct, readable page name: no numbered template a trap heuristic could mistake for paging. */
function pageName(i: number): string {
  return `/${WORDS[i % WORDS.length]}-${WORDS[Math.floor(i / WORDS.length) % WORDS.length]}-${i.toString(36)}.html`;
}

/** Pages of site `rank` (1-based): a Zipf-like skew, `largest` pages on the first site, 1 on the tail. */
export function skewedSize(rank: number, largest: number): number {
  return Math.max(1, Math.round(largest / rank ** 0.8));
}

/**
 * `count` normal sites `s001.test` … with skewed sizes (home page linking every page of its site
 * and a few other sites' homes), plus three trap hosts: an endless calendar, endless paging with
 * session ids, and a repeating path. Every normal page is reachable; traps are linked only from
 * seeds, so their budget does not grow.
 */
export function skewedWeb(
  count: number,
  largest: number,
): { sites: SiteSpec[]; normalPages: Map<string, string[]>; trapHosts: string[] } {
  const sites: SiteSpec[] = [];
  const normalPages = new Map<string, string[]>();
  for (let rank = 1; rank <= count; rank++) {
    const host = `s${String(rank).padStart(3, '0')}.test`;
    const size = skewedSize(rank, largest);
    const pages: Record<string, { title: string; links: string[] }> = {};
    const names = Array.from({ length: size - 1 }, (_, i) => pageName(i));
    const others = [1, 7, 31].map(
      (d) => `http://s${String(((rank - 1 + d) % count) + 1).padStart(3, '0')}.test:{{PORT}}/`,
    );
    pages['/'] = { title: `${host} home`, links: [...names, ...others] };
    for (const n of names) pages[n] = { title: `${host} ${n}`, links: ['/'] };
    sites.push({ host, seed: true, pages });
    normalPages.set(host, ['/', ...names]);
  }
  const paging: SiteSpec = {
    host: 'paging.test',
    seed: true,
    pages: { '/': { title: 'List', links: ['/list?page=1&sid=a1b2c3'] } },
    route(pathname) {
      if (pathname !== '/list') return undefined;
      return {
        title: 'List page',
        body: (ctx) => {
          const n = Number(new URL(`http://x${ctx.path}`).searchParams.get('page') ?? '1');
          const sid = Math.random().toString(36).slice(2);
          return `<html><body><a href="/list?page=${n + 1}&sid=${sid}">next</a> <a href="/list;jsessionid=${sid}?page=${n + 1}">again</a></body></html>`;
        },
      };
    },
  };
  const repeating: SiteSpec = {
    host: 'loops.test',
    seed: true,
    pages: { '/': { title: 'Loops', links: ['x/'] } },
    route(pathname) {
      // every directory links one level deeper, alternating names: /x/y/x/y/...
      if (!/^\/([xy]\/)+$/.test(pathname)) return undefined;
      const next = pathname.split('/').filter(Boolean).length % 2 === 0 ? 'x/' : 'y/';
      return { title: `Loop ${pathname}`, links: [next, `../${next}`] };
    },
  };
  sites.push(calendarTrapSite(), paging, repeating);
  return { sites, normalPages, trapHosts: ['calendar.test', 'paging.test', 'loops.test'] };
}
