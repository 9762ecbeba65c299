import { STATUS_CODES } from 'node:http';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import type { KeyValueStore } from '../../state/state-store.js';
import type { FetchedPage, Link, LinkBatch, PageRecord } from '../../schemas/types.js';
import type { CrawlConfig } from '../crawl-config.js';
import { isFinalOutcome } from '../outcome.js';
import { decodeBody } from '../fetcher/decode.js';
import { extractLinks } from './extract-links.js';
import { fingerprint64 } from './fingerprint.js';
import { normalizeUrl, siteOf } from './normalize.js';
import { DIGESTS_STORE, Deduplicator, SIMHASH_STORE, type CopyVerdict } from './dedupe.js';
import { simhash64 } from './simhash.js';
import { sha1Digest } from './warc-records.js';
import { WARC_STORE, type WarcStore } from './warc-store.js';
import type { WarcLocation } from './warc-writer.js';

export const RECORDED_STORE = 'parser-recorded';
export const PAGE_RECORDS_SINK = 'page-records-sink';
export const LINKS_SINK = 'links-sink';

/**
 * Turns each fetch into WARC records and, for a URL's final outcome, exactly one page record plus
 * its outlinks grouped per target site. A repeated fetch of a URL already recorded (a lease redone
 * after a crash) is archived but publishes nothing. Every fetched record is archived — request +
 * response, or a metadata record when no response came (incl. leases dropped as CS_LEASE_EXPIRED) —
 * but only PAGE kinds publish: ROBOTS fetches and expired leases are archive-only.
 *
 * Duplicates (per partition, see docs/SCHEMAS.md): a final 2xx body whose payload digest was
 * archived before is written as a WARC revisit (identical-payload-digest) instead of a response;
 * an HTML page whose SimHash is within 3 bits of an indexed original keeps its response record.
 * Either way the page record names the original in `duplicateOf` and the copy's links are not
 * published.
 */
export class ParserProcessor implements Processor<string, FetchedPage, string, PageRecord | LinkBatch> {
  private ctx!: ProcessorContext<string, PageRecord | LinkBatch>;
  private warc!: WarcStore;
  private recorded!: KeyValueStore<Buffer, Buffer>;
  private dedupe!: Deduplicator;

  constructor(private readonly config: CrawlConfig) {}

  init(context: ProcessorContext<string, PageRecord | LinkBatch>): void {
    this.ctx = context;
    this.warc = context.getStateStore(WARC_STORE);
    this.recorded = context.getStateStore(RECORDED_STORE);
    this.dedupe = new Deduplicator(context.getStateStore(DIGESTS_STORE), context.getStateStore(SIMHASH_STORE));
  }

  process(record: StreamRecord<string, FetchedPage>): void {
    const page = record.value;
    const m = this.ctx.metrics;
    const dedupable = this.isDedupable(page);
    const digest = dedupable ? sha1Digest(page.body) : null;
    // a payload archived before becomes a revisit record, not a second copy of the bytes
    const exact = digest !== null ? this.dedupe.exactCopy(digest) : undefined;
    const { location, payloadDigest } = exact ? this.archiveRevisit(page, digest!, exact) : this.archive(page);
    m.inc('warc_archived', 1, page.kind);
    // robots.txt is read by the frontier, and a lease dropped unfetched says nothing about its URL
    if (page.kind === 'ROBOTS' || page.errorCode === 'CS_LEASE_EXPIRED') return;
    if (!isFinalOutcome(page.status, page.errorCode, page.attempt, this.config.maxAttempts)) {
      m.inc('parser_transient_outcomes');
      return;
    }
    const fp = Buffer.allocUnsafe(8);
    fp.writeBigUInt64BE(fingerprint64(page.url));
    if (this.recorded.get(fp) !== undefined) {
      m.inc('parser_repeat_fetches');
      return;
    }
    this.recorded.put(fp, Buffer.alloc(0));

    const headers = new Map(page.headers.map((h) => [h.name.toLowerCase(), h.value]));
    const contentType = headers.get('content-type') ?? null;
    const outlinks: Link[] = [];
    let canonicalUrl: string | null = null;
    let errorCode = page.errorCode;
    let simhash: Buffer | undefined = exact?.of.simhash ? Buffer.from(exact.of.simhash, 'hex') : undefined;
    let near: CopyVerdict | undefined;
    if (exact) {
      // an alias of a page already parsed: nothing to extract, its links are not followed again
    } else if (
      // a bomb (flagged by the fetcher) is archived as received but never inflated here
      page.status >= 200 && page.status < 300 && page.errorCode !== 'CS_BOMB' && isHtml(contentType, page.body)
    ) {
      const decoded = decodeBody(page.body, headers.get('content-encoding'), this.config.maxDecodedBytes);
      if (decoded.errorCode) {
        errorCode = decoded.errorCode;
        m.inc('parser_errors', 1, decoded.errorCode);
      } else {
        const extracted = extractLinks(decoded.body.toString('utf8'), page.url, { maxLinks: this.config.maxOutlinksPerPage });
        canonicalUrl = extracted.canonical ?? null;
        simhash = simhash64(extracted.text);
        if (dedupable && simhash !== undefined) near = this.dedupe.nearCopy(simhash, page.url);
        // a near-duplicate keeps its response record, but its links are the original's: not followed again
        if (!extracted.nofollow && near === undefined) {
          for (const l of extracted.links) if (!l.nofollow && l.kind !== 'canonical') outlinks.push({ url: l.url, depth: page.depth + 1, redirectHops: 0 });
        }
        m.inc('links_extracted', outlinks.length);
      }
    } else if (page.status >= 300 && page.status < 400 && page.redirectTarget) {
      const target = normalizeUrl(page.redirectTarget, page.url);
      // a redirect keeps the depth of the page that linked here and counts one more hop
      if (target.ok) outlinks.push({ url: target.url, depth: page.depth, redirectHops: page.redirectHops + 1 });
    }

    const copy = exact ?? near;
    const duplicateOf = copy !== undefined && copy.original !== page.url ? copy.original : null;
    if (copy !== undefined) m.inc('parser_duplicates', 1, copy.kind);
    if (dedupable && !exact && digest !== null && location !== undefined) {
      const entry = { url: page.url, fetchedAt: page.fetchedAt, recordId: location.recordId, duplicateOf, simhash: simhash?.toString('hex') ?? null };
      this.dedupe.record(digest, entry, simhash);
    }

    const pageRecord: PageRecord = {
      url: page.url, canonicalUrl, site: page.site, host: page.host, fetchTime: page.fetchedAt, status: page.status,
      contentType, contentLength: page.body.length, payloadDigest, simhash: simhash ?? null, duplicateOf,
      warcFile: location?.file ?? null, warcOffset: location?.offset ?? null, warcLength: location?.length ?? null,
      outlinkCount: outlinks.length, depth: page.depth, errorCode, redirectTarget: page.redirectTarget,
    };
    this.ctx.forward({ key: page.site, value: pageRecord, timestamp: record.timestamp }, PAGE_RECORDS_SINK);
    for (const batch of groupBySite(outlinks, page.url, record.timestamp)) {
      this.ctx.forward({ key: batch.site, value: batch, timestamp: record.timestamp }, LINKS_SINK);
    }
    m.inc('page_records');
  }

  /** Final 2xx page responses with a body take part in duplicate detection; robots.txt never does. */
  private isDedupable(page: FetchedPage): boolean {
    if (page.kind === 'ROBOTS' || page.status < 200 || page.status >= 300 || page.errorCode !== null || page.body.length === 0) return false;
    return isFinalOutcome(page.status, page.errorCode, page.attempt, this.config.maxAttempts);
  }

  /** An exact copy: a revisit record (identical-payload-digest) referring to the first record of the payload. */
  private archiveRevisit(page: FetchedPage, payloadDigest: string, copy: CopyVerdict & { kind: 'exact' }): { location: WarcLocation; payloadDigest: string } {
    const location = this.warc.writer.writeRevisit({
      targetUri: page.url, date: new Date(page.fetchedAt),
      refersToUri: copy.of.url, refersToDate: new Date(copy.of.fetchedAt), refersToRecordId: copy.of.recordId,
      payloadDigest, profile: 'identical-payload-digest',
      statusLine: statusLine(page),
      responseHeaders: page.headers.map((h) => [h.name, h.value] as [string, string]),
    });
    return { location, payloadDigest };
  }

  /** Every fetch is archived: request + response when a response came, a metadata record otherwise. */
  private archive(page: FetchedPage): { location: WarcLocation | undefined; payloadDigest: string | null } {
    const date = new Date(page.fetchedAt);
    if (page.status > 0) {
      const written = this.warc.writer.writeRequestResponse({
        targetUri: page.url, date, ...(page.remoteAddress ? { ip: page.remoteAddress } : {}),
        requestHeaders: page.requestHead,
        statusLine: `HTTP/${page.httpVersion ?? '1.1'} ${page.status} ${STATUS_CODES[page.status] ?? ''}`.trimEnd(),
        responseHeaders: page.headers.map((h) => [h.name, h.value] as [string, string]),
        payload: page.body,
        ...(page.truncated ? { truncated: 'length' as const } : {}),
      });
      return { location: written.response, payloadDigest: written.payloadDigest };
    }
    const location = this.warc.writer.writeMetadata({
      targetUri: page.url, date,
      fields: { 'fetch-error-code': page.errorCode ?? 'unknown', 'fetch-error': page.errorMessage ?? '', 'lease-id': page.leaseId },
    });
    return { location, payloadDigest: null };
  }
}

function statusLine(page: FetchedPage): string {
  return `HTTP/${page.httpVersion ?? '1.1'} ${page.status} ${STATUS_CODES[page.status] ?? ''}`.trimEnd();
}

function isHtml(contentType: string | null, body: Buffer): boolean {
  if (contentType === null) return body.subarray(0, 512).toString('latin1').trimStart().startsWith('<');
  return /^\s*(text\/html|application\/xhtml\+xml)/i.test(contentType);
}

function groupBySite(links: Link[], sourceUrl: string, timestamp: number): LinkBatch[] {
  const bySite = new Map<string, Link[]>();
  for (const link of links) {
    let site: string;
    try {
      site = siteOf(link.url);
    } catch {
      continue;
    }
    let list = bySite.get(site);
    if (!list) bySite.set(site, (list = []));
    list.push(link);
  }
  return [...bySite].map(([site, list]) => ({ site, sourceUrl, discoveredAt: timestamp, links: list }));
}
