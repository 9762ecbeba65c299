import { InvalidOptionError } from '../../core/errors.js';

/**
 * The media types a crawl fetches by default: HTML and XHTML, RSS, Atom and RDF feeds, sitemap
 * XML (plain and gzip) and plain text. Everything else is refused on its response headers.
 */
export const DEFAULT_ACCEPT_TYPES: readonly string[] = [
  'text/html',
  'application/xhtml+xml',
  'application/rss+xml',
  'application/atom+xml',
  'application/rdf+xml',
  'application/feed+json',
  'application/xml',
  'text/xml',
  'application/gzip',
  'application/x-gzip',
  'text/plain',
];

// RFC 9110 §5.6.2 token characters, lower-cased, but '*': here it only ever means "any"
const TOKEN = "[a-z0-9!#$%&'+.^_`|~-]+";
const PATTERN = new RegExp(`^(?:\\*/\\*|${TOKEN}/\\*|${TOKEN}/${TOKEN})$`);

/**
 * Parses `--accept-type` patterns (`type/subtype`, `type/*` or `*\/*`, case-insensitive); throws
 * InvalidOptionError naming the first one that is not a media type pattern.
 */
export function parseAcceptTypes(patterns: readonly string[]): string[] {
  if (patterns.length === 0) throw new InvalidOptionError('--accept-type needs at least one media type pattern');
  return patterns.map((raw) => {
    const p = raw.trim().toLowerCase();
    if (!PATTERN.test(p))
      throw new InvalidOptionError(
        `--accept-type must be a media type pattern like text/html or text/*, got ${JSON.stringify(raw)}`,
      );
    return p;
  });
}

/**
 * Decides a response by its Content-Type against accepted patterns. A response without a
 * Content-Type (or with one that does not parse) is accepted: its type is unknown, not refused.
 * Parameters (`; charset=…`) are ignored. Immutable; safe to share between tasks.
 */
export class AcceptTypes {
  private readonly exact = new Set<string>();
  private readonly prefixes = new Set<string>();
  private readonly any: boolean;

  /** `patterns`: as returned by parseAcceptTypes. */
  constructor(patterns: readonly string[]) {
    for (const p of patterns) {
      if (p.endsWith('/*')) this.prefixes.add(p.slice(0, -1));
      else this.exact.add(p);
    }
    this.any = this.prefixes.has('*/');
  }

  /** The media type (`type/subtype`, lower case) of a Content-Type value; undefined when it has none. */
  static mediaType(contentType: string | undefined): string | undefined {
    if (contentType === undefined) return undefined;
    const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
    return /^[^/\s]+\/[^/\s]+$/.test(type) ? type : undefined;
  }

  accepts(contentType: string | undefined): boolean {
    const type = AcceptTypes.mediaType(contentType);
    if (type === undefined || this.any || this.exact.has(type)) return true;
    return this.prefixes.has(type.slice(0, type.indexOf('/') + 1));
  }
}
