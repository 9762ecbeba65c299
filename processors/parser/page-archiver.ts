import { M } from '../../core/metric-catalogue.js';
import { STATUS_CODES } from 'node:http';
import type { Metrics } from '../../core/metrics.js';
import type { FetchedPage, ParsedPage } from '../../schemas/types.js';
import { productToken, type CrawlConfig } from '../common/crawl-config.js';
import { type DigestEntry, type PayloadIndex } from './dedupe.js';
import { FeedReader } from './feed-reader.js';
import { dedupDigest, derivePage } from './derive-page.js';
import { fetchFacts } from './warc-facts.js';
import type { HtmlAnalysis } from './html-analysis.js';
import type { WarcLocation, WarcWriter } from './warc-writer.js';

/** Where the archiver's output goes: a parsed page, keyed for the site-keyed half (see ParsedPage). */
export type ParsedPageSink = (key: string, page: ParsedPage, timestamp: number) => void;

/**
 * The payload-keyed half of the parser: it reads `fetched`, which is keyed by payload digest, so
 * every copy of a payload arrives in the partition that archived the first one, from any site.
 *
 * Every fetch but one of a refused type (CS_REFUSED_TYPE, recorded only) is archived — request + response, or a metadata record when no response came
 * (incl. leases dropped as CS_LEASE_EXPIRED) — with the fetch facts (warc-facts.ts) a reparse
 * needs to derive the page again: after a response or revisit in a metadata record of their own. A 2xx page body whose payload digest was archived
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

  /**
   * `analysis`: the page body's HTML analysis when it was made beforehand (see DeriveInput);
   * `deflated`: its payload deflated beforehand for the response record (`deflatePayload` at the
   * WARC writer's level), used when one is written.
   */
  archive(page: FetchedPage, timestamp: number, analysis?: HtmlAnalysis, deflated?: Buffer): void {
    const m = this.metrics;
    const digest = dedupDigest(page);
    // a payload archived before becomes a revisit record, not a second copy of the bytes
    const first = digest !== null ? this.payloads.firstRecord(digest) : undefined;
    const notModified = isNotModified(page);
    // a type the crawl refuses is recorded (page record, CS_REFUSED_TYPE) but not archived: its body was never read
    const refused = page.errorCode === 'CS_REFUSED_TYPE';
    const { location, payloadDigest } = refused
      ? { location: null, payloadDigest: null }
      : notModified
        ? this.archiveNotModified(page)
        : first !== undefined
          ? this.archiveRevisit(page, digest!, first)
          : this.archiveFetch(page, digest, deflated);
    if (!refused) m.inc(M.warcArchived, 1, page.kind);
    const derived = derivePage(
      { page, location, payloadDigest, dedupDigest: digest, first, notModified, ...(analysis ? { analysis } : {}) },
      { config: this.config, robotsToken: this.robotsToken, feeds: this.feeds, metrics: m },
    );
    if (derived === undefined) return;
    if (derived.firstEntry !== undefined) this.payloads.recordFirst(digest!, derived.firstEntry);
    this.emit(derived.key, derived.parsed, timestamp);
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
      metadata: fetchFacts(page),
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
      metadata: fetchFacts(page),
    });
    return { location, payloadDigest };
  }

  /** Every fetch is archived: request + response when a response came, a metadata record otherwise. */
  private archiveFetch(page: FetchedPage, payloadDigest: string | null, deflated: Buffer | undefined): Archived {
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
        ...(deflated !== undefined ? { deflatedPayload: deflated } : {}),
        ...(page.truncated ? { truncated: 'length' as const } : {}),
        metadata: fetchFacts(page),
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
        ...fetchFacts(page),
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

/** A revisit the server answered 304 Not Modified (a first visit sends no validators, so it cannot get one). */
export function isNotModified(page: FetchedPage): boolean {
  return page.status === 304 && (page.visit ?? 0) > 0 && page.errorCode === null;
}
