import { InvalidOptionError } from '../../../core/errors.js';
import { sniffXmlCharset } from '../charset.js';
import { decodedChunks } from './feed-chunks.js';
import { FeedCollector } from './feed-collector.js';
import { resolveScopes } from './feed-scope.js';
import { MAX_FEED_BYTES, MAX_FEED_URLS, type FeedOptions, type FeedParse } from './feed-types.js';
import { gunzipCapped, isGzip } from './gunzip.js';
import { looksLikeTextSitemap, readTextSitemap } from './text-sitemap.js';
import { readXmlFeed } from './xml-feed-reader.js';

const TEXT_PLAIN = /^\s*text\/plain\s*(?:;|$)/i;

/**
 * Reads the URLs a sitemap, sitemap index, text sitemap, RSS or Atom feed lists, from its body as
 * fetched (Content-Encoding already undone; a gzip body, e.g. `sitemap.xml.gz`, is recognised by
 * its magic bytes and inflated here). Pure and synchronous; the body is decoded and parsed in
 * 64 KB chunks, never as one string nor as a tree.
 *
 * - The format is sniffed from the body, not the URL: the root element of an XML document
 *   (`urlset`, `sitemapindex`, `rss`, `rdf:RDF`, Atom `feed`), else a text sitemap when
 *   `contentType` is text/plain or the first non-blank line is an absolute http(s) URL.
 * - Sitemap URLs must be absolute; relative links in feeds resolve against `feedUrl` (and Atom's
 *   `xml:base`). Only http(s) URLs are kept, normalized (see `normalizeUrl`).
 * - Scope: see `FeedOptions.scope`. A sitemap index's child sitemaps must be on the index's
 *   origin or the scope's. URLs outside are counted in `outOfScope`, not kept.
 * - Limits: `maxUrls` URLs (and child sitemaps), `maxBytes` bytes after inflating; past either,
 *   reading stops and `truncated` is set. A gzip bomb costs at most a few inflations of `maxBytes`.
 * - XXE-safe: no DTD is read and no entity but XML's five and character references is expanded.
 *
 * Anything wrong in the body is counted in `errors` and named in `errorCode`, never thrown.
 * Throws InvalidOptionError only for bad arguments: `feedUrl` not an absolute http(s) URL, a
 * malformed scope, limits that are not positive integers.
 */
export function parseFeed(
  body: Uint8Array,
  contentType: string | null,
  feedUrl: string,
  options?: FeedOptions,
): FeedParse {
  const maxUrls = positive('maxUrls', options?.maxUrls ?? MAX_FEED_URLS);
  const maxBytes = positive('maxBytes', options?.maxBytes ?? MAX_FEED_BYTES);
  const scopes = resolveScopes(feedUrl, options?.scope);
  const collector = new FeedCollector(scopes.scope, scopes.sitemapFolder, maxUrls);

  let bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let complete = true;
  if (isGzip(bytes)) {
    const inflated = gunzipCapped(bytes, maxBytes);
    if (inflated.tooLarge) collector.tooLarge();
    if (inflated.corrupt) collector.documentError('CS_FEED_MALFORMED');
    complete = !inflated.tooLarge && !inflated.corrupt;
    bytes = inflated.body;
    if (bytes.length === 0 && !complete) return collector.result;
  } else if (bytes.length > maxBytes) {
    bytes = bytes.subarray(0, maxBytes);
    collector.tooLarge();
    complete = false;
  }
  if (options?.bodyTruncated === true) {
    collector.tooLarge();
    complete = false;
  }

  const chunks = decodedChunks(bytes, sniffXmlCharset(bytes, contentType));
  // the first chunk with something other than whitespace decides the format
  const head: string[] = [];
  let first = '';
  // next(), not for-of: leaving a for-of would close the generator, and the rest is read below
  for (let next = chunks.next(); next.done !== true; next = chunks.next()) {
    head.push(next.value);
    first = next.value.trimStart();
    if (first !== '') break;
  }
  const all = concat(head, chunks);
  if (first.startsWith('<')) {
    readXmlFeed(all, collector, scopes.feedUrl, complete);
  } else if (first !== '' && ((contentType !== null && TEXT_PLAIN.test(contentType)) || looksLikeTextSitemap(first))) {
    collector.recognize('TEXT_SITEMAP');
    readTextSitemap(all, collector, complete);
  } else {
    collector.unknown();
  }
  return collector.result;
}

function* concat(head: readonly string[], rest: Iterator<string>): Generator<string, void, undefined> {
  yield* head;
  for (let next = rest.next(); next.done !== true; next = rest.next()) yield next.value;
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new InvalidOptionError(`parseFeed option ${name} must be a positive integer, got ${value}`);
  }
  return value;
}
