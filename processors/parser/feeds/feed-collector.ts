import { normalizeUrl } from '../../common/normalize.js';
import type { FeedErrorCode, FeedFormat, FeedParse } from './feed-types.js';

const SEVERITY: Record<FeedErrorCode, number> = {
  CS_FEED_MALFORMED: 5,
  CS_FEED_UNKNOWN: 4,
  CS_FEED_TOO_LARGE: 3,
  CS_FEED_TOO_MANY_URLS: 2,
  CS_FEED_BAD_ENTRY: 1,
};

// a URL a sitemap may list is at most 2,048 characters; past this the text is not a URL at all
const MAX_RAW_URL_CHARS = 8_192;

/** Where the URLs of one document may point, as normalized URL prefixes (see FeedScope). */
export interface ResolvedScope {
  /** Prefix of every page URL kept, or null when pages are not scoped (feeds by default). */
  pages: string | null;
  /** Prefixes (`origin/`) of the child sitemaps an index may name: its own origin and the scope's. */
  sitemaps: readonly string[];
}

/**
 * Gathers what the readers find into a FeedParse: normalizes and scopes each URL, counts errors,
 * keeps the most important code, enforces the URL limit. Readers stop when `stopped` is true.
 */
export class FeedCollector {
  readonly result: FeedParse = {
    format: null,
    urls: [],
    sitemaps: [],
    outOfScope: 0,
    errors: 0,
    errorCode: null,
    truncated: false,
  };
  /** True once a limit is hit or the document is unrecognisable: reading further is wasted work. */
  stopped = false;
  private documentFailed = false;
  private pageScope: string | null;

  constructor(
    private readonly scope: ResolvedScope,
    private readonly sitemapScope: string | null,
    private readonly maxUrls: number,
  ) {
    this.pageScope = scope.pages;
  }

  /** Sets the format; a sitemap's pages get the sitemap's folder as scope unless the caller gave one. */
  recognize(format: FeedFormat): void {
    this.result.format = format;
    if ((format === 'SITEMAP' || format === 'TEXT_SITEMAP') && this.pageScope === null) {
      this.pageScope = this.sitemapScope;
    }
  }

  /** The body is not a sitemap or feed: one error, reading stops. */
  unknown(): void {
    this.result.format = null;
    this.documentError('CS_FEED_UNKNOWN');
    this.stopped = true;
  }

  /** The document is broken (not well-formed, corrupt gzip): counted once however often it is reported. */
  documentError(code: 'CS_FEED_UNKNOWN' | 'CS_FEED_MALFORMED'): void {
    if (!this.documentFailed) this.result.errors++;
    this.documentFailed = true;
    this.code(code);
  }

  /** An entry without a usable URL. */
  badEntry(): void {
    this.result.errors++;
    this.code('CS_FEED_BAD_ENTRY');
  }

  /** More than the byte limit: reading stops with what was read. */
  tooLarge(): void {
    this.result.truncated = true;
    this.code('CS_FEED_TOO_LARGE');
  }

  /**
   * A page URL as written. `base` is the URL relative ones resolve against; undefined in a
   * sitemap, where a relative URL is an error.
   */
  addPage(raw: string, lastmod: number | null, base: string | undefined): void {
    this.add(this.result.urls, raw, lastmod, base, this.pageScope === null ? null : [this.pageScope]);
  }

  /** A child sitemap of an index, which must be absolute and on the index's or the scope's origin. */
  addSitemap(raw: string, lastmod: number | null): void {
    this.add(this.result.sitemaps, raw, lastmod, undefined, this.scope.sitemaps);
  }

  private add(
    list: FeedParse['urls'],
    raw: string,
    lastmod: number | null,
    base: string | undefined,
    prefixes: readonly string[] | null,
  ): void {
    if (this.stopped) return;
    const trimmed = raw.trim();
    const n = trimmed === '' || trimmed.length > MAX_RAW_URL_CHARS ? undefined : normalizeUrl(trimmed, base);
    if (n === undefined || !n.ok) {
      this.badEntry();
      return;
    }
    if (prefixes !== null && !prefixes.some((p) => n.url.startsWith(p))) {
      this.result.outOfScope++;
      return;
    }
    if (list.length >= this.maxUrls) {
      this.result.truncated = true;
      this.code('CS_FEED_TOO_MANY_URLS');
      this.stopped = true;
      return;
    }
    list.push({ url: n.url, lastmod });
  }

  private code(code: FeedErrorCode): void {
    const current = this.result.errorCode;
    if (current === null || SEVERITY[code] > SEVERITY[current]) this.result.errorCode = code;
  }
}
