import { gzipSync } from 'node:zlib';
import type { FreshLayout, FreshPage, SitemapChild } from './fresh-schedule.js';
import { prose } from './sites.js';

/**
 * The bytes of the changing web: page HTML, sitemaps and feeds, each a pure function of the
 * page's version and the request's web time. `fresh-web.ts` adds validators and answers 304.
 */

/** What every renderer needs: the layout, the epoch to turn web time into dates, the port for absolute URLs. */
export interface RenderContext {
  readonly layout: FreshLayout;
  /** Epoch ms of web time 0. */
  readonly epoch: number;
  readonly port: number;
  /** The meaningful version of a page at web time `t` and when it began; undefined before its birth. */
  readonly versionAt: (page: FreshPage, t: number) => { version: number; sinceSec: number } | undefined;
}

export const SITEMAP_INDEX = '/sitemap-index.xml';
export const SITEMAP_PATHS: Readonly<Record<SitemapChild, string>> = {
  xml: '/sitemaps/pages.xml',
  gz: '/sitemaps/pages.xml.gz',
  txt: '/sitemaps/pages.txt',
};
export const RSS_PATH = '/feed.rss';
export const ATOM_PATH = '/feed.atom';

// the ad's one changing word is the page's last, so it is in one shingle only: a near-duplicate
// (SimHash distance ≤ 3), not a new version
const AD_ITEMS = ['lanterns', 'kettles', 'binoculars', 'umbrellas'];

/** A rendered document: its bytes, content type and the time its content last changed (web seconds). */
export interface Rendered {
  readonly body: Uint8Array;
  readonly contentType: string;
  readonly lastModifiedSec: number;
}

export const absolute = (ctx: RenderContext, host: string, path: string): string => `http://${host}:${ctx.port}${path}`;
/** W3C datetime / RFC 3339 in UTC, whole seconds. */
export const isoAt = (ctx: RenderContext, sec: number): string =>
  new Date(ctx.epoch + sec * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
const httpDateAt = (ctx: RenderContext, sec: number): string => new Date(ctx.epoch + sec * 1000).toUTCString();

/**
 * A page's HTML at web time `t` (the page exists then): 150 words fixed by its URL and 200 by its
 * meaningful version, so two versions share few shingles (SimHash distance well above 3). A
 * cosmetic page has 1500 fixed words plus a timestamp and an ad whose one changing word ends the
 * page, both changing every `cosmeticSec`: its ticks are near-duplicates (distance ≤ 3 in the
 * default layouts, a test checks).
 */
export function renderPage(ctx: RenderContext, page: FreshPage, t: number): Rendered {
  const { version, sinceSec } = ctx.versionAt(page, t)!;
  const { layout } = ctx;
  const title = `${page.host} ${page.path}`;
  let head = '';
  if (page.host === layout.feedHost && page.path === '/') {
    head =
      `<link rel="alternate" type="application/rss+xml" title="Stories (RSS)" href="${RSS_PATH}">` +
      `<link rel="alternate" type="application/atom+xml" title="Stories (Atom)" href="${ATOM_PATH}">`;
  }
  const linked = layout.pages.filter((p) => p.host === page.host && p.reach === 'linked');
  let links: string[];
  if (page.path === '/') {
    links = [
      ...linked.filter((p) => p.path !== '/').map((p) => p.path),
      ...layout.hosts.filter((h) => h !== page.host).map((h) => absolute(ctx, h, '/')),
    ];
  } else {
    const at = linked.findIndex((p) => p.path === page.path);
    links = at < 0 ? ['/'] : ['/', linked[(at + 1) % linked.length]!.path, linked[(at + 2) % linked.length]!.path];
  }
  let cosmetic = '';
  let ad = '';
  let lastModifiedSec = sinceSec;
  if (page.changeClass === 'cosmetic') {
    const tick = Math.floor(t / layout.cosmeticSec);
    lastModifiedSec = Math.max(sinceSec, tick * layout.cosmeticSec);
    cosmetic = `<p class="stamp">Updated ${isoAt(ctx, tick * layout.cosmeticSec)}</p>\n`;
    const item = AD_ITEMS[((tick % AD_ITEMS.length) + AD_ITEMS.length) % AD_ITEMS.length]!;
    ad = `<p class="ad">Sponsored by the shop downstairs: ${item}</p>\n`;
  }
  const html = [
    '<!doctype html>',
    `<html><head><meta charset="utf-8"><title>${title}</title>${head}</head>`,
    `<body><h1>${title}</h1>`,
    cosmetic,
    `<p>${prose(title, page.changeClass === 'cosmetic' ? 1500 : 150)}</p>`,
    `<p>${prose(`${title} version ${version}`, 200)}</p>`,
    `<ul>\n${links.map((h) => `<li><a href="${h}">${h}</a></li>`).join('\n')}\n</ul>`,
    ad,
    '</body></html>',
    '',
  ].join('\n');
  return { body: Buffer.from(html, 'utf8'), contentType: 'text/html; charset=utf-8', lastModifiedSec };
}

/** The pages one child sitemap of `host` lists (existing at `t`: all of them, feed items are in none). */
function listed(ctx: RenderContext, host: string, child: SitemapChild): FreshPage[] {
  return ctx.layout.pages.filter((p) => p.host === host && p.sitemap === child);
}

const lastmodOf = (ctx: RenderContext, page: FreshPage, t: number): number => ctx.versionAt(page, t)?.sinceSec ?? 0;

/** A child sitemap at web time `t`: XML with `<lastmod>` (plain or gzip), or text (URLs only). */
export function renderSitemap(ctx: RenderContext, host: string, child: SitemapChild, t: number): Rendered {
  const pages = listed(ctx, host, child);
  const lastModifiedSec = Math.max(0, ...pages.map((p) => lastmodOf(ctx, p, t)));
  if (child === 'txt') {
    const body = pages.map((p) => `${absolute(ctx, host, p.path)}\n`).join('');
    return { body: Buffer.from(body, 'utf8'), contentType: 'text/plain; charset=utf-8', lastModifiedSec };
  }
  const xml = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ...pages.map(
      (p) =>
        `<url><loc>${absolute(ctx, host, p.path)}</loc><lastmod>${isoAt(ctx, lastmodOf(ctx, p, t))}</lastmod></url>`,
    ),
    '</urlset>',
    '',
  ].join('\n');
  return child === 'gz'
    ? { body: gzipSync(Buffer.from(xml, 'utf8')), contentType: 'application/gzip', lastModifiedSec }
    : { body: Buffer.from(xml, 'utf8'), contentType: 'application/xml', lastModifiedSec };
}

/** The sitemap index of `host` at web time `t`: its three child sitemaps with their `<lastmod>`. */
export function renderSitemapIndex(ctx: RenderContext, host: string, t: number): Rendered {
  const children = (Object.keys(SITEMAP_PATHS) as SitemapChild[]).map((child) => ({
    path: SITEMAP_PATHS[child],
    lastmod: renderSitemap(ctx, host, child, t).lastModifiedSec,
  }));
  const xml = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ...children.map(
      (c) => `<sitemap><loc>${absolute(ctx, host, c.path)}</loc><lastmod>${isoAt(ctx, c.lastmod)}</lastmod></sitemap>`,
    ),
    '</sitemapindex>',
    '',
  ].join('\n');
  const lastModifiedSec = Math.max(...children.map((c) => c.lastmod));
  return { body: Buffer.from(xml, 'utf8'), contentType: 'application/xml', lastModifiedSec };
}

/** The feed at web time `t`, RSS 2.0 or Atom: the newest `feedSize` items published by then, newest first. */
export function renderFeed(ctx: RenderContext, items: readonly FreshPage[], kind: 'rss' | 'atom'): Rendered {
  const { feedHost, feedSize } = ctx.layout;
  const newest = items.slice(-feedSize).reverse();
  const lastModifiedSec = newest[0]?.bornSec ?? 0;
  const home = absolute(ctx, feedHost, '/');
  const title = (p: FreshPage): string => `Story ${p.path.slice('/stories/'.length, -'.html'.length)}`;
  const xml =
    kind === 'rss'
      ? [
          '<?xml version="1.0" encoding="UTF-8"?>',
          '<rss version="2.0"><channel>',
          `<title>${feedHost} stories</title><link>${home}</link><description>New stories</description>`,
          `<lastBuildDate>${httpDateAt(ctx, lastModifiedSec)}</lastBuildDate>`,
          ...newest.map((p) => {
            const url = absolute(ctx, feedHost, p.path);
            const date = httpDateAt(ctx, p.bornSec);
            return `<item><title>${title(p)}</title><link>${url}</link><guid isPermaLink="true">${url}</guid><pubDate>${date}</pubDate></item>`;
          }),
          '</channel></rss>',
          '',
        ]
      : [
          '<?xml version="1.0" encoding="UTF-8"?>',
          '<feed xmlns="http://www.w3.org/2005/Atom">',
          `<title>${feedHost} stories</title><id>${home}</id><updated>${isoAt(ctx, lastModifiedSec)}</updated>`,
          `<link rel="self" href="${absolute(ctx, feedHost, ATOM_PATH)}"/><link href="${home}"/>`,
          ...newest.map((p) => {
            const url = absolute(ctx, feedHost, p.path);
            return `<entry><title>${title(p)}</title><id>${url}</id><link href="${url}"/><updated>${isoAt(ctx, p.bornSec)}</updated></entry>`;
          }),
          '</feed>',
          '',
        ];
  return {
    body: Buffer.from(xml.join('\n'), 'utf8'),
    contentType: kind === 'rss' ? 'application/rss+xml' : 'application/atom+xml',
    lastModifiedSec,
  };
}
