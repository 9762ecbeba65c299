/**
 * A robots.txt matcher written for the politeness judge from RFC 9309 alone, so that a bug in the
 * crawler's parser (robots-parser) cannot fool the judge too. It is checked against the test
 * cases of Google's robots.txt parser (test/synthetic-web/robots-conformance.test.ts), where the
 * few deliberate differences are listed with their reasons.
 *
 * - Lines end at CR, LF or CRLF; `#` starts a comment; names are case-insensitive; a line
 *   without `:` is not a record (§2.2).
 * - A group is one or more `user-agent` lines followed by rules; lines of other records (Sitemap,
 *   unknown ones) and empty lines do not end the user-agent lines of a group (§2.2.4). Rules
 *   before the first `user-agent` line belong to no group and are ignored.
 * - The groups whose product token equals the crawler's, case-insensitively, are merged; none:
 *   the `*` groups, merged; none of those either: no rules (§2.2.1). A user-agent line names the
 *   token its value starts with (`FooBot/1.2`, `Foo Bar`: FooBot, Foo), as Google's parser does.
 * - The longest matching pattern wins, counted in octets after normalisation; an allow and a
 *   disallow of equal length: allow (§2.2.2). An empty pattern matches nothing.
 * - `*` matches any run of octets, a final `$` ends the path; other `$` are literal (§2.2.3).
 * - Patterns and paths are compared percent-encoded: octets outside US-ASCII are encoded as
 *   UTF-8, existing escapes get upper-case hex and are never decoded (§2.2.2).
 * - Only the first 500 KiB are read, the least RFC 9309 §2.5 allows and what the crawler keeps.
 * - `Crawl-delay` (not in RFC 9309, a common extension): seconds, the first valid value among the
 *   selected groups' lines. It is a member of its group, like a rule: `User-agent: *`,
 *   `Crawl-delay: 2`, `User-agent: x` are two groups, as the sites that write it mean (Google's
 *   parser ignores the line and would merge them; none of its cases has one).
 */

/** RFC 9309 §2.5: crawlers must parse at least 500 KiB; the crawler's fetcher keeps exactly that. */
export const ROBOTS_MAX_BYTES = 500 * 1024;

export type RobotsRecordKey = 'user-agent' | 'allow' | 'disallow' | 'sitemap' | 'crawl-delay';

/** One `name: value` line of the file, 1-based line number. */
export interface RobotsRecord {
  readonly line: number;
  /** The lowercased name; `other` for a name RFC 9309 and its common extensions do not know. */
  readonly key: RobotsRecordKey | 'other';
  readonly value: string;
}

interface Rule {
  readonly allow: boolean;
  readonly pattern: string;
}

interface Group {
  readonly agents: string[];
  readonly rules: Rule[];
  crawlDelaySec: number | undefined;
}

const KEYS = new Set<string>(['user-agent', 'allow', 'disallow', 'sitemap', 'crawl-delay']);

/** A parsed robots.txt: answers for any product token. */
export class RobotsTxt {
  readonly records: readonly RobotsRecord[];
  readonly #groups: Group[];

  private constructor(records: RobotsRecord[], groups: Group[]) {
    this.records = records;
    this.#groups = groups;
  }

  /** Parses the first 500 KiB of `body`; bytes are decoded as UTF-8 after a whole or partial BOM. */
  static parse(body: string | Uint8Array): RobotsTxt {
    let bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
    bytes = bytes.subarray(0, ROBOTS_MAX_BYTES);
    // a byte order mark, even a cut one, is skipped only at the very start
    const bom = [0xef, 0xbb, 0xbf];
    let skip = 0;
    while (skip < 3 && bytes[skip] === bom[skip]) skip++;
    const text = bytes.subarray(skip).toString('utf8');

    const records: RobotsRecord[] = [];
    const groups: Group[] = [];
    let current: Group | undefined;
    let inRules = false;
    const lines = text.split(/\r\n|\r|\n/);
    for (const [i, raw] of lines.entries()) {
      const hash = raw.indexOf('#');
      const line = hash < 0 ? raw : raw.slice(0, hash);
      const colon = line.indexOf(':');
      if (colon < 0) continue; // an empty line, a comment, or not a record
      const name = trimSpace(line.slice(0, colon)).toLowerCase();
      if (name === '') continue;
      const value = trimSpace(line.slice(colon + 1));
      const key = KEYS.has(name) ? (name as RobotsRecordKey) : 'other';
      records.push({ line: i + 1, key, value });
      if (key === 'user-agent') {
        if (current === undefined || inRules) {
          current = { agents: [], rules: [], crawlDelaySec: undefined };
          groups.push(current);
          inRules = false;
        }
        current.agents.push(agentOf(value));
      } else if (key === 'allow' || key === 'disallow') {
        if (current === undefined) continue; // a rule outside any group
        inRules = true;
        current.rules.push({ allow: key === 'allow', pattern: normalizePattern(value) });
      } else if (key === 'crawl-delay' && current !== undefined) {
        inRules = true;
        if (current.crawlDelaySec !== undefined) continue;
        const seconds = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
        if (Number.isFinite(seconds)) current.crawlDelaySec = seconds;
      }
    }
    return new RobotsTxt(records, groups);
  }

  /** The groups that apply to `productToken` (§2.2.1), in file order; empty when none does. */
  #groupsFor(productToken: string): Group[] {
    const token = productToken.toLowerCase();
    const own = this.#groups.filter((g) => g.agents.includes(token));
    return own.length > 0 ? own : this.#groups.filter((g) => g.agents.includes('*'));
  }

  /** Whether `path` (path and query as requested, or an absolute URL) may be fetched by `productToken`. */
  isAllowed(productToken: string, path: string): boolean {
    const target = normalizePath(robotsPathOf(path));
    let best: Rule | undefined;
    for (const group of this.#groupsFor(productToken)) {
      for (const rule of group.rules) {
        if (rule.pattern === '' || !matches(rule.pattern, target)) continue;
        const length = patternLength(rule.pattern);
        const bestLength = best === undefined ? -1 : patternLength(best.pattern);
        if (length > bestLength || (length === bestLength && rule.allow && !best!.allow)) best = rule;
      }
    }
    return best === undefined || best.allow;
  }

  /** Crawl-delay for `productToken` in ms; 0 when none is given. */
  crawlDelayMs(productToken: string): number {
    for (const group of this.#groupsFor(productToken))
      if (group.crawlDelaySec !== undefined) return Math.round(group.crawlDelaySec * 1000);
    return 0;
  }
}

// RFC 9309 whitespace is SP and HTAB only: a BOM in mid-file stays part of its line's name
function trimSpace(text: string): string {
  return text.replace(/^[ \t]+|[ \t]+$/g, '');
}

/**
 * The product token of a user-agent line, lowercased: `*`, or its leading letters, `_` and `-`
 * (§2.2.1 allows nothing else in a token, so `FooBot/1.2` and `Foo Bar` name FooBot and Foo).
 */
function agentOf(value: string): string {
  if (value.startsWith('*')) return '*';
  return (/^[A-Za-z_-]*/.exec(value)?.[0] ?? '').toLowerCase();
}

/** RFC 9309 §2.2.1: a product token is letters, `_` and `-`, at least one. */
export function isValidProductToken(token: string): boolean {
  return /^[A-Za-z_-]+$/.test(token);
}

// "the most octets" of the rule's path as written (normalised), `*` and `$` included, as Google's parser counts
function patternLength(pattern: string): number {
  return pattern.length;
}

/**
 * The path, parameters and query of `url` with the fragment removed: `/` when it has none. A value
 * starting with `/` is taken as a request target; `//host/p` and `scheme://host/p` lose their host.
 */
export function robotsPathOf(url: string): string {
  let searchStart = 0;
  if (url.startsWith('//')) searchStart = 2;
  else {
    const early = url.search(/[/?;]/);
    const protocolEnd = url.indexOf('://');
    if (protocolEnd >= 0 && (early < 0 || early >= protocolEnd)) searchStart = protocolEnd + 3;
  }
  const rest = url.slice(searchStart);
  const pathAt = rest.search(/[/?;]/);
  const hashAt = rest.indexOf('#');
  if (pathAt < 0 || (hashAt >= 0 && hashAt < pathAt)) return '/';
  const path = rest.slice(pathAt, hashAt < 0 ? undefined : hashAt);
  return path.startsWith('/') ? path : `/${path}`;
}

/** Percent-encodes octets outside US-ASCII (as UTF-8) and upper-cases the hex of existing escapes. */
export function normalizePattern(value: string): string {
  let out = '';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (code < 0x80) out += ch;
    else for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => `%${hex.toUpperCase()}`);
}

/** Paths are normalised like patterns: both sides of a comparison are percent-encoded (§2.2.2). */
export function normalizePath(path: string): string {
  return normalizePattern(path);
}

/**
 * Whether `pattern` matches a prefix of `path` (`*` any run, final `$` the end). Tracks the set of
 * path positions the pattern so far can end at, so it takes O(pattern × path) at worst.
 */
function matches(pattern: string, path: string): boolean {
  const anchored = pattern.endsWith('$');
  const body = anchored ? pattern.slice(0, -1) : pattern;
  let positions = [0];
  for (const ch of body) {
    if (positions.length === 0) return false;
    if (ch === '*') {
      const from = positions[0]!;
      positions = [];
      for (let p = from; p <= path.length; p++) positions.push(p);
    } else {
      const next: number[] = [];
      for (const p of positions) if (p < path.length && path[p] === ch) next.push(p + 1);
      positions = next;
    }
  }
  if (positions.length === 0) return false;
  return anchored ? positions.includes(path.length) : true;
}
