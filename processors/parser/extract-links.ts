import { Parser } from 'htmlparser2';
import { FastTokenizer } from './fast-tokenizer.js';
import { normalizeUrl } from '../common/normalize.js';
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
}

/** Cap on `ExtractResult.text`, in UTF-16 code units (~200 KB of mostly ASCII text). */
export const MAX_TEXT_CHARS = 200_000;
const MAX_TITLE_CHARS = 1_000;
const DEFAULT_MAX_LINKS = 1_000;
/** Cap on `ExtractResult.feeds`: a page announces a handful (posts, comments, per category). */
export const MAX_FEEDS = 20;
// bounds the work on pages made of junk hrefs: at most this many candidates per returned link
const CANDIDATES_PER_LINK = 20;

// schemes that are never crawlable and are not counted as dropped
const SKIPPED_SCHEME = /^(?:javascript|mailto|data|tel|sms|callto|about|blob):/i;

// elements whose text content a reader never sees; elements often left unclosed (head,
// noscript, object) are not listed, as one of them would hide the rest of the page
const INVISIBLE = new Set(['script', 'style', 'template', 'svg', 'math', 'title', 'iframe', 'noembed', 'noframes']);

// elements that do not break words; every other tag boundary counts as whitespace
const INLINE = new Set([
  'a',
  'abbr',
  'b',
  'bdi',
  'bdo',
  'cite',
  'code',
  'data',
  'dfn',
  'em',
  'font',
  'i',
  'kbd',
  'mark',
  'q',
  's',
  'samp',
  'small',
  'span',
  'strike',
  'strong',
  'sub',
  'sup',
  'time',
  'tt',
  'u',
  'var',
  'wbr',
]);

interface Candidate {
  href: string;
  kind: LinkKind;
  nofollow: boolean;
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

  const addCandidate = (href: string | undefined, kind: LinkKind, nofollow: boolean): void => {
    if (href === undefined || candidates.length >= maxCandidates) return;
    candidates.push({ href, kind, nofollow });
  };

  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if (INVISIBLE.has(name)) invisibleDepth++;
        else if (!INLINE.has(name)) text.boundary();
        if (name === 'svg') svgDepth++;
        switch (name) {
          case 'a':
          case 'area':
            addCandidate(attrs.href, name, hasToken(attrs.rel, 'nofollow'));
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
        if (INVISIBLE.has(name)) invisibleDepth = Math.max(0, invisibleDepth - 1);
        else if (!INLINE.has(name)) text.boundary();
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
    if (name === 'robots' || (name !== undefined && name === robotsToken)) {
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
  const admit = (href: string, kind: LinkKind, nofollow: boolean): string | undefined => {
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
    } else if (seen.size < maxLinks) {
      const link: ExtractedLink = { url, nofollow, kind };
      seen.set(url, link);
      result.links.push(link);
    }
    return url;
  };

  if (refreshHref !== undefined) result.refresh = admit(refreshHref, 'refresh', false);
  if (canonicalHref !== undefined) result.canonical = admit(canonicalHref, 'canonical', false);
  for (const c of candidates) admit(c.href, c.kind, c.nofollow);
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
  return result;
}

/**
 * The URL of a refresh directive (`5; url='next.html'`, `0;URL=/x`, `0, next`), per the HTML
 * standard's shared declarative refresh steps, or undefined when it only reloads the page.
 */
export function parseRefresh(content: string): string | undefined {
  const time = /^\s*(\d*)(\.[\d.]*)?/.exec(content)!;
  if (time[1] === '' && time[2] === undefined) return undefined;
  let rest = content.slice(time[0].length);
  if (rest !== '' && !/^[\s;,]/.test(rest)) return undefined;
  rest = rest.replace(/^\s*[;,]?\s*/, '');
  const prefix = /^url\s*=\s*/i.exec(rest);
  if (prefix !== null) rest = rest.slice(prefix[0].length);
  const quote = rest[0];
  if (quote === '"' || quote === "'") {
    const end = rest.indexOf(quote, 1);
    rest = end === -1 ? rest.slice(1) : rest.slice(1, end);
  }
  rest = rest.trim();
  return rest === '' ? undefined : rest;
}

/** The normalized URL, '' for hrefs skipped by design, null for hrefs that fail normalization. */
function normalizeHref(href: string, base: string | undefined): string | null {
  const trimmed = href.trim();
  if (trimmed === '' || trimmed.charCodeAt(0) === 0x23 /* # */ || SKIPPED_SCHEME.test(trimmed)) return '';
  const n = normalizeUrl(trimmed, base);
  return n.ok ? n.url : null;
}

function resolveHttp(href: string, base: string): string | undefined {
  try {
    const url = new URL(href.trim(), base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

function isAbsolute(url: string): boolean {
  try {
    new URL(url);
    return true;
  } catch {
    return false;
  }
}

function hasToken(list: string | undefined, token: string): boolean {
  if (list === undefined) return false;
  return list.toLowerCase().split(/\s+/).includes(token);
}

// whitespace runs other than a lone space: a lone space, by far the most common, is left alone
const NOT_A_LONE_SPACE = /\s\s+|[^\S ]/g;

function collapse(s: string): string {
  return s.replace(NOT_A_LONE_SPACE, ' ').trim();
}

/**
 * Accumulates text up to a cap of collapsed characters, then ignores the rest cheaply.
 * Whitespace is collapsed in batches, not per chunk: most chunks are short and most pages
 * stay far below the cap.
 */
class TextCollector {
  private parts: string[] = [];
  private rawLength = 0;
  private full = false;

  constructor(private readonly cap: number) {}

  add(data: string): void {
    if (this.full) return;
    this.parts.push(data);
    this.rawLength += data.length;
    if (this.rawLength > 2 * this.cap) this.compact();
  }

  /** A tag boundary that separates words (block elements, line breaks). */
  boundary(): void {
    if (this.full || this.parts.length === 0 || this.parts[this.parts.length - 1] === ' ') return;
    this.parts.push(' ');
    this.rawLength++;
  }

  finish(): string {
    // trimming the end chunks before joining, rather than the joined text after collapsing, keeps
    // the text one flat string: trim() returns a slice of its input, and every charCodeAt on a
    // slice goes through its parent, which costs SimHash ~15 % on a long text
    const parts = this.parts;
    let first = 0;
    let last = parts.length - 1;
    for (; first <= last; first++) {
      const chunk = parts[first]!.trimStart();
      if (chunk === '') continue;
      parts[first] = chunk;
      break;
    }
    for (; last >= first; last--) {
      const chunk = parts[last]!.trimEnd();
      if (chunk === '') continue;
      parts[last] = chunk;
      break;
    }
    const text = (first === 0 && last === parts.length - 1 ? parts : parts.slice(first, last + 1))
      .join('')
      .replace(NOT_A_LONE_SPACE, ' ');
    return text.length > this.cap ? text.slice(0, this.cap).trimEnd() : text;
  }

  private compact(): void {
    const text = this.parts.join('').replace(NOT_A_LONE_SPACE, ' ').trimStart();
    this.parts = [text];
    this.rawLength = text.length;
    if (text.length > this.cap) this.full = true;
  }
}
