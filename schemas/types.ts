/** TypeScript shapes of the Avro records in schemas/*.avsc; keep the two in step. */

import type { CrawlErrorCode } from '../core/errors.js';

/** PAGE: a page; ROBOTS: an origin's robots.txt; SITEMAP, FEED: read for the URLs they list. */
export type FetchKind = 'PAGE' | 'ROBOTS' | 'SITEMAP' | 'FEED';

export interface Link {
  url: string;
  depth: number;
  redirectHops: number;
  /** Added later, default PAGE. */
  kind?: FetchKind;
  /** From a sitemap or feed: when it says the URL last changed (epoch ms). Added later, default null. */
  lastmod?: number | null;
}

export interface LinkBatch {
  site: string;
  sourceUrl: string | null;
  discoveredAt: number;
  links: Link[];
  /** Read from a sitemap or feed. Added later, default false. */
  fromFeed?: boolean;
  /** `fingerprint64` of each link's URL, 8 bytes each in links order; null or absent: not computed. */
  fingerprints?: Buffer | null;
}

export interface FetchRequest {
  leaseId: string;
  ownerEpoch: number;
  url: string;
  host: string;
  site: string;
  kind: FetchKind;
  depth: number;
  redirectHops: number;
  attempt: number;
  issuedAt: number;
  notBefore: number;
  notAfter: number;
  ifNoneMatch: string | null;
  ifModifiedSince: string | null;
  /** Revisit fields, added later with defaults (0, null, 0, null, null): what the last visit found. */
  visit?: number;
  previousFetchTime?: number | null;
  previousStatus?: number;
  previousDigest?: string | null;
  previousSimhash?: Buffer | null;
}

export interface FetchResult {
  leaseId: string;
  ownerEpoch: number;
  url: string;
  host: string;
  site: string;
  kind: FetchKind;
  status: number;
  startedAt: number;
  durationMs: number;
  errorCode: CrawlErrorCode | null;
  errorMessage: string | null;
  retryAfterMs: number | null;
  redirectTarget: string | null;
  robotsBody: string | null;
  remoteAddress: string | null;
}

export interface Header {
  name: string;
  value: string;
}

export interface FetchedPage {
  leaseId: string;
  url: string;
  host: string;
  site: string;
  depth: number;
  redirectHops: number;
  attempt: number;
  fetchedAt: number;
  durationMs: number;
  status: number;
  httpVersion: string | null;
  requestHead: string;
  headers: Header[];
  body: Buffer;
  truncated: boolean;
  remoteAddress: string | null;
  errorCode: CrawlErrorCode | null;
  errorMessage: string | null;
  redirectTarget: string | null;
  /** Added later with default PAGE: records written before it read as PAGE. */
  kind: FetchKind;
  /**
   * `sha1:BASE32` of `body` when the page takes part in duplicate detection (a 2xx PAGE with a
   * body and no error), which is then also the record's key. Added later with default null.
   */
  payloadDigest?: string | null;
  /** Revisit fields, added later with defaults (0, null, 0, null, null): what the last visit found. */
  visit?: number;
  previousFetchTime?: number | null;
  previousStatus?: number;
  previousDigest?: string | null;
  previousSimhash?: Buffer | null;
}

/** How a page's payload relates to the rest of the crawl: see schemas/parsed-page.avsc. */
export type PayloadRole = 'NONE' | 'FIRST' | 'COPY';

export interface ParsedPage {
  url: string;
  site: string;
  host: string;
  depth: number;
  fetchTime: number;
  status: number;
  contentType: string | null;
  contentLength: number;
  payloadDigest: string | null;
  simhash: Buffer | null;
  canonicalUrl: string | null;
  errorCode: CrawlErrorCode | null;
  redirectTarget: string | null;
  warcFile: string | null;
  warcOffset: number | null;
  warcLength: number | null;
  outlinks: Link[];
  payloadRole: PayloadRole;
  copyOf: string | null;
  duplicateOf: string | null;
  /** As in PageRecord; added later with defaults (null, null, false). */
  charset: string | null;
  language: string | null;
  noindex: boolean;
  /** Freshness fields, added later with defaults (PAGE, 0, false, false, null, null, null); see schemas/page-record.avsc. */
  kind: FetchKind;
  visit: number;
  changed: boolean;
  notModified: boolean;
  previousFetchTime: number | null;
  etag: string | null;
  lastModified: string | null;
  /** An HTML page's content for `page-content`; null when the body was not parsed as HTML. Added later, default null. */
  content?: PageContent | null;
}

/** One outlink of a page as `page-content` carries it; see schemas/page-content.avsc. */
export interface ContentLink {
  url: string;
  anchor: string | null;
  rel: string | null;
  /** LinkKind: a, area, frame, iframe, refresh, canonical. */
  kind: string;
  /** Sent to the frontier as a link to crawl (not nofollow, not canonical, not a duplicate's). */
  followed: boolean;
}

export interface ContentHeader {
  name: string;
  value: string;
}

/** What an HTML page says, for consumers (topic `page-content`, keyed by site); see schemas/page-content.avsc. */
export interface PageContent {
  url: string;
  site: string;
  fetchTime: number;
  visit: number;
  status: number;
  title: string | null;
  description: string | null;
  /** Main text, at most `contentTextMaxBytes` bytes of UTF-8. */
  text: string;
  textTruncated: boolean;
  outlinks: ContentLink[];
  outlinksTruncated: boolean;
  headers: ContentHeader[];
  headersTruncated: boolean;
  duplicateOf: string | null;
}

export interface PageRecord {
  url: string;
  canonicalUrl: string | null;
  site: string;
  host: string;
  fetchTime: number;
  status: number;
  contentType: string | null;
  contentLength: number;
  payloadDigest: string | null;
  simhash: Buffer | null;
  duplicateOf: string | null;
  warcFile: string | null;
  warcOffset: number | null;
  warcLength: number | null;
  outlinkCount: number;
  depth: number;
  errorCode: CrawlErrorCode | null;
  redirectTarget: string | null;
  /** WHATWG name of the encoding the HTML body was decoded in; null when no HTML body was parsed. Added later, default null. */
  charset: string | null;
  /** `<html lang>`, else the first language of Content-Language; null if neither. Added later, default null. */
  language: string | null;
  /** A noindex/none robots directive (meta or X-Robots-Tag) applies to us; the page is archived all the same. Added later, default false. */
  noindex: boolean;
  /** Freshness fields, added later with defaults (PAGE, 0, false, false, null, null, null); see schemas/page-record.avsc. */
  kind: FetchKind;
  visit: number;
  changed: boolean;
  notModified: boolean;
  previousFetchTime: number | null;
  etag: string | null;
  lastModified: string | null;
  /** The parser version that derived the record (PARSER_VERSION); 0 in records written before it was stamped. Added later, default 0. */
  parserVersion: number;
  /** Written by `replay reparse` from the archived WARC record, not by the live crawl. Added later, default false. */
  reparsed: boolean;
  /** `s3://BUCKET/PREFIX/<warcFile>` when WARC files are uploaded (--warc-store); null when they stay local. Added later, default null. */
  warcUri: string | null;
}

export type ControlAction = 'BLOCK' | 'SLOW' | 'PAUSE' | 'RESUME' | 'SET';

export interface ControlCommand {
  site: string;
  action: ControlAction;
  minGapMs: number | null;
  issuedAt: number;
  issuedBy: string | null;
  /** SET: live overrides by name (min-delay, budget, max-depth); 'default' removes one. Added later, default null. */
  settings?: Record<string, string> | null;
}

export type RobotsState = 'UNKNOWN' | 'READY' | 'ALLOW_ALL' | 'UNAVAILABLE';

export interface Lease {
  leaseId: string;
  url: string;
  kind: string;
  depth: number;
  redirectHops: number;
  attempts: number;
  issuedAt: number;
  expiresAt: number;
  fromQueue: boolean;
}

export interface HostState {
  host: string;
  origin: string;
  site: string;
  headSeq: number;
  tailSeq: number;
  nextEligibleAt: number;
  gapMs: number;
  backoffMs: number;
  robotsState: RobotsState;
  robotsBody: string | null;
  robotsFetchedAt: number;
  robotsFailures: number;
  crawlDelayMs: number;
  lease: Lease | null;
  fetches: number;
  ip: string | null;
  connErrors: number;
  lastBackoffAt: number;
  parkedUntil: number;
  /** robots.txt per origin of the host (RFC 9309); see schemas/host-state.avsc. */
  robots: OriginRobots[];
  robotsHops: RobotsHop[];
  /** The lease's earlier visits of its URL (0: a first visit). Added later, default 0. */
  leaseVisit?: number;
}

/** One origin's robots.txt as the frontier holds it. */
export interface OriginRobots {
  origin: string;
  state: RobotsState;
  body: string | null;
  fetchedAt: number;
  failures: number;
  crawlDelayMs: number;
  sitemaps: string[];
}

/** A redirect of an origin's robots.txt still to follow (see schemas/host-state.avsc). */
export interface RobotsHop {
  origin: string;
  url: string;
  chain: string[];
}

export interface QueueEntry {
  url: string;
  depth: number;
  redirectHops: number;
  attempts: number;
  discoveredAt: number;
  /** Queue format 3 on; PAGE and 0 in older entries. */
  kind?: FetchKind;
  /** Earlier visits: 0 for a URL never fetched. */
  visit?: number;
}

export interface SiteControl {
  blocked: boolean;
  paused: boolean;
  minGapMs: number;
  issuedAt: number;
}

/** A site's live overrides (`control set`); null fields are not overridden. */
export interface SiteSettings {
  minDelayMs: number | null;
  budget: number | null;
  maxDepth: number | null;
  issuedAt: number;
}

export interface SiteState {
  site: string;
  admitted: number;
  linkingSites: string[];
  seeded: boolean;
  recentPages: number;
  recentDuplicates: number;
  dupCut: boolean;
  control: SiteControl | null;
  templates: TemplateCount[];
  /** Live overrides from `control set`. Added later, default null. */
  overrides?: SiteSettings | null;
  /** Epoch ms the current budget cycle began (0: before cycles). Added later, default 0. */
  cycleStartedAt: number;
  /** Per host, its pages by change-rate bucket (refetch-policy.ts). Added later, default []. */
  hostRates?: HostRates[];
  /** The site's decayed revisit evidence (change-rate.ts), the prior of its new pages. Added later, default 0. */
  rateVisits?: number;
  rateChanges?: number;
  rateExposureMs?: number;
  /** Per-template evidence, the busiest templates only. Added later, default []. */
  templateRates?: TemplateRate[];
}

/** A host's pages by change-rate bucket (SiteState.hostRates). */
export interface HostRates {
  host: string;
  counts: number[];
}

/** A URL template's decayed revisit evidence (SiteState.templateRates). */
export interface TemplateRate {
  key: number;
  visits: number;
  changes: number;
  exposureMs: number;
}

export interface TemplateCount {
  key: number;
  internal: number;
  external: number;
}

export interface FrontEntry {
  url: string;
  host: string;
  origin: string;
  site: string;
  depth: number;
  redirectHops: number;
  discoveredAt: number;
  /** Queue format 3 on; PAGE and 0 in older entries. */
  kind?: FetchKind;
  /** Earlier visits: 0 for a URL never fetched. */
  visit?: number;
}

/** What the frontier knows of one fetched URL and when it is due again (schemas/url-history.avsc). */
export interface UrlHistory {
  url: string;
  kind: FetchKind;
  depth: number;
  lastFetch: number;
  status: number;
  etag: string | null;
  lastModified: string | null;
  digest: string | null;
  simhash: Buffer | null;
  intervalMs: number;
  nextDue: number;
  visits: number;
  changes: number;
  queuedAt: number;
  /** Decayed revisit evidence (change-rate.ts). Added later, default 0. */
  rateVisits?: number;
  rateChanges?: number;
  rateExposureMs?: number;
  /** Its bucket in the site's rate histogram; -1: none. Added later, default -1. */
  rateBucket?: number;
}
