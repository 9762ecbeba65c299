import type { CrawlErrorCode } from '../../core/errors.js';
import { M } from '../../core/metric-catalogue.js';
import { STATUS_CODES } from 'node:http';
import type { Metrics } from '../../core/metrics.js';
import type { FetchedPage, Link, ParsedPage, PayloadRole } from '../../schemas/types.js';
import { productToken, type CrawlConfig } from '../common/crawl-config.js';
import { isFinalOutcome } from '../common/outcome.js';
import { decodeBody } from '../common/decode.js';
import { type DigestEntry, type PayloadIndex } from './dedupe.js';
import { isDedupable } from '../common/payload.js';
import { decodeHtml, sniffCharset } from './charset.js';
import { extractLinks } from './extract-links.js';
import { xRobotsTag } from './robots-directives.js';
import { normalizeUrl, siteOf } from '../common/normalize.js';
import { simhash64 } from './simhash.js';
import { pageChanged } from '../common/change.js';
import { FeedReader } from './feed-reader.js';
import { sha1Digest } from '../common/payload.js';
import type { WarcLocation, WarcWriter } from './warc-writer.js';

/** Where the archiver's output goes: a parsed page, keyed for the site-keyed half (see ParsedPage). */
export type ParsedPageSink = (key: string, page: ParsedPage, timestamp: number) => void;

/**
 * The payload-keyed half of the parser: it reads `fetched`, which is keyed by payload digest, so
 * every copy of a payload arrives in the partition that archived the first one, from any site.
 *
 * Every fetch is archived — request + response, or a metadata record when no response came
 * (incl. leases dropped as CS_LEASE_EXPIRED). A 2xx page body whose payload digest was archived
 * before, by any URL of any site, is written as a revisit record (identical-payload-digest) that
 * refers to the first response record, and is not parsed again: it carries the first record's
 * SimHash and no links. Other HTML bodies are decoded in their charset (charset.ts) and parsed
 * (links, canonical, SimHash, `<html lang>`, meta robots).
 *
 * Robots directives: `nofollow` from `X-Robots-Tag` or meta robots means no outlinks (a redirect
 * is still followed: it is the response, not a link on a page); `noindex` is recorded.
 *
 * A page's final outcome (not robots.txt, an expired lease or a transient error) then goes on as
 * a ParsedPage to the site-keyed half, keyed by the page's site — or, for an exact copy, by the
 * site of the first record, where the verdict on that record (itself a near copy or not) is kept.
 */
export class PageArchiver {
  private readonly robotsToken: string;
  private readonly feeds: FeedReader;

  constructor(
    private readonly config: CrawlConfig,
    private readonly warc: WarcWriter,
    private readonly payloads: PayloadIndex,
    private readonly metrics: Metrics,
    private readonly emit: ParsedPageSink,
  ) {
    this.robotsToken = productToken(config.userAgent);
    this.feeds = new FeedReader(config, metrics);
  }

  archive(page: FetchedPage, timestamp: number): void {
    const m = this.metrics;
    const dedupable = isDedupable(page);
    // the fetcher computed the digest to key the record by it; records from before it did have none
    const digest = dedupable ? (page.payloadDigest ?? sha1Digest(page.body)) : null;
    // a payload archived before becomes a revisit record, not a second copy of the bytes
    const first = digest !== null ? this.payloads.firstRecord(digest) : undefined;
    const notModified = isNotModified(page);
    const { location, payloadDigest } = notModified
      ? this.archiveNotModified(page)
      : first !== undefined
        ? this.archiveRevisit(page, digest!, first)
        : this.archiveFetch(page, digest);
    m.inc(M.warcArchived, 1, page.kind);
    // robots.txt is read by the frontier, and a lease dropped unfetched says nothing about its URL
    if (page.kind === 'ROBOTS' || page.errorCode === 'CS_LEASE_EXPIRED') return;
    if (!isFinalOutcome(page.status, page.errorCode, page.attempt, this.config.maxAttempts)) {
      m.inc(M.parserTransientOutcomes);
      return;
    }

    const contentType = header(page, 'content-type');
    const outlinks: Link[] = [];
    let canonicalUrl: string | null = null;
    let errorCode: CrawlErrorCode | null = page.errorCode;
    let simhash: Buffer | undefined = first?.simhash
      ? Buffer.from(first.simhash, 'hex')
      : notModified && page.previousSimhash
        ? page.previousSimhash
        : undefined;
    const headerRobots = xRobotsTag(headers(page, 'x-robots-tag'), this.robotsToken);
    // a copy is not parsed again: what its body says is what the first record's body said
    let charset = first?.charset;
    let lang = first?.lang;
    let metaNoindex = first?.metaNoindex ?? false;
    if (first !== undefined || notModified) {
      // an alias of a payload already parsed, or a 304: nothing to extract, its links are not followed again
    } else if (page.kind === 'SITEMAP' || page.kind === 'FEED') {
      if (page.status >= 200 && page.status < 300 && page.errorCode !== 'CS_BOMB') {
        const read = this.feeds.read(page, contentType);
        if (read.errorCode !== null) errorCode = read.errorCode;
        outlinks.push(...read.links);
      }
    } else if (
      // a bomb (flagged by the fetcher) is archived as received but never inflated here
      page.status >= 200 &&
      page.status < 300 &&
      page.errorCode !== 'CS_BOMB' &&
      isHtml(contentType, page.body)
    ) {
      const decoded = decodeBody(page.body, header(page, 'content-encoding') ?? undefined, this.config.maxDecodedBytes);
      if (decoded.errorCode) {
        errorCode = decoded.errorCode;
        m.inc(M.parserErrors, 1, decoded.errorCode);
      } else {
        const sniffed = sniffCharset(decoded.body, contentType);
        const extracted = extractLinks(decodeHtml(decoded.body, sniffed), page.url, {
          maxLinks: this.config.maxOutlinksPerPage,
          encoding: sniffed.encoding,
          robotsToken: this.robotsToken,
        });
        canonicalUrl = extracted.canonical ?? null;
        simhash = simhash64(extracted.text);
        charset = sniffed.encoding;
        lang = extracted.lang;
        metaNoindex = extracted.noindex;
        if (!extracted.nofollow && !headerRobots.nofollow) {
          for (const l of extracted.links)
            if (!l.nofollow && l.kind !== 'canonical')
              outlinks.push({ url: l.url, depth: page.depth + 1, redirectHops: 0 });
        }
        // the feeds a page announces are read for their items (and revisited in the feed lane)
        if (this.config.sitemaps)
          for (const url of extracted.feeds ?? [])
            outlinks.push({ url, depth: page.depth + 1, redirectHops: 0, kind: 'FEED', lastmod: null });
        m.inc(M.linksExtracted, outlinks.length);
      }
    } else if (page.status >= 300 && page.status < 400 && page.redirectTarget) {
      const target = normalizeUrl(page.redirectTarget, page.url);
      // a redirect keeps the depth of the page that linked here and counts one more hop
      if (target.ok) outlinks.push({ url: target.url, depth: page.depth, redirectHops: page.redirectHops + 1 });
    }

    let role: PayloadRole = 'NONE';
    if (first !== undefined) {
      role = 'COPY';
    } else if (digest !== null) {
      role = 'FIRST';
      const entry: DigestEntry = {
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
      this.payloads.recordFirst(digest, entry);
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
      contentLength: page.body.length,
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
    };
    // a copy is decided at the site of its payload's first record, where that record's verdict lives
    const key = first !== undefined ? (first.site ?? siteOf(first.url)) : page.site;
    this.emit(key, parsed, timestamp);
  }

  /** An exact copy: a revisit record (identical-payload-digest) referring to the first record of the payload. */
  private archiveRevisit(page: FetchedPage, payloadDigest: string, first: DigestEntry): Archived {
    const location = this.warc.writeRevisit({
      targetUri: page.url,
      date: new Date(page.fetchedAt),
      refersToUri: first.url,
      refersToDate: new Date(first.fetchedAt),
      refersToRecordId: first.recordId,
      payloadDigest,
      profile: 'identical-payload-digest',
      statusLine: statusLine(page),
      responseHeaders: page.headers.map((h) => [h.name, h.value] as [string, string]),
    });
    return { location, payloadDigest };
  }

  /**
   * A revisit answered 304 to its validators: a revisit record (server-not-modified) referring
   * to the last visit; the payload digest is that visit's.
   */
  private archiveNotModified(page: FetchedPage): Archived {
    const payloadDigest = page.previousDigest ?? null;
    const location = this.warc.writeRevisit({
      targetUri: page.url,
      date: new Date(page.fetchedAt),
      refersToUri: page.url,
      refersToDate: new Date(page.previousFetchTime ?? page.fetchedAt),
      ...(payloadDigest !== null ? { payloadDigest } : {}),
      profile: 'server-not-modified',
      statusLine: statusLine(page),
      responseHeaders: page.headers.map((h) => [h.name, h.value] as [string, string]),
    });
    return { location, payloadDigest };
  }

  /** Every fetch is archived: request + response when a response came, a metadata record otherwise. */
  private archiveFetch(page: FetchedPage, payloadDigest: string | null): Archived {
    const date = new Date(page.fetchedAt);
    if (page.status > 0) {
      const written = this.warc.writeRequestResponse({
        targetUri: page.url,
        date,
        ...(page.remoteAddress ? { ip: page.remoteAddress } : {}),
        requestHeaders: page.requestHead,
        statusLine: statusLine(page),
        responseHeaders: page.headers.map((h) => [h.name, h.value] as [string, string]),
        payload: page.body,
        ...(payloadDigest !== null ? { payloadDigest } : {}),
        ...(page.truncated ? { truncated: 'length' as const } : {}),
      });
      return { location: written.response, payloadDigest: written.payloadDigest };
    }
    const location = this.warc.writeMetadata({
      targetUri: page.url,
      date,
      fields: {
        'fetch-error-code': page.errorCode ?? 'unknown',
        'fetch-error': page.errorMessage ?? '',
        'lease-id': page.leaseId,
      },
    });
    return { location, payloadDigest: null };
  }
}

/** A fetch's WARC record (the response, revisit or metadata record) and its payload digest, when a response came. */
interface Archived {
  location: WarcLocation;
  payloadDigest: string | null;
}

function statusLine(page: FetchedPage): string {
  return `HTTP/${page.httpVersion ?? '1.1'} ${page.status} ${STATUS_CODES[page.status] ?? ''}`.trimEnd();
}

/** A response header's value by case-insensitive name; the last one when it is repeated. */
function header(page: FetchedPage, lowerName: string): string | null {
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

/** A revisit the server answered 304 Not Modified (a first visit sends no validators, so it cannot get one). */
function isNotModified(page: FetchedPage): boolean {
  return page.status === 304 && (page.visit ?? 0) > 0 && page.errorCode === null;
}

function isHtml(contentType: string | null, body: Buffer): boolean {
  if (contentType === null) {
    // a UTF-8 byte order mark may come before the markup
    const start = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
    return body.subarray(start, 512).toString('latin1').trimStart().startsWith('<');
  }
  return /^\s*(text\/html|application\/xhtml\+xml)/i.test(contentType);
}
