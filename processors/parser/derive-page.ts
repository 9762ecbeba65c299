import type { CrawlErrorCode } from '../../core/errors.js';
import { M } from '../../core/metric-catalogue.js';
import type { Metrics } from '../../core/metrics.js';
import type { FetchedPage, Link, PageContent, ParsedPage, PayloadRole } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { isFinalOutcome } from '../common/outcome.js';
import { isDedupable, sha1Digest } from '../common/payload.js';
import type { DigestEntry } from './dedupe.js';
import { analyzeHtml, isHtml, type AnalysisRequest, type HtmlAnalysis } from './html-analysis.js';
import { xRobotsTag } from './robots-directives.js';
import { normalizeUrl, siteOf } from '../common/normalize.js';
import { pageChanged } from '../common/change.js';
import type { FeedReader } from './feed-reader.js';
import type { WarcLocation } from './warc-writer.js';
import { pageContent } from './page-content.js';

/** What the parser derives from one archived fetch, besides the fetch itself. */
export interface DeriveInput {
  page: FetchedPage;
  /** The fetch's WARC record: the response, revisit or metadata record. */
  /** Null when the fetch was not archived (a type --accept-type refuses). */
  location: WarcLocation | null;
  /** The payload digest its WARC record carries (the last visit's on a 304); null when no response came. */
  payloadDigest: string | null;
  /** The payload digest when the page takes part in duplicate detection (dedupDigest), else null. */
  dedupDigest: string | null;
  /** The first record of the payload when this fetch is an exact copy (written as a revisit); else undefined. */
  first: DigestEntry | undefined;
  /** A revisit answered 304 Not Modified (see isNotModified). */
  notModified: boolean;
  /**
   * Bytes of the body as received, when `page.body` is not the body: a copy re-derived from its
   * WARC revisit record, which stores no payload. Default `page.body.length`.
   */
  contentLength?: number;
  /**
   * The body's analysis when it was made beforehand (on a parse worker, see ParsePool); made here
   * when absent. Used only when the page is analysed at all (see `wantsHtmlAnalysis`).
   */
  analysis?: HtmlAnalysis;
}

/** The payload digest of a page that takes part in duplicate detection (a 2xx page body), else null. */
export function dedupDigest(page: FetchedPage): string | null {
  // the fetcher computed the digest to key the record by it; records from before it did have none
  return isDedupable(page) ? (page.payloadDigest ?? sha1Digest(page.body)) : null;
}

/** A derived page: the ParsedPage, its key, and the payload index entry to remember when it is a payload's first record. */
export interface Derived {
  key: string;
  parsed: ParsedPage;
  firstEntry?: DigestEntry;
}

/** The parser's settings and helpers that derivation needs; built once per task (or reparse run). */
export interface DeriveContext {
  config: CrawlConfig;
  /** productToken(config.userAgent): our name in robots directives. */
  robotsToken: string;
  feeds: FeedReader;
  metrics: Metrics;
}

/**
 * The one code path from an archived fetch to its ParsedPage: parse HTML (charset, links,
 * canonical, SimHash, lang, meta robots), read sitemaps and feeds, follow redirects, take a copy's
 * derived fields from its payload's first record. Shared by the live parser (PageArchiver) and
 * `replay reparse`, so a reparse under an unchanged parser derives exactly what the crawl did.
 *
 * Pure but for metrics: no state is read or written; the caller remembers `firstEntry` in its
 * payload index. Returns undefined when the fetch yields no page record: robots.txt, a lease
 * dropped unfetched, a transient outcome the crawler retries.
 */
export function derivePage(input: DeriveInput, ctx: DeriveContext): Derived | undefined {
  const { page, location, payloadDigest, first, notModified } = input;
  const { config, robotsToken, feeds, metrics: m } = ctx;
  // robots.txt is read by the frontier, and a lease dropped unfetched says nothing about its URL
  if (page.kind === 'ROBOTS' || page.errorCode === 'CS_LEASE_EXPIRED') return undefined;
  if (!isFinalOutcome(page.status, page.errorCode, page.attempt, config.maxAttempts)) {
    m.inc(M.parserTransientOutcomes);
    return undefined;
  }
  const digest = input.dedupDigest;

  const contentType = header(page, 'content-type');
  const outlinks: Link[] = [];
  let canonicalUrl: string | null = null;
  let errorCode: CrawlErrorCode | null = page.errorCode;
  let simhash: Buffer | undefined = first?.simhash
    ? Buffer.from(first.simhash, 'hex')
    : notModified && page.previousSimhash
      ? page.previousSimhash
      : undefined;
  const headerRobots = xRobotsTag(headers(page, 'x-robots-tag'), robotsToken);
  // a copy is not parsed again: what its body says is what the first record's body said
  let charset = first?.charset;
  let lang = first?.lang;
  let metaNoindex = first?.metaNoindex ?? false;
  let content: PageContent | null = null;
  if (first !== undefined || notModified) {
    // an alias of a payload already parsed, or a 304: nothing to extract, its links are not followed again;
    // a copy's body (when it came with it, not from a revisit record) is still read for its content,
    // whose relative links resolve against its own URL
    if (!notModified && input.contentLength === undefined && wantsHtmlAnalysis(page, contentType)) {
      const analysis = input.analysis ?? analyzeHtml(analysisRequest(page, contentType, ctx));
      if (!analysis.errorCode) content = pageContent(page, analysis, () => false, config);
    }
  } else if (page.kind === 'SITEMAP' || page.kind === 'FEED') {
    if (page.status >= 200 && page.status < 300 && page.errorCode !== 'CS_BOMB') {
      const read = feeds.read(page, contentType);
      if (read.errorCode !== null) errorCode = read.errorCode;
      outlinks.push(...read.links);
    }
  } else if (wantsHtmlAnalysis(page, contentType)) {
    const analysis = input.analysis ?? analyzeHtml(analysisRequest(page, contentType, ctx));
    if (analysis.errorCode) {
      errorCode = analysis.errorCode;
      m.inc(M.parserErrors, 1, analysis.errorCode);
    } else {
      canonicalUrl = analysis.canonical ?? null;
      simhash = analysis.simhash;
      charset = analysis.encoding;
      lang = analysis.lang;
      metaNoindex = analysis.noindex;
      const pageNofollow = analysis.nofollow || headerRobots.nofollow;
      content = pageContent(page, analysis, (l) => !pageNofollow && !l.nofollow && l.kind !== 'canonical', config);
      if (!pageNofollow) {
        for (const l of analysis.links)
          if (!l.nofollow && l.kind !== 'canonical')
            outlinks.push({ url: l.url, depth: page.depth + 1, redirectHops: 0 });
      }
      // the feeds a page announces are read for their items (and revisited in the feed lane)
      if (config.sitemaps)
        for (const url of analysis.feeds)
          outlinks.push({ url, depth: page.depth + 1, redirectHops: 0, kind: 'FEED', lastmod: null });
      m.inc(M.linksExtracted, outlinks.length);
    }
  } else if (page.status >= 300 && page.status < 400 && page.redirectTarget) {
    const target = normalizeUrl(page.redirectTarget, page.url);
    // a redirect keeps the depth of the page that linked here and counts one more hop
    if (target.ok) outlinks.push({ url: target.url, depth: page.depth, redirectHops: page.redirectHops + 1 });
  }

  let role: PayloadRole = 'NONE';
  let firstEntry: DigestEntry | undefined;
  if (first !== undefined) {
    role = 'COPY';
  } else if (digest !== null && location !== null) {
    role = 'FIRST';
    firstEntry = {
      url: page.url,
      site: page.site,
      fetchedAt: page.fetchedAt,
      recordId: location.recordId,
      duplicateOf: null,
      simhash: simhash?.toString('hex') ?? null,
      ...(charset !== undefined ? { charset } : {}),
      ...(lang !== undefined ? { lang } : {}),
      ...(metaNoindex ? { metaNoindex } : {}),
    };
  }
  const visit = page.visit ?? 0;
  const previous = {
    status: page.previousStatus ?? 0,
    digest: page.previousDigest ?? null,
    simhash: page.previousSimhash ?? null,
  };
  const parsed: ParsedPage = {
    url: page.url,
    site: page.site,
    host: page.host,
    depth: page.depth,
    fetchTime: page.fetchedAt,
    status: page.status,
    contentType,
    contentLength: input.contentLength ?? page.body.length,
    payloadDigest,
    simhash: simhash ?? null,
    canonicalUrl,
    errorCode,
    redirectTarget: page.redirectTarget,
    warcFile: location?.file ?? null,
    warcOffset: location?.offset ?? null,
    warcLength: location?.length ?? null,
    outlinks,
    payloadRole: role,
    copyOf: first?.url ?? null,
    duplicateOf: null,
    charset: charset ?? null,
    language: lang ?? firstLanguage(header(page, 'content-language')),
    noindex: headerRobots.noindex || metaNoindex,
    kind: page.kind,
    visit,
    changed:
      visit > 0 &&
      pageChanged(previous, { status: page.status, digest: payloadDigest, simhash: simhash ?? null }, notModified),
    notModified,
    previousFetchTime: page.previousFetchTime ?? null,
    etag: header(page, 'etag'),
    lastModified: header(page, 'last-modified'),
    content,
  };
  // a copy is decided at the site of its payload's first record, where that record's verdict lives
  const key = first !== undefined ? (first.site ?? siteOf(first.url)) : page.site;
  return { key, parsed, ...(firstEntry !== undefined ? { firstEntry } : {}) };
}

/** A response header's value by case-insensitive name; the last one when it is repeated. */
export function header(page: FetchedPage, lowerName: string): string | null {
  let value: string | null = null;
  for (const h of page.headers)
    if (h.name.length === lowerName.length && h.name.toLowerCase() === lowerName) value = h.value;
  return value;
}

/** Every value of a response header, by case-insensitive name, in order. */
function headers(page: FetchedPage, lowerName: string): string[] {
  const values: string[] = [];
  for (const h of page.headers)
    if (h.name.length === lowerName.length && h.name.toLowerCase() === lowerName) values.push(h.value);
  return values;
}

/** The first language tag of a Content-Language value (`de-DE, en` → `de-DE`), or null. */
function firstLanguage(value: string | null): string | null {
  const tag = value?.split(',')[0]?.trim();
  return tag ? tag : null;
}

/**
 * Whether the body of an outcome that is neither a payload copy nor a 304 is analysed as HTML: a
 * 2xx HTML page that is not a sitemap or feed, and not a bomb (flagged by the fetcher: archived as
 * received, never inflated here).
 */
export function wantsHtmlAnalysis(
  page: FetchedPage,
  contentType: string | null = header(page, 'content-type'),
): boolean {
  return (
    page.kind !== 'SITEMAP' &&
    page.kind !== 'FEED' &&
    page.kind !== 'ROBOTS' &&
    page.status >= 200 &&
    page.status < 300 &&
    page.errorCode !== 'CS_BOMB' &&
    page.errorCode !== 'CS_REFUSED_TYPE' &&
    isHtml(contentType, page.body)
  );
}

/** What `analyzeHtml` needs of a page and the parser's settings. */
export function analysisRequest(
  page: FetchedPage,
  contentType: string | null,
  ctx: Pick<DeriveContext, 'config' | 'robotsToken'>,
): AnalysisRequest {
  return {
    body: page.body,
    contentEncoding: header(page, 'content-encoding') ?? undefined,
    contentType,
    url: page.url,
    maxDecodedBytes: ctx.config.maxDecodedBytes,
    maxLinks: ctx.config.maxOutlinksPerPage,
    robotsToken: ctx.robotsToken,
    mainTextChars: ctx.config.contentTextMaxBytes,
  };
}
