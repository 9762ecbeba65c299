import { encodeChar, encodeLegacy, type LegacyEncoding } from './legacy-encoder.js';
import type { PageSpec, SiteSpec } from './sites.js';
import type { SiteExpectation } from './standard-web.js';

/**
 * Legacy-encoded pages and robots directives, as the real web serves them. Not part of
 * `standardWeb()`: serve them with `SyntheticWeb.start({ sites: [...standardWeb(), ...charsetWeb()] })`.
 *
 * Three articles (French, Japanese, Chinese), each served as UTF-8 by `unicode.test` and in a
 * legacy encoding — windows-1252, Shift_JIS, GBK — by `charset.test`, declared in the ways the
 * web declares them: the
 * Content-Type charset (also contradicting a meta), `<meta charset>`, `<meta http-equiv>`, a
 * byte order mark (contradicting the header), and no declaration at all (after a commented-out
 * meta that must be ignored). Every variant has the same visible text and the same hrefs, with
 * non-ASCII characters in path and query; a crawler that decodes correctly requests each link
 * target with its path in UTF-8 and its query in the linking page's encoding (see
 * `charsetLinkRequests()`). The twins are on two sites because a crawler that finds pages of
 * one site near copies follows the links of only one of them; so both encodings' links are.
 *
 * `robots-tag.test` serves `X-Robots-Tag` headers and meta robots: links of a nofollow page (for
 * every agent, or for `crawlstream`) are never requested; those of a page that is nofollow only
 * for another agent, or noindex only, are.
 */

export { encodeLegacy, type LegacyEncoding };

interface Article {
  readonly slug: string;
  readonly lang: string;
  readonly title: string;
  readonly paragraphs: readonly string[];
  /** hrefs as written in the HTML (character references allowed). */
  readonly hrefs: readonly string[];
}

const FRENCH: Article = {
  slug: 'fr',
  lang: 'fr',
  title: 'Le café de la gare',
  paragraphs: [
    'Le café de la gare ouvre à sept heures; les élèves préfèrent le thé, les ouvriers le crème.',
    '« Déjà Noël ! » dit Zoë en voyant la vitrine… Œufs, bûches, marrons glacés — “soldes” à 5 € seulement.',
    'Ça coûte plus cher à Paris, où même l’eau a un goût de fête; Š, Ÿ et ™ sont là pour la table.',
  ],
  hrefs: ['café/crème.html', '/menu.html?plat=crêpe&prix=5€', 'menu.html?plat=&#26085;', '/'],
};

const JAPANESE: Article = {
  slug: 'ja',
  lang: 'ja',
  title: '駅前の喫茶店',
  paragraphs: [
    '駅前 の 喫茶店 は 朝 七時 に 開き ます。 学生 は 紅茶 を、 会社員 は 珈琲 を 好み ます。',
    '東京 の 天気 は 晴れ、 気温 は 二十度 です。 ｶﾀｶﾅ も ひらがな も 漢字 も 使い ます。',
    '表 と 能 と 予 は 二バイト目 が 記号 に なる 文字 です。',
  ],
  hrefs: ['喫茶/珈琲.html', '/検索.html?q=日本語&表=能', '/'],
};

const CHINESE: Article = {
  slug: 'zh',
  lang: 'zh',
  title: '车站前的咖啡馆',
  paragraphs: [
    '车站 前 的 咖啡馆 早上 七点 开门。 学生 喜欢 喝茶， 工人 喜欢 喝 咖啡。',
    '北京 的 天气 晴朗， 气温 二十度。 价格 五 € 左右， 非常 便宜。',
    '中文 网页 常用 国标 编码， 浏览器 必须 正确 解码。',
  ],
  hrefs: ['咖啡/菜单.html', '/搜索.html?q=中文&价格=€', '/'],
};

type Declaration = 'header' | 'header-over-meta' | 'meta' | 'http-equiv' | 'bom-over-header' | 'none';

interface Variant {
  readonly host: 'unicode.test' | 'charset.test';
  readonly path: string;
  readonly article: Article;
  readonly encoding: LegacyEncoding | 'UTF-8';
  readonly declaration: Declaration;
  /** Label used in the declaration (not always the encoding's name, as on the web). */
  readonly label: string;
}

/** Every article page: the UTF-8 original of each article first, then its twins. */
export const CHARSET_VARIANTS: readonly Variant[] = [
  {
    host: 'unicode.test',
    path: '/fr/utf8.html',
    article: FRENCH,
    encoding: 'UTF-8',
    declaration: 'header',
    label: 'utf-8',
  },
  {
    host: 'charset.test',
    path: '/fr/latin1-header.html',
    article: FRENCH,
    encoding: 'windows-1252',
    declaration: 'header',
    label: 'iso-8859-1',
  },
  {
    host: 'charset.test',
    path: '/fr/undeclared.html',
    article: FRENCH,
    encoding: 'windows-1252',
    declaration: 'none',
    label: '',
  },
  {
    host: 'unicode.test',
    path: '/fr/bom.html',
    article: FRENCH,
    encoding: 'UTF-8',
    declaration: 'bom-over-header',
    label: 'windows-1252',
  },
  {
    host: 'unicode.test',
    path: '/ja/utf8.html',
    article: JAPANESE,
    encoding: 'UTF-8',
    declaration: 'meta',
    label: 'utf-8',
  },
  {
    host: 'charset.test',
    path: '/ja/sjis-meta.html',
    article: JAPANESE,
    encoding: 'Shift_JIS',
    declaration: 'meta',
    label: 'Shift_JIS',
  },
  {
    host: 'charset.test',
    path: '/ja/sjis-header.html',
    article: JAPANESE,
    encoding: 'Shift_JIS',
    declaration: 'header-over-meta',
    label: 'x-sjis',
  },
  {
    host: 'unicode.test',
    path: '/zh/utf8.html',
    article: CHINESE,
    encoding: 'UTF-8',
    declaration: 'http-equiv',
    label: 'utf-8',
  },
  {
    host: 'charset.test',
    path: '/zh/gbk-http-equiv.html',
    article: CHINESE,
    encoding: 'GBK',
    declaration: 'http-equiv',
    label: 'gb2312',
  },
  {
    host: 'charset.test',
    path: '/zh/gbk-header.html',
    article: CHINESE,
    encoding: 'GBK',
    declaration: 'header',
    label: 'GBK',
  },
];

/** The HTML of a variant, as text (before encoding). */
export function variantHtml(v: Variant): string {
  const a = v.article;
  const meta =
    v.declaration === 'meta'
      ? `<meta charset="${v.label}">`
      : v.declaration === 'http-equiv'
        ? `<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=${v.label}">`
        : v.declaration === 'header-over-meta'
          ? '<meta charset="utf-8">'
          : v.declaration === 'none'
            ? '<!-- <meta charset="utf-8"> -->'
            : '';
  return [
    '<!doctype html>',
    `<html lang="${a.lang}"><head>${meta}<title>${a.title}</title></head><body>`,
    `<h1>${a.title}</h1>`,
    ...a.paragraphs.map((p) => `<p>${p}</p>`),
    `<ul>${a.hrefs.map((h) => `<li><a href="${h}">${h}</a></li>`).join('')}</ul>`,
    '</body></html>',
    '',
  ].join('\n');
}

function variantPage(v: Variant): PageSpec {
  const html = variantHtml(v);
  const bom = v.declaration === 'bom-over-header';
  const body =
    v.encoding === 'UTF-8'
      ? Buffer.concat([bom ? Buffer.from([0xef, 0xbb, 0xbf]) : Buffer.alloc(0), Buffer.from(html, 'utf8')])
      : encodeLegacy(html, v.encoding);
  const declaredInHeader = v.declaration.startsWith('header') || v.declaration === 'bom-over-header';
  return { contentType: declaredInHeader ? `text/html; charset=${v.label}` : 'text/html', body: new Uint8Array(body) };
}

/** The link targets of the articles on `host`, by their path (UTF-8 percent-encoded, as requested). */
function targetPages(host: string): Record<string, PageSpec> {
  const pages: Record<string, PageSpec> = {};
  for (const v of CHARSET_VARIANTS.filter((o) => o.host === host)) {
    for (const href of v.article.hrefs) {
      const path = new URL(href.replace(/\?.*/, ''), `http://charset.test${v.path}`).pathname;
      if (path !== '/') pages[path] = { title: `charset target ${path}`, links: ['/'] };
    }
  }
  return pages;
}

export function charsetWeb(): SiteSpec[] {
  const articles = (host: string): SiteSpec => {
    const variants = CHARSET_VARIANTS.filter((v) => v.host === host);
    return {
      host,
      seed: true,
      pages: {
        '/': { title: `${host} home`, links: variants.map((v) => v.path) },
        ...targetPages(host),
        ...Object.fromEntries(variants.map((v) => [v.path, variantPage(v)])),
      },
    };
  };
  const robotsPage = (headers: Record<string, string>, head: string, links: string[]): PageSpec => ({
    title: `robots-tag ${JSON.stringify(headers)} ${head}`,
    headers,
    head,
    links,
  });
  return [
    articles('unicode.test'),
    articles('charset.test'),
    {
      host: 'robots-tag.test',
      seed: true,
      pages: {
        '/': {
          title: 'Robots directives home',
          links: Object.keys(ROBOTS_PAGES).filter((p) => p !== '/'),
        },
        ...Object.fromEntries(
          Object.entries(ROBOTS_PAGES).map(([path, p]) => [path, robotsPage(p.headers ?? {}, p.head ?? '', p.links)]),
        ),
        ...Object.fromEntries(
          Object.values(ROBOTS_PAGES)
            .flatMap((p) => p.links)
            .map((l) => [l, { title: `robots-tag target ${l}`, links: ['/'] }]),
        ),
      },
    },
  ];
}

interface RobotsPage {
  headers?: Record<string, string>;
  head?: string;
  links: string[];
  noindex: boolean;
  followed: boolean;
}

const ROBOTS_PAGES: Readonly<Record<string, RobotsPage>> = {
  '/xrt-nofollow.html': {
    headers: { 'X-Robots-Tag': 'nofollow' },
    links: ['/never-1.html'],
    noindex: false,
    followed: false,
  },
  '/xrt-ours.html': {
    headers: { 'X-Robots-Tag': 'noarchive, CrawlStream: nofollow' },
    links: ['/never-2.html'],
    noindex: false,
    followed: false,
  },
  '/xrt-other.html': {
    headers: { 'X-Robots-Tag': 'otherbot: noindex, nofollow' },
    links: ['/followed-1.html'],
    noindex: false,
    followed: true,
  },
  '/xrt-noindex.html': {
    headers: {
      'X-Robots-Tag': 'unavailable_after: 25 Jun 2010 15:00:00 PST, noindex',
      'Content-Language': 'de-DE, en',
    },
    links: ['/followed-2.html'],
    noindex: true,
    followed: true,
  },
  '/meta-noindex.html': {
    head: '<meta name="robots" content="noindex, follow">',
    links: ['/followed-3.html'],
    noindex: true,
    followed: true,
  },
  '/meta-none.html': {
    head: '<meta name="ROBOTS" content="none">',
    links: ['/never-3.html'],
    noindex: true,
    followed: false,
  },
  '/meta-ours.html': {
    head: '<meta name="crawlstream" content="nofollow"><meta name="otherbot" content="noindex">',
    links: ['/never-4.html'],
    noindex: false,
    followed: false,
  },
};

/** robots-tag.test's pages whose page record must say noindex, and those whose links are followed. */
export function robotsTagExpectations(): {
  noindex: string[];
  indexed: string[];
  followedFrom: string[];
  notFollowedFrom: string[];
} {
  const entries = Object.entries(ROBOTS_PAGES);
  return {
    noindex: entries.filter(([, p]) => p.noindex).map(([path]) => path),
    indexed: entries.filter(([, p]) => !p.noindex).map(([path]) => path),
    followedFrom: entries.filter(([, p]) => p.followed).map(([path]) => path),
    notFollowedFrom: entries.filter(([, p]) => !p.followed).map(([path]) => path),
  };
}

/**
 * The requests (path and query) the links of each article page cause, by page path: each
 * path in UTF-8, each query encoded in the page's encoding (`%E9` for é from a windows-1252
 * page, `%C3%A9` from a UTF-8 one; `&#26085;`, unencodable in windows-1252, as
 * `%26%2326085%3B`). The twins of an article on one site have the same text, so a crawler that
 * finds them near copies follows only the links of the first one it fetched.
 */
export function charsetLinkRequests(): Readonly<Record<string, readonly string[]>> {
  const out: Record<string, string[]> = {};
  for (const v of CHARSET_VARIANTS) {
    const enc = v.declaration === 'bom-over-header' ? 'UTF-8' : v.encoding;
    out[v.path] = v.article.hrefs.map((href) => {
      const raw = href.replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)));
      const q = raw.indexOf('?');
      const path = new URL(q === -1 ? raw : raw.slice(0, q), `http://charset.test${v.path}`).pathname;
      return q === -1 ? path : `${path}?${queryIn(raw.slice(q + 1), enc)}`;
    });
  }
  return out;
}

/** What a correct crawl of robots-tag.test requests, and never requests. */
export function robotsTagSiteExpectation(): SiteExpectation {
  const robots = robotsTagExpectations();
  const linksOf = (paths: string[]) => paths.flatMap((p) => ROBOTS_PAGES[p]!.links);
  return {
    fetch: ['/robots.txt', '/', ...Object.keys(ROBOTS_PAGES), ...linksOf(robots.followedFrom)],
    never: linksOf(robots.notFollowedFrom),
    optional: [],
  };
}

/** A query as a browser sends it from a page in `encoding` (characters here need no ASCII escaping). */
function queryIn(query: string, encoding: LegacyEncoding | 'UTF-8'): string {
  let out = '';
  for (const ch of query) {
    if (ch.charCodeAt(0) < 0x80) out += ch;
    else if (encoding === 'UTF-8') out += encodeURIComponent(ch);
    else {
      const bytes = encodeChar(ch, encoding);
      out += bytes === undefined ? `%26%23${ch.codePointAt(0)}%3B` : [...bytes].map(escapeByte).join('');
    }
  }
  return out;
}

function escapeByte(b: number): string {
  // ASCII bytes of a two-byte character are sent as they are, but for the query percent-encode set
  return b >= 0x21 && b < 0x7f && !'"#<>\''.includes(String.fromCharCode(b))
    ? String.fromCharCode(b)
    : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
}
