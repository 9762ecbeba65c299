import type { ContentHeader, ContentLink, FetchedPage, PageContent } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { MAX_URL_LENGTH } from '../common/normalize.js';
import type { HtmlAnalysis } from './html-analysis.js';

/**
 * Room on a `page-content` record for everything but the main text: outlinks, headers, title,
 * description, URLs. A page's outlinks (at most --max-outlinks, ~100 bytes each on the usual web)
 * and headers fit in it many times over; what does not is left off and flagged.
 */
export const CONTENT_OVERHEAD_BYTES = 1024 * 1024;

/** Room kept for what the site-keyed half adds later: `duplicateOf`, a URL. */
const DUPLICATE_OF_RESERVE = MAX_URL_LENGTH * 4 + 16;
/** Room kept for the framing, the ints, longs and booleans and the arrays' block counts. */
const FIXED_RESERVE = 256;
/** Headers take at most this much of the record; a response's headers are a few KiB. */
const MAX_HEADER_BYTES = 256 * 1024;

/** The `max.message.bytes` of `page-content`: every record `pageContent` builds encodes within it. */
export function pageContentMaxBytes(config: Pick<CrawlConfig, 'contentTextMaxBytes'>): number {
  return config.contentTextMaxBytes + CONTENT_OVERHEAD_BYTES;
}

/**
 * An HTML page's record for `page-content`, built from the analysis of its body. `followed`
 * says, per outlink, whether it is sent to the frontier. `duplicateOf` is null: the site-keyed
 * half settles it (and unfollows the links of a near copy).
 *
 * Size contract: the Avro encoding of the result, with any `duplicateOf` URL set later and the
 * Confluent framing, is at most `pageContentMaxBytes(config)`. The text is cut at
 * `contentTextMaxBytes` bytes of UTF-8 (on a character boundary) and flagged; headers and then
 * outlinks are left off, in document order from the end, when the rest of the room runs out.
 */
export function pageContent(
  page: FetchedPage,
  analysis: HtmlAnalysis,
  followed: (link: HtmlAnalysis['links'][number]) => boolean,
  config: Pick<CrawlConfig, 'contentTextMaxBytes'>,
): PageContent {
  const cut = cutUtf8(analysis.mainText ?? '', config.contentTextMaxBytes);
  const title = analysis.title ?? null;
  const description = analysis.description ?? null;
  let room =
    pageContentMaxBytes(config) -
    FIXED_RESERVE -
    DUPLICATE_OF_RESERVE -
    avroString(page.url) -
    avroString(page.site) -
    avroString(cut.text) -
    (title === null ? 0 : avroString(title)) -
    (description === null ? 0 : avroString(description));

  const headers: ContentHeader[] = [];
  let headersTruncated = false;
  let headerRoom = Math.min(room, MAX_HEADER_BYTES);
  for (const h of page.headers) {
    const size = avroString(h.name) + avroString(h.value);
    if (size > headerRoom) {
      headersTruncated = true;
      break;
    }
    headerRoom -= size;
    room -= size;
    headers.push({ name: h.name, value: h.value });
  }

  const outlinks: ContentLink[] = [];
  let outlinksTruncated = false;
  for (const l of analysis.links) {
    const link: ContentLink = {
      url: l.url,
      anchor: l.anchor ?? null,
      rel: l.rel ?? null,
      kind: l.kind,
      followed: followed(l),
    };
    // two union branch indexes and the boolean
    const size =
      3 + avroString(link.url) + avroString(link.kind) + (link.anchor === null ? 0 : avroString(link.anchor));
    const withRel = size + (link.rel === null ? 0 : avroString(link.rel));
    if (withRel > room) {
      outlinksTruncated = true;
      break;
    }
    room -= withRel;
    outlinks.push(link);
  }

  return {
    url: page.url,
    site: page.site,
    fetchTime: page.fetchedAt,
    visit: page.visit ?? 0,
    status: page.status,
    title,
    description,
    text: cut.text,
    textTruncated: cut.truncated || (analysis.mainTextTruncated ?? false),
    outlinks,
    outlinksTruncated,
    headers,
    headersTruncated,
    duplicateOf: null,
  };
}

/** The longest prefix of `text` of at most `maxBytes` bytes of UTF-8 that ends on a whole character. */
export function cutUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  // a UTF-16 code unit is at most 3 bytes of UTF-8 (a surrogate pair, 2 units, is 4)
  if (text.length * 3 <= maxBytes) return { text, truncated: false };
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  // back off continuation bytes (10xxxxxx) so the cut falls before a character's first byte
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString('utf8').trimEnd(), truncated: true };
}

/** An upper bound of a string's Avro encoding: a varint length (≤ 5 bytes) and its UTF-8 bytes. */
function avroString(s: string): number {
  return 5 + (s.length < 128 ? s.length * 3 : Buffer.byteLength(s, 'utf8'));
}
