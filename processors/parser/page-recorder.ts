import { M } from '../../core/metric-catalogue.js';
import type { Metrics } from '../../core/metrics.js';
import type { KeyValueStore } from '../../state/state-store.js';
import type { Link, LinkBatch, PageContent, PageRecord, ParsedPage } from '../../schemas/types.js';
import type { SiteDuplicates } from './dedupe.js';
import { fingerprintHex, packedFingerprints } from '../common/fingerprint.js';
import { siteOf } from '../common/normalize.js';
import { PARSER_VERSION } from './parser-version.js';

/** Where the recorder's output goes. */
export interface RecorderSinks {
  pageRecord(record: PageRecord, timestamp: number): void;
  links(batch: LinkBatch, timestamp: number): void;
  /** An HTML page's content, published right after its page record. */
  pageContent(content: PageContent, timestamp: number): void;
  /** A resolved exact copy, back to `parsed-pages` keyed by its own site. */
  parsedPage(key: string, page: ParsedPage, timestamp: number): void;
}

/** Provenance stamped on every page record a recorder publishes. */
export interface RecordStamp {
  /** PARSER_VERSION, unless a test or a reparse under a parser being tried says otherwise. */
  readonly parserVersion: number;
  /** True for records re-derived by `replay reparse` from archived payloads. */
  readonly reparsed: boolean;
}

/** What the live crawl stamps. */
export const LIVE_STAMP: RecordStamp = { parserVersion: PARSER_VERSION, reparsed: false };

/**
 * The site-keyed half of the parser: it reads `parsed-pages`, keyed by site, and publishes each
 * URL's final outcome once — one page record, plus its outlinks grouped per target site unless
 * the page is a copy.
 *
 * - Exact copy (COPY): it first arrives at the site of its payload's first record, which this
 *   partition has already seen (the archiver sent both there, in order). Its original becomes
 *   what that first record is an alias of (itself, or the page it is a near copy of), so
 *   `duplicateOf` never names a copy; it then goes on to its own site's partition.
 * - Near copy: a page with a SimHash within 3 bits of an original of the same site (per-site
 *   index in SIMHASH_STORE). It keeps its response record, but its links are not followed.
 * - A repeated fetch of a URL already recorded (a lease redone after a crash) publishes nothing.
 */
export class PageRecorder {
  constructor(
    private readonly recorded: KeyValueStore<Buffer, Buffer>,
    private readonly duplicates: SiteDuplicates,
    private readonly metrics: Metrics,
    private readonly sinks: RecorderSinks,
    private readonly stamp: RecordStamp = LIVE_STAMP,
    /** The object URI of a WARC file name (--warc-store), or null while files stay local. */
    private readonly warcUriOf: (file: string) => string | null = () => null,
  ) {}

  /** Handles one parsed page; `key` is the record's key, i.e. the site of the partition it was sent to. */
  record(key: string, incoming: ParsedPage, timestamp: number): void {
    const m = this.metrics;
    let page = incoming;
    if (page.payloadRole === 'COPY' && page.duplicateOf === null) {
      const original = this.duplicates.originalOf(page.payloadDigest!) ?? page.copyOf!;
      page = { ...page, duplicateOf: original };
      if (key !== page.site) {
        m.inc(M.parserCopiesForwarded);
        this.sinks.parsedPage(page.site, page, timestamp);
        return;
      }
    }

    // the first record of a payload: whether it is itself a near copy decides what its copies are aliases of
    let near: { original: string; distance: number } | undefined;
    if (page.payloadRole === 'FIRST') {
      if (page.simhash !== null) near = this.duplicates.nearCopy(page.site, page.simhash, page.url);
      this.duplicates.setOriginal(page.payloadDigest!, near?.original ?? page.url);
    }

    const fp = recordedKey(page.url, page.visit ?? 0);
    if (this.recorded.get(fp) !== undefined) {
      m.inc(M.parserRepeatFetches);
      return;
    }
    this.recorded.put(fp, Buffer.alloc(0));

    const copyOf = page.payloadRole === 'COPY' ? page.duplicateOf : near?.original;
    const duplicateOf = copyOf !== undefined && copyOf !== null && copyOf !== page.url ? copyOf : null;
    if (page.payloadRole === 'COPY' || near !== undefined)
      m.inc(M.parserDuplicates, 1, page.payloadRole === 'COPY' ? 'exact' : 'near');
    if (page.payloadRole === 'FIRST' && near === undefined && page.simhash !== null)
      this.duplicates.addOriginal(page.site, page.simhash, page.url);
    // a copy's links are its original's: not followed again
    const outlinks = page.payloadRole === 'COPY' || near !== undefined ? [] : page.outlinks;

    this.sinks.pageRecord(
      {
        url: page.url,
        canonicalUrl: page.canonicalUrl,
        site: page.site,
        host: page.host,
        fetchTime: page.fetchTime,
        status: page.status,
        contentType: page.contentType,
        contentLength: page.contentLength,
        payloadDigest: page.payloadDigest,
        simhash: page.simhash,
        duplicateOf,
        warcFile: page.warcFile,
        warcOffset: page.warcOffset,
        warcLength: page.warcLength,
        outlinkCount: outlinks.length,
        depth: page.depth,
        errorCode: page.errorCode,
        redirectTarget: page.redirectTarget,
        charset: page.charset,
        language: page.language,
        noindex: page.noindex,
        kind: page.kind ?? 'PAGE',
        visit: page.visit ?? 0,
        changed: page.changed ?? false,
        notModified: page.notModified ?? false,
        previousFetchTime: page.previousFetchTime ?? null,
        etag: page.etag ?? null,
        lastModified: page.lastModified ?? null,
        parserVersion: this.stamp.parserVersion,
        reparsed: this.stamp.reparsed,
        warcUri: page.warcFile === null ? null : this.warcUriOf(page.warcFile),
      },
      timestamp,
    );
    if (page.content) {
      if (page.content.textTruncated) m.inc(M.pageContentCut, 1, 'text');
      if (page.content.outlinksTruncated) m.inc(M.pageContentCut, 1, 'outlinks');
      if (page.content.headersTruncated) m.inc(M.pageContentCut, 1, 'headers');
      this.sinks.pageContent(
        contentOf(page.content, duplicateOf, page.payloadRole === 'COPY' || near !== undefined),
        timestamp,
      );
    }
    const fromFeed = page.kind === 'SITEMAP' || page.kind === 'FEED';
    for (const batch of groupBySite(outlinks, page.url, timestamp, fromFeed)) this.sinks.links(batch, timestamp);
    m.inc(M.pageRecords, 1, page.payloadRole === 'COPY' ? 'exact' : near !== undefined ? 'near' : 'original');
  }
}

/** A page's content as published: a copy names its original and follows none of its links. */
function contentOf(content: PageContent, duplicateOf: string | null, copy: boolean): PageContent {
  if (!copy) return content;
  return {
    ...content,
    duplicateOf,
    outlinks: content.outlinks.map((l) => (l.followed ? { ...l, followed: false } : l)),
  };
}

/** Links per batch at most: a sitemap's 50,000 URLs go in many batches, each within the topic's record size. */
export const MAX_BATCH_LINKS = 1_000;

/** The recorded-store key of one visit: the URL's fingerprint, and after it the visit number from the first revisit on. */
function recordedKey(url: string, visit: number): Buffer {
  const fp = Buffer.from(fingerprintHex(url), 'hex');
  if (visit === 0) return fp;
  const key = Buffer.alloc(12);
  fp.copy(key);
  key.writeUInt32BE(visit, 8);
  return key;
}

function groupBySite(links: Link[], sourceUrl: string, timestamp: number, fromFeed: boolean): LinkBatch[] {
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
  // the fingerprints go with the links: the frontier's partitions, the stateful step, need not hash them
  const batches: LinkBatch[] = [];
  for (const [site, list] of bySite)
    for (let i = 0; i < list.length; i += MAX_BATCH_LINKS) {
      const part = list.length <= MAX_BATCH_LINKS ? list : list.slice(i, i + MAX_BATCH_LINKS);
      batches.push({
        site,
        sourceUrl,
        discoveredAt: timestamp,
        links: part,
        fingerprints: packedFingerprints(part.map((l) => l.url)),
        ...(fromFeed ? { fromFeed } : {}),
      });
    }
  return batches;
}
