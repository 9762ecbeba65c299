import { M } from '../../core/metric-catalogue.js';
import type { Metrics } from '../../core/metrics.js';
import type { CrawlErrorCode } from '../../core/errors.js';
import type { FetchedPage, Link } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { decodeBody } from '../common/decode.js';
import { MAX_URL_LENGTH, normalizeUrl } from '../common/normalize.js';
import { parseFeed } from './feeds/index.js';

/** A sitemap's URLs go in one parsed-page record: at most this many bytes of them (the topic's size). */
export const FEED_LINK_BYTES = 12 * 1024 * 1024;

/** What one sitemap or feed fetch yields. */
export interface FeedRead {
  /** Pages (kind PAGE, with lastmod when given) and child sitemaps (kind SITEMAP), normalized. */
  readonly links: Link[];
  /** Set when the document was malformed or over a limit; its good part is still in `links`. */
  readonly errorCode: CrawlErrorCode | null;
}

/**
 * Reads a fetched sitemap or feed (sitemaps.org 0.9, text sitemaps, RSS 2.0, Atom; gzip) into
 * links. A sitemap covers its own origin (it was named in that origin's robots.txt, or by a
 * sitemap index there); a feed's items may point anywhere. Malformed input is counted in
 * `feed_errors{code}` and never throws.
 */
export class FeedReader {
  constructor(
    private readonly config: CrawlConfig,
    private readonly metrics: Metrics,
  ) {}

  read(page: FetchedPage, contentType: string | null): FeedRead {
    const encoding = page.headers.find((h) => h.name.toLowerCase() === 'content-encoding')?.value;
    const decoded = decodeBody(page.body, encoding, this.config.maxDecodedBytes);
    if (decoded.errorCode) {
      this.metrics.inc(M.feedErrors, 1, decoded.errorCode);
      return { links: [], errorCode: decoded.errorCode };
    }
    const origin = new URL(page.url).origin;
    const parsed = parseFeed(decoded.body, contentType, page.url, {
      ...(page.kind === 'SITEMAP' ? { scope: { origin, pathPrefix: '/' } } : {}),
      bodyTruncated: page.truncated,
    });
    const links: Link[] = [];
    let bytes = 0;
    let cut = false;
    // a URL that does not normalize is skipped; one past FEED_LINK_BYTES ends the list
    const add = (url: string, kind: Link['kind'], lastmod: number | null): void => {
      const n = normalizeUrl(url, page.url);
      if (!n.ok || n.url.length > MAX_URL_LENGTH) return;
      if (bytes + n.url.length + 16 > FEED_LINK_BYTES) {
        cut = true;
        return;
      }
      bytes += n.url.length + 16;
      links.push({ url: n.url, depth: page.depth + 1, redirectHops: 0, kind, lastmod });
    };
    for (const s of parsed.sitemaps) if (!cut) add(s.url, 'SITEMAP', s.lastmod);
    for (const u of parsed.urls) if (!cut) add(u.url, 'PAGE', u.lastmod);
    if (parsed.format !== null)
      this.metrics.inc(M.feedUrls, parsed.urls.length + parsed.sitemaps.length, parsed.format);
    // a sitemap's URLs past what one record holds count as over the size limit
    const errorCode: CrawlErrorCode | null = parsed.errorCode ?? (cut ? 'CS_FEED_TOO_LARGE' : null);
    if (errorCode !== null) this.metrics.inc(M.feedErrors, 1, errorCode);
    return { links, errorCode };
  }
}
