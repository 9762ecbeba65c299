import { PORT, prose, type PageSpec, type SiteSpec } from './sites.js';
import { skewedSize } from './skewed-web.js';

/**
 * Crawler traps of the shapes the real web has, each an endless space of distinct pages: written
 * after the frontier's trap rules, so those rules meet shapes they were not tuned to. Every page
 * renders distinct text (no trap is a set of near-copies the duplicate cut could catch).
 */

/** An endless calendar: each month links the months before and after it and each of its days; each day its neighbours. */
export function endlessCalendarSite(host = 'events.test'): SiteSpec {
  const month = (y: number, m: number) => {
    const d = new Date(Date.UTC(y, m - 1, 1));
    return `/cal/${d.getUTCFullYear()}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/`;
  };
  const day = (y: number, m: number, dd: number) => {
    const d = new Date(Date.UTC(y, m - 1, dd));
    return `${month(d.getUTCFullYear(), d.getUTCMonth() + 1)}${String(d.getUTCDate()).padStart(2, '0')}/`;
  };
  return {
    host,
    pages: { '/': { title: `${host} events`, links: [month(2031, 7)] } },
    route(pathname): PageSpec | undefined {
      const m = /^\/cal\/(\d{4})\/(\d{2})\/(?:(\d{2})\/)?$/.exec(pathname);
      if (!m) return undefined;
      const [y, mo] = [Number(m[1]), Number(m[2])];
      if (m[3] === undefined) {
        const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
        const links = [
          month(y, mo - 1),
          month(y, mo + 1),
          ...Array.from({ length: days }, (_, i) => day(y, mo, i + 1)),
        ];
        return { title: `Events ${y}-${mo}`, links };
      }
      const dd = Number(m[3]);
      return { title: `Events ${y}-${mo}-${dd}`, links: [day(y, mo, dd - 1), day(y, mo, dd + 1), month(y, mo)] };
    },
  };
}

/** A fresh session id, as servers mint them: 16 hex digits. */
function sessionId(): string {
  let s = '';
  for (let i = 0; i < 16; i++) s += Math.floor(Math.random() * 16).toString(16);
  return s;
}

/** A session id carried in the path: every link of every page starts with a new `/s/<id>/`. */
export function pathSessionSite(host = 'portal.test'): SiteSpec {
  const links = () => {
    const sid = sessionId();
    return [`/s/${sid}/`, `/s/${sid}/news`, `/s/${sid}/help/contact`, `/s/${sid}/shop/`];
  };
  return {
    host,
    pages: { '/': { title: `${host} portal`, links } },
    route(pathname): PageSpec | undefined {
      if (!/^\/s\/[0-9a-f]+\//.test(pathname)) return undefined;
      return { title: `Portal ${pathname}`, links };
    },
  };
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'dra', 'fen', 'gul', 'hob', 'jin'];

/** A pronounceable name derived from `seed`: distinct seeds give (almost always) distinct names, never digits. */
export function wordOf(seed: string): string {
  let h = 2166136261;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 16777619) >>> 0;
  let w = '';
  for (let i = 0; i < 3; i++) {
    w += SYLLABLES[h % SYLLABLES.length];
    h = Math.floor(h / SYLLABLES.length);
  }
  return w;
}

/** Ever deeper paths with new names: every directory links one child named after its own path (`/kalomi/nerusa/…/`), and its parent. */
export function deepPathSite(host = 'archive.test'): SiteSpec {
  return {
    host,
    pages: { '/': { title: `${host} archive`, links: [`/${wordOf('/')}/`] } },
    route(pathname): PageSpec | undefined {
      if (!/^(\/[a-z]+)+\/$/.test(pathname)) return undefined;
      return { title: `Archive ${pathname}`, links: [`${wordOf(pathname)}/`, '../'] };
    },
  };
}

const FACETS = ['brand', 'colour', 'price'] as const;

/** A paginated listing whose every page links the next page and each facet (numeric ids) not yet applied. */
export function facetedListingSite(host = 'catalog.test'): SiteSpec {
  const listing: PageSpec = {
    title: 'Listing',
    body: (ctx) => {
      const params = new URL(`http://x${ctx.path}`).searchParams;
      const page = Number(params.get('page') ?? '1');
      const href = (p: URLSearchParams) => `/items?${p.toString()}`;
      const links: string[] = [];
      const next = new URLSearchParams(params);
      next.set('page', String(page + 1));
      links.push(href(next));
      for (const f of FACETS) {
        if (params.has(f)) continue;
        for (const id of [3, 17, 41]) {
          const p = new URLSearchParams(params);
          p.set(f, String(id * page + FACETS.indexOf(f)));
          p.set('page', '1');
          links.push(href(p));
        }
      }
      const items = links.map((l) => `<li><a href="${l.replaceAll('&', '&amp;')}">${l}</a></li>`).join('');
      return `<!doctype html><html><head><title>Listing ${ctx.path}</title></head><body><h1>Items ${ctx.path}</h1><p>${prose(ctx.path, 120)}</p><ul>${items}</ul></body></html>`;
    },
  };
  return {
    host,
    pages: { '/': { title: `${host} catalog`, links: ['/items?page=1'] } },
    route: (pathname) => (pathname === '/items' ? listing : undefined),
  };
}

/** Every host under `host` exists and links two new subdomains of it, named after itself. */
export function endlessSubdomainSite(host = 'hosting.test'): SiteSpec {
  const page: PageSpec = {
    title: 'Member site',
    body: (ctx) => {
      const links = [`${ctx.host}/a`, `${ctx.host}/b`].map(
        (seed) => `<li><a href="http://${wordOf(seed)}${wordOf(`${seed}+`)}.${host}:${PORT}/">member</a></li>`,
      );
      return `<!doctype html><html><head><title>${ctx.host}</title></head><body><h1>Welcome to ${ctx.host}</h1><p>${prose(ctx.host, 120)}</p><ul>${links.join('')}</ul></body></html>`;
    },
  };
  return { host, subdomains: true, pages: { '/': page } };
}

const NAMES = ['river', 'stone', 'maple', 'harbor', 'lantern', 'meadow', 'copper', 'willow', 'summit', 'falcon'];

/**
 * `count` seeded normal sites `n01.test` … of skewed size (`largest` pages on the first; each home
 * links all its pages and the next site's home), and the five traps above, each reached by one
 * link from the home page of a different normal site and by nothing else.
 */
export function trapWeb(
  count: number,
  largest: number,
): { sites: SiteSpec[]; normalPages: Map<string, string[]>; trapHosts: string[] } {
  const traps = [
    endlessCalendarSite(),
    pathSessionSite(),
    deepPathSite(),
    facetedListingSite(),
    endlessSubdomainSite(),
  ];
  const sites: SiteSpec[] = [];
  const normalPages = new Map<string, string[]>();
  const hostOf = (rank: number) => `n${String(rank).padStart(2, '0')}.test`;
  for (let rank = 1; rank <= count; rank++) {
    const host = hostOf(rank);
    const names = Array.from(
      { length: skewedSize(rank, largest) - 1 },
      (_, i) => `/${NAMES[i % NAMES.length]}/${NAMES[Math.floor(i / NAMES.length) % NAMES.length]}-notes.html`,
    );
    const links = [...names, `http://${hostOf((rank % count) + 1)}:${PORT}/`];
    const trap = traps[rank - 1];
    if (trap !== undefined) links.push(`http://${trap.host}:${PORT}/`);
    const pages: Record<string, PageSpec> = { '/': { title: `${host} home`, links } };
    for (const n of names) pages[n] = { title: `${host} ${n}`, links: ['/'] };
    sites.push({ host, seed: true, pages });
    normalPages.set(host, ['/', ...names]);
  }
  sites.push(...traps);
  return { sites, normalPages, trapHosts: traps.map((t) => t.host) };
}
