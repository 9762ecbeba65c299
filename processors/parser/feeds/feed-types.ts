import type { CrawlErrorCode } from '../../../core/errors.js';

/** What a body turned out to be. RSS covers RSS 0.9x, 2.0 and RSS 1.0 (`rdf:RDF`). */
export type FeedFormat = 'SITEMAP' | 'SITEMAP_INDEX' | 'TEXT_SITEMAP' | 'RSS' | 'ATOM';

export interface FeedEntry {
  /** Normalized absolute http(s) URL (see `normalizeUrl`). */
  url: string;
  /** Epoch ms of the entry's lastmod / pubDate / updated, null when absent or unparseable (see `parseFeedDate`). */
  lastmod: number | null;
}

/**
 * Where a sitemap's URLs may point: `origin` (`https://a.example`, no path) and a path prefix
 * starting and, to mean a folder, ending with `/` (`/news/`). URLs are compared, normalized, as a
 * string prefix of `origin + pathPrefix`, so another scheme, host or port is out of scope.
 */
export interface FeedScope {
  origin: string;
  pathPrefix: string;
}

/** Codes of `FeedParse.errorCode`, most important first. */
export type FeedErrorCode = Extract<
  CrawlErrorCode,
  'CS_FEED_MALFORMED' | 'CS_FEED_UNKNOWN' | 'CS_FEED_TOO_LARGE' | 'CS_FEED_TOO_MANY_URLS' | 'CS_FEED_BAD_ENTRY'
>;

export interface FeedParse {
  /** Null when the body is not recognisably a sitemap or a feed (errorCode CS_FEED_UNKNOWN). */
  format: FeedFormat | null;
  /**
   * Pages, in document order, duplicates kept: sitemap `<url><loc>`, text sitemap lines, RSS
   * `<item><link>` (else a permalink `<guid>`), Atom `<entry><link rel=alternate|no rel href>`.
   */
  urls: FeedEntry[];
  /** Child sitemaps of a sitemap index (`<sitemap><loc>`), in document order. */
  sitemaps: FeedEntry[];
  /** Well-formed URLs dropped by the scope rule (other origin, scheme, port, or outside the path). Not errors. */
  outOfScope: number;
  /**
   * Problems counted, never thrown: each entry without a usable URL (missing, empty, relative in a
   * sitemap, unparseable, not http(s), too long), plus one for a document that is not a sitemap
   * or feed, not well-formed XML, or corrupt gzip. Hitting a limit is not counted here (see `truncated`).
   */
  errors: number;
  /** The most important problem seen (order of FeedErrorCode), null when none. */
  errorCode: FeedErrorCode | null;
  /**
   * True when reading stopped at a limit: more than `maxUrls` URLs (or child sitemaps) in scope
   * (CS_FEED_TOO_MANY_URLS: the first `maxUrls` are kept), or more than `maxBytes` uncompressed
   * (CS_FEED_TOO_LARGE: the entries whole in the first `maxBytes` are kept), or the fetch cut the
   * body (`bodyTruncated`).
   */
  truncated: boolean;
}

export interface FeedOptions {
  /**
   * Widens (or narrows) the scope of the URLs listed. By default a sitemap covers the folder it is
   * in (sitemaps.org: `http://a/x/sitemap.xml` lists only `http://a/x/…`) and a feed is not
   * scoped; a sitemap named in robots.txt covers that robots.txt's origin, path `/`.
   */
  scope?: FeedScope;
  /** Most URLs, and most child sitemaps, kept: 50,000 (the sitemap protocol's limit) by default. */
  maxUrls?: number;
  /** Most bytes read, after gzip: 50 MB (52,428,800, the protocol's limit) by default. */
  maxBytes?: number;
  /**
   * The fetch stopped at its body cap (CS_TOO_LARGE): the body ends where the document does not.
   * Read as a cut at `maxBytes`: `truncated`, CS_FEED_TOO_LARGE, the last, possibly cut, entry dropped.
   */
  bodyTruncated?: boolean;
}

/** The sitemap protocol's limits (sitemaps.org): URLs per sitemap, bytes uncompressed. */
export const MAX_FEED_URLS = 50_000;
export const MAX_FEED_BYTES = 50 * 1024 * 1024;
