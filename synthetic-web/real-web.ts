import { PORT, prose, type PageContext, type PageSpec, type SiteSpec } from './sites.js';
import { seededRandom } from './seeded-random.js';
import { deepPathSite, endlessCalendarSite, facetedListingSite, pathSessionSite, wordOf } from './trap-sites.js';

/**
 * A web laid out like the real one, for coverage: numbered sites of the shapes real sites have
 * (pagination by `?page=N` and `/page/N`, a shop of `/item/N`, a date archive, a forum of
 * `/t/N`), hundreds of small sites, and traps of seven shapes each linked from every small site.
 * Every host is served on 127.0.0.1: many hosts on one address. Normal sites are finite and every
 * page is reachable within a few hops; traps are endless.
 */
export interface RealWeb {
  readonly sites: SiteSpec[];
  /** Every page of every normal (non-trap) site, by host: the pages a full crawl must fetch. */
  readonly normalPages: Map<string, string[]>;
  readonly trapHosts: string[];
}

const abs = (host: string, path: string) => `http://${host}:${PORT}${path}`;

/** An HTML page of distinct text per path, with one `<a href>` per link (written verbatim). */
function html(ctx: PageContext, title: string, links: readonly string[]): string {
  const items = links.map((l) => `<li><a href="${l.replaceAll('&', '&amp;')}">${l}</a></li>`).join('\n');
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>${prose(`${ctx.host}${ctx.path}`, 120)}</p><ul>\n${items}\n</ul></body></html>`;
}

/** The page number of a request's `?page=N`, or undefined when absent or out of 1..last. */
function pageParam(ctx: PageContext, last: number): number | undefined {
  const n = Number(new URL(`http://x${ctx.path}`).searchParams.get('page') ?? 'NaN');
  return Number.isInteger(n) && n >= 1 && n <= last ? n : undefined;
}

/** The pages a pager on page `n` of `last` links, as real sites do: first, n−2 … n+2, last. */
function pager(n: number, last: number, href: (p: number) => string): string[] {
  const pages = new Set([1, n - 2, n - 1, n + 1, n + 2, last].filter((p) => p >= 1 && p <= last && p !== n));
  return [...pages].map(href);
}

/** A listing page answered by `ctx`'s `?page=N`: a 404 outside 1..last. */
function queryListing(host: string, last: number, links: (n: number) => string[]): PageSpec {
  return {
    body: (ctx) => {
      const n = pageParam(ctx, last);
      // a page number out of range lists nothing
      return html(ctx, `${host} listing ${n ?? 'none'}`, n === undefined ? [] : links(n));
    },
  };
}

/**
 * A seeded site of `articles` numbered pages `/p/N`, half listed by `/list?page=N`, half by
 * `/page/N` (ten per listing page), each listing page linking its neighbours by a pager.
 */
export function paginatedSite(host: string, articles: number): { site: SiteSpec; paths: string[] } {
  const perPage = 10;
  const half = Math.ceil(articles / 2);
  const queryPages = Math.ceil(half / perPage);
  const pathPages = Math.ceil((articles - half) / perPage);
  const article = (n: number) => `/p/${n}`;
  const pages: Record<string, PageSpec> = {
    '/': { title: `${host} home`, links: ['/list?page=1', '/page/1'] },
    '/list': queryListing(host, queryPages, (n) => [
      ...pager(n, queryPages, (p) => `/list?page=${p}`),
      ...Array.from({ length: perPage }, (_, i) => (n - 1) * perPage + i + 1)
        .filter((a) => a <= half)
        .map(article),
    ]),
  };
  const paths = ['/', ...Array.from({ length: queryPages }, (_, i) => `/list?page=${i + 1}`)];
  for (let n = 1; n <= pathPages; n++) {
    const first = half + (n - 1) * perPage + 1;
    pages[`/page/${n}`] = {
      title: `${host} page ${n}`,
      links: [
        ...pager(n, pathPages, (p) => `/page/${p}`),
        ...Array.from({ length: perPage }, (_, i) => first + i)
          .filter((a) => a <= articles)
          .map(article),
      ],
    };
    paths.push(`/page/${n}`);
  }
  for (let a = 1; a <= articles; a++) {
    const listing = a <= half ? `/list?page=${Math.ceil(a / perPage)}` : `/page/${Math.ceil((a - half) / perPage)}`;
    pages[article(a)] = {
      title: `${host} article ${a}`,
      links: ['/', listing, ...(a > 1 ? [article(a - 1)] : []), ...(a < articles ? [article(a + 1)] : [])],
    };
    paths.push(article(a));
  }
  return { site: { host, seed: true, pages }, paths };
}

/** A shop of `items` pages `/item/N` (six-digit ids), listed ten a page by `/catalog?page=N`. */
export function shopSite(
  host: string,
  items: number,
): { site: SiteSpec; paths: string[]; item: (i: number) => string } {
  const perPage = 10;
  const last = Math.ceil(items / perPage);
  const item = (i: number) => `/item/${100_000 + 37 * i}`;
  const pages: Record<string, PageSpec> = {
    '/': { title: `${host} shop`, links: Array.from({ length: last }, (_, i) => `/catalog?page=${i + 1}`) },
    '/catalog': queryListing(host, last, (n) => [
      ...pager(n, last, (p) => `/catalog?page=${p}`),
      ...Array.from({ length: perPage }, (_, i) => (n - 1) * perPage + i + 1)
        .filter((i) => i <= items)
        .map(item),
    ]),
  };
  const paths = ['/', ...Array.from({ length: last }, (_, i) => `/catalog?page=${i + 1}`)];
  for (let i = 1; i <= items; i++) {
    const related = [i + 1, i + 7, i + 31].map((r) => ((r - 1) % items) + 1);
    pages[item(i)] = { title: `${host} item ${i}`, links: ['/', ...related.map(item)] };
    paths.push(item(i));
  }
  return { site: { host, pages }, paths, item };
}

/** A news archive of `posts` posts `/2025/MM/DD/slug` (slugs of words), listed by month pages `/2025/MM/`. */
export function dateArchiveSite(
  host: string,
  posts: number,
): { site: SiteSpec; paths: string[]; post: (i: number) => string } {
  const date = (i: number) => new Date(Date.UTC(2025, 0, 1) + Math.floor((i * 364) / posts) * 86_400_000);
  const two = (n: number) => String(n).padStart(2, '0');
  const month = (d: Date) => `/2025/${two(d.getUTCMonth() + 1)}/`;
  const post = (i: number) => {
    const d = date(i);
    return `${month(d)}${two(d.getUTCDate())}/${wordOf(`${host}${i}`)}-${wordOf(`${host}${i}+`)}`;
  };
  const months = [...new Set(Array.from({ length: posts }, (_, i) => month(date(i + 1))))];
  const pages: Record<string, PageSpec> = { '/': { title: `${host} news`, links: months } };
  for (const m of months) {
    const inMonth = Array.from({ length: posts }, (_, i) => i + 1).filter((i) => month(date(i)) === m);
    pages[m] = { title: `${host} ${m}`, links: ['/', ...inMonth.map(post)] };
  }
  for (let i = 1; i <= posts; i++)
    pages[post(i)] = {
      title: `${host} post ${i}`,
      links: [month(date(i)), ...(i > 1 ? [post(i - 1)] : []), ...(i < posts ? [post(i + 1)] : [])],
    };
  return {
    site: { host, pages },
    paths: ['/', ...months, ...Array.from({ length: posts }, (_, i) => post(i + 1))],
    post,
  };
}

/** A forum of `threads` threads `/t/N` (five-digit ids), listed ten a page by `/latest?page=N`. */
export function forumSite(
  host: string,
  threads: number,
): { site: SiteSpec; paths: string[]; thread: (i: number) => string } {
  const perPage = 10;
  const last = Math.ceil(threads / perPage);
  const thread = (i: number) => `/t/${98_700 + 13 * i}`;
  const pages: Record<string, PageSpec> = {
    '/': { title: `${host} forum`, links: ['/latest?page=1'] },
    '/latest': queryListing(host, last, (n) => [
      ...pager(n, last, (p) => `/latest?page=${p}`),
      ...Array.from({ length: perPage }, (_, i) => (n - 1) * perPage + i + 1)
        .filter((i) => i <= threads)
        .map(thread),
    ]),
  };
  const paths = ['/', ...Array.from({ length: last }, (_, i) => `/latest?page=${i + 1}`)];
  for (let i = 1; i <= threads; i++) {
    const related = [i + 1, i + 5].map((r) => ((r - 1) % threads) + 1);
    pages[thread(i)] = { title: `${host} thread ${i}`, links: ['/', '/latest?page=1', ...related.map(thread)] };
    paths.push(thread(i));
  }
  return { site: { host, pages }, paths, thread };
}

/** An events calendar by query string: each month links its neighbours and its days; each day its neighbours. */
export function queryCalendarSite(host: string): SiteSpec {
  const ym = (y: number, m: number) => {
    const d = new Date(Date.UTC(y, m - 1, 1));
    return `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
  };
  const day = (y: number, m: number, dd: number) => {
    const d = new Date(Date.UTC(y, m - 1, dd));
    return `/events?day=${d.toISOString().slice(0, 10)}`;
  };
  return {
    host,
    pages: {
      '/': { title: `${host} events`, links: ['/events?month=2026-12'] },
      '/events': {
        body: (ctx) => {
          const q = new URL(`http://x${ctx.path}`).searchParams;
          const month = /^(\d{4})-(\d{2})$/.exec(q.get('month') ?? '');
          const d = /^(\d{4})-(\d{2})-(\d{2})$/.exec(q.get('day') ?? '');
          let links: string[] = [];
          if (month !== null) {
            const [y, m] = [Number(month[1]), Number(month[2])];
            const days = new Date(Date.UTC(y, m, 0)).getUTCDate();
            links = [
              `/events?month=${ym(y, m - 1)}`,
              `/events?month=${ym(y, m + 1)}`,
              ...Array.from({ length: days }, (_, i) => day(y, m, i + 1)),
            ];
          } else if (d !== null) {
            const [y, m, dd] = [Number(d[1]), Number(d[2]), Number(d[3])];
            links = [day(y, m, dd - 1), day(y, m, dd + 1), `/events?month=${ym(y, m)}`];
          }
          return html(ctx, `${host} ${ctx.path}`, links);
        },
      },
    },
  };
}

/** A fresh session id, as servers mint them: 24 hex digits. */
function sessionId(): string {
  let s = '';
  for (let i = 0; i < 24; i++) s += Math.floor(Math.random() * 16).toString(16);
  return s;
}

/**
 * A session id in the query: every link of every page carries a new one, under a name the
 * crawler's list of session parameters does not know (`visit`; a `sid` it would strip).
 */
export function querySessionSite(host: string): SiteSpec {
  const links = () => {
    const id = sessionId();
    return [`/?visit=${id}`, `/news?visit=${id}`, `/help?visit=${id}&topic=contact`, `/shop?visit=${id}`];
  };
  const page: PageSpec = { body: (ctx) => html(ctx, `${host} ${ctx.path}`, links()) };
  return { host, pages: { '/': page, '/news': page, '/help': page, '/shop': page } };
}

/**
 * A soft-404 site: every path answers 200 with a page of "suggestions", new paths of words (no
 * digits, so no generated shape) made from the path asked, one level deeper and beside it.
 */
export function softNotFoundSite(host: string): SiteSpec {
  const page: PageSpec = {
    body: (ctx) => {
      const path = ctx.path.split('?')[0]!;
      const parent = path.endsWith('/') ? path : path.slice(0, path.lastIndexOf('/') + 1);
      const links = [
        `/${wordOf(`${path}a`)}-${wordOf(`${path}b`)}`,
        `/${wordOf(`${path}c`)}/${wordOf(`${path}d`)}`,
        `${parent}${wordOf(`${path}e`)}`,
      ];
      return html(ctx, `${host}: page not found (${path})`, links);
    },
  };
  return { host, pages: { '/': page }, route: () => page };
}

/**
 * The real-web layout: `small` small sites (the first quarter seeded, the others linked from
 * them), a seeded paginated site of `articles` numbered pages, a shop of `items` `/item/N` pages
 * linked from 30 small sites, a date archive linked from 25, a forum linked from 40, and seven
 * traps — a path calendar, a query calendar, session ids in the path and in the query, faceted
 * search, ever-deeper paths, a soft-404 site — each linked from every small site's home page.
 *
 * Addresses, as hosting is laid out: with `addresses` > 1, a quarter of the small sites (every
 * fourth) sit on one shared-hosting address, 127.0.0.1, and every other host — numbered sites and
 * traps included — on one of 127.0.0.2 … 127.0.0.`addresses`, drawn at random (seeded), so a big
 * site may share its address with small ones and a trap. `addresses` = 1 serves every host on
 * 127.0.0.1.
 */
export function realWeb(small = 240, articles = 300, items = 200, addresses = 24): RealWeb {
  const traps = [
    endlessCalendarSite('events.test'),
    queryCalendarSite('agenda.test'),
    pathSessionSite('portal.test'),
    querySessionSite('members.test'),
    facetedListingSite('catalog.test'),
    deepPathSite('archive.test'),
    softNotFoundSite('lost.test'),
  ];
  // a link from another site into a trap names its home, or one of its pages (as real links do)
  const trapLinks = ['/cal/2031/07/', '/events?month=2026-12', '/', '/', '/items?page=1', '/', '/welcome'].map((p, i) =>
    abs(traps[i]!.host, p),
  );
  const normalPages = new Map<string, string[]>();
  const sites: SiteSpec[] = [];
  const big = paginatedSite('bigsite.test', articles);
  const shop = shopSite('shop.test', items);
  const news = dateArchiveSite('news.test', 90);
  const forum = forumSite('forum.test', 120);
  for (const [s, paths] of [
    [big.site, big.paths],
    [shop.site, shop.paths],
    [news.site, news.paths],
    [forum.site, forum.paths],
  ] as const) {
    sites.push(s);
    normalPages.set(s.host, paths);
  }
  const hostOf = (i: number) => `w${String(i).padStart(3, '0')}.test`;
  const seeded = Math.ceil(small / 4);
  const random = seededRandom(30);
  for (let i = 1; i <= small; i++) {
    const host = hostOf(i);
    const slug = `/posts/${wordOf(host)}-${wordOf(`${host}!`)}`;
    const links = ['/about', '/contact', slug];
    // each seeded site links three of the others, so every small site is one hop from a seed
    if (i <= seeded)
      for (let k = 1; k <= 3; k++) {
        const j = seeded + 3 * (i - 1) + k;
        if (j <= small) links.push(abs(hostOf(j), '/'));
      }
    links.push(abs(hostOf(1 + Math.floor(random() * small)), '/'));
    links.push(...trapLinks);
    // numbered sites are linked from many others, each link into a page of its own
    if (i <= 30) links.push(abs(shop.site.host, shop.item(((7 * i) % items) + 1)), abs(shop.site.host, '/'));
    else if (i <= 55) links.push(abs(news.site.host, news.post(((11 * i) % 90) + 1)));
    else if (i <= 95) links.push(abs(forum.site.host, forum.thread(((3 * i) % 120) + 1)));
    const pages: Record<string, PageSpec> = {
      '/': { title: `${host} home`, links },
      '/about': { title: `${host} about`, links: ['/'] },
      '/contact': { title: `${host} contact`, links: ['/', '/about'] },
      [slug]: { title: `${host} post`, links: ['/'] },
    };
    sites.push({ host, seed: i <= seeded, pages });
    normalPages.set(host, ['/', '/about', '/contact', slug]);
  }
  sites.push(...traps);
  return { sites: placed(sites, addresses), normalPages, trapHosts: traps.map((t) => t.host) };
}

/** `sites` with their addresses: see {@link realWeb}. */
function placed(sites: SiteSpec[], addresses: number): SiteSpec[] {
  if (addresses <= 1) return sites;
  const random = seededRandom(addresses);
  let small = 0;
  return sites.map((site) => {
    const shared = /^w\d+\.test$/.test(site.host) && small++ % 4 === 0;
    const address = shared ? '127.0.0.1' : `127.0.0.${2 + Math.floor(random() * (addresses - 1))}`;
    return { ...site, address };
  });
}
