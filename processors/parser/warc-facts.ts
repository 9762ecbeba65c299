import type { CrawlErrorCode } from '../../core/errors.js';
import type { FetchKind, FetchedPage } from '../../schemas/types.js';
import { siteOf } from '../common/normalize.js';
import type { HttpResponse } from './warc-reader.js';

/**
 * What the parser needs to derive a page record and its WARC response or revisit record does
 * not say: the crawl's own facts about the fetch (depth, visit, what the last visit found, …).
 * The archiver writes them as an `application/warc-fields` metadata record concurrent to the
 * response or revisit (`WARC-Concurrent-To`), so `replay reparse` can derive exactly what the
 * crawl did. Every field is optional on reading: WARCs written before the facts read with the
 * defaults of `factsOrDefaults`.
 */
export function fetchFacts(page: FetchedPage): Record<string, string> {
  const facts: Record<string, string> = {
    site: page.site,
    host: page.host,
    'fetch-kind': page.kind,
    depth: String(page.depth),
    'redirect-hops': String(page.redirectHops),
    attempt: String(page.attempt),
    visit: String(page.visit ?? 0),
  };
  if (page.errorCode !== null) facts['error-code'] = page.errorCode;
  if (page.redirectTarget !== null) facts['redirect-target'] = page.redirectTarget;
  if (page.previousFetchTime != null) facts['previous-fetch-time'] = String(page.previousFetchTime);
  if (page.previousStatus) facts['previous-status'] = String(page.previousStatus);
  if (page.previousDigest != null) facts['previous-digest'] = page.previousDigest;
  if (page.previousSimhash != null) facts['previous-simhash'] = page.previousSimhash.toString('hex');
  return facts;
}

/** The fields of a metadata record's `application/warc-fields` block, by name. */
export function parseWarcFields(block: Buffer): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of block.toString('utf8').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  return fields;
}

/** Whether a metadata record carries fetch facts (written by this version of the archiver or later). */
export function hasFacts(fields: Map<string, string>): boolean {
  return fields.has('fetch-kind');
}

/**
 * A FetchedPage rebuilt from an archived fetch: its WARC record's URI, date and HTTP response,
 * and the facts of its metadata record (an empty map for WARCs written before the facts: depth
 * 0, first visit, first attempt, kind PAGE — or ROBOTS for a `/robots.txt` URL —, the redirect
 * target from `Location`). Fields no derivation reads (lease id, timings, request head) are empty.
 */
export function pageFromWarc(
  url: string,
  fetchedAt: number,
  response: HttpResponse | undefined,
  facts: Map<string, string>,
): FetchedPage {
  const num = (name: string, dflt: number) => {
    const v = facts.get(name);
    return v === undefined || !/^-?\d+$/.test(v) ? dflt : Number(v);
  };
  const previousSimhash = facts.get('previous-simhash');
  const location = response?.headers.findLast((h) => h.name.toLowerCase() === 'location')?.value;
  let redirectTarget = facts.get('redirect-target') ?? null;
  if (redirectTarget === null && location !== undefined && !hasFacts(facts)) {
    try {
      redirectTarget = new URL(location, url).href;
    } catch {
      // an unusable Location: the crawl followed nothing either
    }
  }
  const parsedUrl = new URL(url);
  return {
    leaseId: '',
    url,
    host: facts.get('host') ?? parsedUrl.hostname,
    site: facts.get('site') ?? siteOf(url),
    depth: num('depth', 0),
    redirectHops: num('redirect-hops', 0),
    attempt: num('attempt', 1),
    fetchedAt,
    durationMs: 0,
    status: response?.status ?? 0,
    httpVersion: response?.httpVersion ?? null,
    requestHead: '',
    headers: response?.headers ?? [],
    body: response?.payload ?? Buffer.alloc(0),
    truncated: false,
    remoteAddress: null,
    errorCode: (facts.get('error-code') ?? facts.get('fetch-error-code') ?? null) as CrawlErrorCode | null,
    errorMessage: facts.get('fetch-error') ?? null,
    redirectTarget,
    kind: (facts.get('fetch-kind') ?? (parsedUrl.pathname === '/robots.txt' ? 'ROBOTS' : 'PAGE')) as FetchKind,
    visit: num('visit', 0),
    previousFetchTime: facts.has('previous-fetch-time') ? num('previous-fetch-time', 0) : null,
    previousStatus: num('previous-status', 0),
    previousDigest: facts.get('previous-digest') ?? null,
    previousSimhash: previousSimhash !== undefined ? Buffer.from(previousSimhash, 'hex') : null,
  };
}
