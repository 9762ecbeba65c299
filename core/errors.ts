/**
 * The one error base class of crawlstream. `code` is stable: it goes into records and
 * metrics; `message` is for people and may change.
 */
export class CrawlError extends Error {
  constructor(
    readonly code: CrawlErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'CrawlError';
  }
}

/** Thrown at the edge when an option is malformed; the message names the option and the value. */
export class InvalidOptionError extends CrawlError {
  constructor(message: string) {
    super('CS_INVALID_OPTION', message);
    this.name = 'InvalidOptionError';
  }
}

export type CrawlErrorCode =
  // fetch outcomes (also written into fetch results and page records)
  | 'CS_DNS'
  | 'CS_CONNECT'
  | 'CS_TLS'
  | 'CS_TIMEOUT'
  | 'CS_RESET'
  | 'CS_TOO_LARGE'
  | 'CS_BOMB'
  // a response whose Content-Type --accept-type refuses: closed after its headers, body not read
  | 'CS_REFUSED_TYPE'
  | 'CS_REFUSED_ADDRESS'
  | 'CS_BAD_URL'
  | 'CS_HTTP'
  | 'CS_LEASE_EXPIRED'
  // the frontier gave up on a lease with no result: the fetch may or may not have happened
  | 'CS_LEASE_LOST'
  | 'CS_ROBOTS_DISALLOWED'
  | 'CS_ROBOTS_UNAVAILABLE'
  | 'CS_PARSE'
  // sitemaps and feeds (FeedParse.errorCode): not one / not well-formed XML or corrupt gzip /
  // over the 50 MB uncompressed limit / over the 50,000 URL limit / an entry without a usable URL
  | 'CS_FEED_UNKNOWN'
  | 'CS_FEED_MALFORMED'
  | 'CS_FEED_TOO_LARGE'
  | 'CS_FEED_TOO_MANY_URLS'
  | 'CS_FEED_BAD_ENTRY'
  // runtime and operations
  | 'CS_INVALID_OPTION'
  | 'CS_TOPOLOGY'
  | 'CS_CORRUPT_RECORD'
  | 'CS_SCHEMA'
  // the schema registry could not be asked (unreachable, an error status): worth a retry
  | 'CS_REGISTRY'
  | 'CS_STORE'
  // RocksDB reports its files corrupt (a torn MANIFEST, a bad block checksum, a missing file): a
  // task's copy is wiped and restored from its changelogs (runtime/task-state.ts)
  | 'CS_STORE_CORRUPT'
  | 'CS_DISK_FULL'
  // the WARC object store (--warc-store) refused, failed or could not be reached
  | 'CS_OBJECT_STORE'
  // Kafka engine: a newer producer owns this task's transactional id / any other client failure
  | 'CS_FENCED'
  | 'CS_KAFKA'
  | 'CS_INTERNAL';

export function isCrawlError(err: unknown): err is CrawlError {
  return err instanceof CrawlError;
}
