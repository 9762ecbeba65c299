import { Parser } from 'htmlparser2';
import { FastTokenizer } from './fast-tokenizer.js';
import { isAbsolute, normalizeHref, parseRefresh, resolveHttp } from './link-urls.js';
import { BOILERPLATE, BOILERPLATE_ROLES, collapse, INLINE, INVISIBLE, MAIN, TextCollector } from './page-text.js';
import { encodeHrefQuery } from './query-encoding.js';
import { robotsContent } from './robots-directives.js';
import { isFeedLink } from './feeds/feed-links.js';

export type LinkKind = 'a' | 'frame' | 'iframe' | 'area' | 'refresh' | 'canonical';

export interface ExtractedLink {
  /** Normalized absolute URL (see `normalizeUrl`). */
  url: string;
  /** True when every occurrence of this URL on the page carried rel=nofollow. */
  nofollow: boolean;
  /** Where the URL was first found. */
  kind: LinkKind;
  /**
   * The text a reader clicks: the first non-empty anchor text of an `<a>` to this URL (an image's
   * `alt` counts; an `<area>`'s is its `alt`), whitespace-collapsed, at most MAX_ANCHOR_CHARS; absent when none.
   */
  anchor?: string;
  /** The `rel` attribute of the URL's first `<a>`/`<area>`, trimmed, at most MAX_REL_CHARS; absent when none. */
  rel?: string;
}

export interface ExtractResult {
  /** Unique outlinks in document order, at most `maxLinks`. */
  links: ExtractedLink[];
  /** Normalized URL of the first `<link rel=canonical href>`. */
  canonical?: string;
  /**
   * Normalized URLs of the feeds the page announces (`<link rel=alternate type=application/rss+xml
   * or application/atom+xml href>`, see `isFeedLink`), unique, in document order, at most
   * MAX_FEEDS; absent when none. Not in `links`: a feed is read with parseFeed, not as a page.
   */
  feeds?: string[];
  /** Absolute URL of the first `<base href>`, as used to resolve relative links. */
  base?: string;
  /** `<meta name=robots>` (or `<meta name=TOKEN>`, see `robotsToken`) says noindex (or none). */
  noindex: boolean;
  /** `<meta name=robots>` (or `<meta name=TOKEN>`) says nofollow (or none); links keep their own rel=nofollow flag. */
  nofollow: boolean;
  /** The `lang` (else `xml:lang`) attribute of the `<html>` element, trimmed, when not empty. */
  lang?: string;
  /** Normalized target of `<meta http-equiv=refresh content="N; url=…">`. */
  refresh?: string;
  /** The first `<title>` outside SVG, whitespace-collapsed, at most 1,000 characters. */
  title?: string;
  /** Visible text, whitespace-collapsed, at most `MAX_TEXT_CHARS` characters. */
  text: string;
  /** The first `<meta name=description content>`, whitespace-collapsed, at most 1,000 characters. */
  description?: string;
  /**
   * The page's main text, whitespace-collapsed: the text of its `<main>`/`<article>` elements (or
   * role=main) when it has any, else its visible text without nav, header, footer and aside
   * (and their ARIA roles). At most `mainTextChars` characters; absent unless that option is set.
   */
  mainText?: string;
  /** `mainText` was cut at `mainTextChars`. */
  mainTextTruncated?: boolean;
  /** URLs that failed normalization (bad, unsupported scheme, too long). */
  dropped: number;
}

export interface ExtractOptions {
  /** Most unique links returned; 1,000 by default. */
  maxLinks?: number;
  /** Parse with htmlparser2's stock Tokenizer instead of FastTokenizer (same result, slower; for tests). */
  stockTokenizer?: boolean;
  /**
   * The page's encoding (WHATWG name), UTF-8 by default: the queries of its links are
   * percent-encoded in it, as the URL standard's encoding override says (see query-encoding.ts).
   */
  encoding?: string;
  /** Our robots user-agent token (`crawlstream`): `<meta name=TOKEN>` counts like `<meta name=robots>`. */
  robotsToken?: string;
  /** Collect `mainText`, up to this many characters; not collected when absent or 0. */
  mainTextChars?: number;
}

/** Cap on `ExtractResult.text`, in UTF-16 code units (~200 KB of mostly ASCII text). */
export const MAX_TEXT_CHARS = 200_000;
const MAX_TITLE_CHARS = 1_000;
/** Cap on `ExtractResult.description`. */
export const MAX_DESCRIPTION_CHARS = 1_000;
/** Cap on `ExtractedLink.anchor`. */
export const MAX_ANCHOR_CHARS = 256;
/** Cap on `ExtractedLink.rel`. */
export const MAX_REL_CHARS = 128;
const DEFAULT_MAX_LINKS = 1_000;
/** Cap on `ExtractResult.feeds`: a page announces a handful (posts, comments, per category). */
export const MAX_FEEDS = 20;
// bounds the work on pages made of junk hrefs: at most this many candidates per returned link
const CANDIDATES_PER_LINK = 20;

interface Candidate {
  href: string;
  kind: LinkKind;
  nofollow: boolean;
  rel: string | undefined;
  anchor: string | undefined;
}

/**
 * Extracts outlinks, robots directives, title and visible text from an HTML page in one
 * streaming pass of htmlparser2 (no DOM is built).
 *
 * Relative URLs resolve against the first `<base href>` anywhere in the document (as browsers
 * do), else against `pageUrl`. Links come from `<a href>`, `<area href>`, `<frame src>`,
 * `<iframe src>`, the refresh target and the canonical URL; javascript:, mailto:, data:, tel:
 * and fragment-only hrefs are skipped without counting as dropped. Links are normalized,
 * deduplicated and capped at `maxLinks`. Never throws: garbage yields fewer links.
 */
export function extractLinks(html: string, pageUrl: string, options?: ExtractOptions): ExtractResult {
  const maxLinks = options?.maxLinks ?? DEFAULT_MAX_LINKS;
  const maxCandidates = Math.max(maxLinks, 1) * CANDIDATES_PER_LINK;
  const candidates: Candidate[] = [];
  const text = new TextCollector(MAX_TEXT_CHARS);
  const result: ExtractResult = { links: [], noindex: false, nofollow: false, text: '', dropped: 0 };
  const robotsToken = options?.robotsToken?.toLowerCase();
  const encoding = options?.encoding !== undefined && options.encoding !== 'UTF-8' ? options.encoding : undefined;
  let seenHtml = false;

  let baseHref: string | undefined;
  let canonicalHref: string | undefined;
  const feedHrefs: string[] = [];
  let refreshHref: string | undefined;
  let title: string | undefined;
  let titleBuffer: string | undefined;
  let invisibleDepth = 0;
  let svgDepth = 0;

  // main text: text outside boilerplate, and text inside main/article; the latter wins when there is any
  const mainTextChars = options?.mainTextChars ?? 0;
  const reduced = mainTextChars > 0 ? new TextCollector(mainTextChars) : undefined;
  const marked = mainTextChars > 0 ? new TextCollector(mainTextChars) : undefined;
  // the element depth at which each open boilerplate or main region began, innermost last, and
  // whether it is boilerplate: its element's close ends it
  const regionDepths: number[] = [];
  const regionIsBoilerplate: boolean[] = [];
  let elementDepth = 0;
  let boilerplateDepth = 0;
  let mainDepth = 0;
  let description: string | undefined;
  // the `<a>` whose anchor text is being read, and that text so far
  let anchorOf: Candidate | undefined;
  let anchorBuffer = '';

  const addCandidate = (
    href: string | undefined,
    kind: LinkKind,
    nofollow: boolean,
    rel?: string,
    anchor?: string,
  ): Candidate | undefined => {
    if (href === undefined || candidates.length >= maxCandidates) return undefined;
    const c: Candidate = { href, kind, nofollow, rel, anchor };
    candidates.push(c);
    return c;
  };
  const endAnchor = (): void => {
    if (anchorOf === undefined) return;
    const anchor = collapse(anchorBuffer).slice(0, MAX_ANCHOR_CHARS);
    if (anchor !== '') anchorOf.anchor = anchor;
    anchorOf = undefined;
    anchorBuffer = '';
  };

  const parser = new Parser(
    {
      onopentag(name, attrs) {
        elementDepth++;
        if (INVISIBLE.has(name)) invisibleDepth++;
        else if (!INLINE.has(name)) {
          text.boundary();
          if (reduced !== undefined) {
            reduced.boundary();
            marked!.boundary();
            const role = attrs.role;
            if (BOILERPLATE.has(name) || (role !== undefined && BOILERPLATE_ROLES.has(role.trim().toLowerCase()))) {
              regionDepths.push(elementDepth);
              regionIsBoilerplate.push(true);
              boilerplateDepth++;
            } else if (MAIN.has(name) || (role !== undefined && role.trim().toLowerCase() === 'main')) {
              regionDepths.push(elementDepth);
              regionIsBoilerplate.push(false);
              mainDepth++;
            }
          }
        }
        if (name === 'svg') svgDepth++;
        switch (name) {
          case 'a':
            endAnchor();
            anchorOf = addCandidate(attrs.href, name, hasToken(attrs.rel, 'nofollow'), attrs.rel);
            break;
          case 'area':
            addCandidate(attrs.href, name, hasToken(attrs.rel, 'nofollow'), attrs.rel, attrs.alt);
            break;
          case 'img':
            if (anchorOf !== undefined && attrs.alt !== undefined) anchorBuffer += ` ${attrs.alt} `;
            break;
          case 'frame':
          case 'iframe':
            addCandidate(attrs.src, name, false);
            break;
          case 'base':
            if (baseHref === undefined && attrs.href !== undefined) baseHref = attrs.href;
            break;
          case 'link':
            if (canonicalHref === undefined && attrs.href !== undefined && hasToken(attrs.rel, 'canonical')) {
              canonicalHref = attrs.href;
            }
            // twice the cap: some of them may not normalize
            if (attrs.href !== undefined && feedHrefs.length < 2 * MAX_FEEDS && isFeedLink(attrs.rel, attrs.type)) {
              feedHrefs.push(attrs.href);
            }
            break;
          case 'meta':
            onMeta(attrs);
            break;
          case 'html':
            if (!seenHtml) {
              seenHtml = true;
              const lang = (attrs.lang ?? attrs['xml:lang'])?.trim();
              if (lang) result.lang = lang;
            }
            break;
          case 'title':
            if (title === undefined && svgDepth === 0) titleBuffer = '';
            break;
        }
      },
      onclosetag(name) {
        const depth = elementDepth;
        elementDepth = Math.max(0, elementDepth - 1);
        if (INVISIBLE.has(name)) invisibleDepth = Math.max(0, invisibleDepth - 1);
        else if (!INLINE.has(name)) {
          text.boundary();
          if (reduced !== undefined) {
            reduced.boundary();
            marked!.boundary();
            if (regionDepths.length > 0 && regionDepths[regionDepths.length - 1] === depth) {
              regionDepths.pop();
              if (regionIsBoilerplate.pop()) boilerplateDepth--;
              else mainDepth--;
            }
          }
        }
        if (name === 'a') endAnchor();
        if (name === 'svg') svgDepth = Math.max(0, svgDepth - 1);
        if (name === 'title' && titleBuffer !== undefined) {
          title = collapse(titleBuffer).slice(0, MAX_TITLE_CHARS);
          titleBuffer = undefined;
        }
      },
      ontext(data) {
        if (titleBuffer !== undefined) {
          if (titleBuffer.length < MAX_TITLE_CHARS * 4) titleBuffer += data;
        } else if (invisibleDepth === 0) {
          text.add(data);
          if (anchorOf !== undefined && anchorBuffer.length < MAX_ANCHOR_CHARS * 4) anchorBuffer += data;
          if (reduced !== undefined && boilerplateDepth === 0) {
            reduced.add(data);
            if (mainDepth > 0) marked!.add(data);
          }
        }
      },
    },
    {
      decodeEntities: true,
      lowerCaseTags: true,
      lowerCaseAttributeNames: true,
      ...(options?.stockTokenizer ? {} : { Tokenizer: FastTokenizer }),
    },
  );

  function onMeta(attrs: Record<string, string>): void {
    const content = attrs.content;
    if (content === undefined) return;
    const name = attrs.name?.trim().toLowerCase();
    if (name === 'description') {
      if (description === undefined) description = collapse(content).slice(0, MAX_DESCRIPTION_CHARS);
    } else if (name === 'robots' || (name !== undefined && name === robotsToken)) {
      const directives = robotsContent(content);
      result.noindex ||= directives.noindex;
      result.nofollow ||= directives.nofollow;
    } else if (refreshHref === undefined && attrs['http-equiv']?.trim().toLowerCase() === 'refresh') {
      refreshHref = parseRefresh(content);
    }
  }

  try {
    parser.write(html);
    parser.end();
  } catch {
    // htmlparser2 is forgiving; this only guards the "never throws" contract
  }

  let resolveBase = isAbsolute(pageUrl) ? pageUrl : undefined;
  if (baseHref !== undefined && resolveBase !== undefined) {
    const base = resolveHttp(baseHref, resolveBase);
    if (base !== undefined) {
      resolveBase = base;
      result.base = base;
    }
  }

  const seen = new Map<string, ExtractedLink>();
  // pages repeat hrefs (navigation, "read more"); each distinct one is normalized once
  const normalized = new Map<string, string | null>();
  const admit = (
    href: string,
    kind: LinkKind,
    nofollow: boolean,
    rel?: string,
    anchor?: string,
  ): string | undefined => {
    let url = normalized.get(href);
    if (url === undefined) {
      url = normalizeHref(encoding === undefined ? href : encodeHrefQuery(href, encoding), resolveBase);
      normalized.set(href, url);
    }
    if (url === null) {
      result.dropped++;
      return undefined;
    }
    if (url === '') return undefined;
    const existing = seen.get(url);
    if (existing !== undefined) {
      existing.nofollow &&= nofollow;
      if (existing.anchor === undefined && anchor !== undefined) existing.anchor = anchor;
    } else if (seen.size < maxLinks) {
      const link: ExtractedLink = { url, nofollow, kind };
      if (anchor !== undefined) link.anchor = anchor;
      const r = rel?.trim();
      if (r) link.rel = r.slice(0, MAX_REL_CHARS);
      seen.set(url, link);
      result.links.push(link);
    }
    return url;
  };

  if (refreshHref !== undefined) result.refresh = admit(refreshHref, 'refresh', false);
  if (canonicalHref !== undefined) result.canonical = admit(canonicalHref, 'canonical', false);
  for (const c of candidates) admit(c.href, c.kind, c.nofollow, c.rel, c.anchor);
  const feeds = new Set<string>();
  for (const href of feedHrefs) {
    const url = normalizeHref(encoding === undefined ? href : encodeHrefQuery(href, encoding), resolveBase);
    if (url !== null && url !== '' && feeds.size < MAX_FEEDS) feeds.add(url);
  }
  if (feeds.size > 0) result.feeds = [...feeds];
  if (result.refresh === undefined) delete result.refresh;
  if (result.canonical === undefined) delete result.canonical;

  if (title !== undefined) result.title = title;
  else if (titleBuffer !== undefined) result.title = collapse(titleBuffer).slice(0, MAX_TITLE_CHARS);
  result.text = text.finish();
  if (description) result.description = description;
  if (reduced !== undefined) {
    const main = marked!.finish();
    const chosen = main !== '' ? marked! : reduced;
    result.mainText = main !== '' ? main : reduced.finish();
    result.mainTextTruncated = chosen.truncated;
  }
  return result;
}

function hasToken(list: string | undefined, token: string): boolean {
  if (list === undefined) return false;
  return list.toLowerCase().split(/\s+/).includes(token);
}
