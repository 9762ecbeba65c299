import { domainToASCII } from 'node:url';
import { RE2JS } from 're2js';
import { InvalidOptionError } from '../../core/errors.js';

/**
 * What a crawl may follow beyond its rules: `web` (any site, today's behaviour), or the
 * registered domains (`seed-sites`), the hosts (`seed-hosts`) or the URL prefixes
 * (`seed-prefixes`, Heritrix's SURT-prefix scope) of its seeds.
 */
export const SCOPE_KINDS = ['web', 'seed-sites', 'seed-hosts', 'seed-prefixes'] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];

/**
 * Path suffixes of binary types refused by default (images, audio, video, archives,
 * executables, fonts): a link whose last path segment ends in `.EXT` is never requested.
 */
export const DEFAULT_DENIED_EXTENSIONS: readonly string[] = [
  // images
  ...['jpg', 'jpeg', 'png', 'gif', 'bmp', 'tif', 'tiff', 'ico', 'webp', 'avif', 'heic', 'svg', 'psd', 'eps'],
  // audio
  ...['mp3', 'wav', 'ogg', 'oga', 'flac', 'aac', 'm4a', 'wma', 'opus', 'mid', 'midi'],
  // video
  ...['mp4', 'm4v', 'mov', 'avi', 'wmv', 'flv', 'mkv', 'webm', 'mpg', 'mpeg', '3gp', 'ogv'],
  // archives and disk images
  ...['zip', 'gz', 'tgz', 'bz2', 'xz', '7z', 'rar', 'tar', 'zst', 'lz', 'lzma', 'cab', 'iso', 'dmg', 'jar', 'apk'],
  // executables and packages
  ...['exe', 'msi', 'bin', 'dll', 'so', 'deb', 'rpm', 'pkg'],
  // fonts
  ...['ttf', 'otf', 'woff', 'woff2', 'eot'],
];

/** The parts of a normalized URL the rules look at (UrlShape has them). */
export interface UrlParts {
  /** Lowercase hostname without port or trailing dots; IPv6 in brackets. */
  readonly host: string;
  /** `scheme://host[:port]`. */
  readonly origin: string;
  readonly pathname: string;
  readonly search: string;
}

/** One compiled `--allow` / `--deny` rule; `text` is the rule as given (the metric label). */
export interface UrlRule {
  readonly text: string;
  matches(url: string, parts: UrlParts): boolean;
}

/** Longest `re:` pattern accepted (RE2 matching is linear in the URL, but compiling is not free). */
export const MAX_REGEX_LENGTH = 1_000;

/**
 * Compiles one rule. The syntax:
 * - `host:GLOB`: the URL's host name (any port), case-insensitive; `*` matches any run of
 *   characters, and a leading `*.` matches the domain itself too (`*.example.org` matches
 *   `example.org` and `a.b.example.org`). IDN labels may be written in Unicode; a trailing dot is ignored.
 * - `surt:PREFIX`: the URL's SURT form starts with PREFIX. The SURT form is scheme-less:
 *   `(org,example,www,:8080)/path?query` (labels reversed, the port only when not the default).
 *   PREFIX is written as SURT (`(org,example,` also matches every subdomain) or as a URL
 *   (`https://example.org/news/` → `(org,example,)/news/`; a URL without a path, such as
 *   `http://example.org`, gives the open prefix `(org,example,`, as Heritrix does).
 * - `re:REGEX`: an RE2 regular expression (no backreferences or lookaround; matching time is
 *   linear in the URL) searched anywhere in the normalized URL; at most MAX_REGEX_LENGTH characters.
 * Throws InvalidOptionError saying what is wrong with `text`.
 */
export function compileRule(text: string): UrlRule {
  const colon = text.indexOf(':');
  const kind = colon < 0 ? '' : text.slice(0, colon);
  const body = text.slice(colon + 1);
  const bad = (why: string) => new InvalidOptionError(`rule ${JSON.stringify(text)}: ${why}`);
  if (kind !== 'host' && kind !== 'surt' && kind !== 're')
    throw bad('must start with host:, surt: or re: (host:*.example.org, surt:(org,example,)/news/, re:\\?replytocom=)');
  if (body === '') throw bad(`${kind}: needs a pattern after the colon`);
  if (kind === 'host') return hostRule(text, body, bad);
  if (kind === 'surt') return surtRule(text, body, bad);
  if (body.length > MAX_REGEX_LENGTH) throw bad(`the regular expression is longer than ${MAX_REGEX_LENGTH} characters`);
  let re: RE2JS;
  try {
    re = RE2JS.compile(body);
  } catch (err) {
    throw bad(`not an RE2 regular expression: ${(err as Error).message}`);
  }
  // a URL without the pattern's required literal cannot match: one `includes` instead of a run
  // of the RE2 automaton for most URLs (the literal prefilter RE2 and Hyperscan use)
  const literal = requiredLiteral(body);
  if (literal.length < 2) return { text, matches: (url) => re.test(url) };
  return { text, matches: (url) => url.includes(literal) && re.test(url) };
}

/**
 * The longest string every match of an RE2 pattern contains ('' when none is found): a run of
 * literal characters in the top-level concatenation. Conservative: a top-level alternation, a
 * flag group such as `(?i)`, or an escape it does not know gives ''; groups and classes are
 * skipped, and a character made optional by `*`, `?` or `{` ends a run without joining it.
 */
export function requiredLiteral(pattern: string): string {
  let best = '';
  let run = '';
  const flush = () => {
    if (run.length > best.length) best = run;
    run = '';
  };
  const QUANT = '*+?{';
  // skips a quantifier at i (and its lazy ?); returns the index after it
  const skipQuantifier = (i: number): number => {
    const c = pattern[i];
    if (c === '{') {
      const end = pattern.indexOf('}', i);
      i = end < 0 ? pattern.length : end + 1;
    } else if (c === '*' || c === '+' || c === '?') i++;
    else return i;
    return pattern[i] === '?' ? i + 1 : i;
  };
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === '|') return '';
    if (c === '(') {
      if (/^\(\?[a-zA-Z-]*\)/.test(pattern.slice(i, i + 12))) return '';
      flush();
      let depth = 0;
      for (; i < pattern.length; i++) {
        const g = pattern[i];
        if (g === '\\') i++;
        else if (g === '[') i = classEnd(pattern, i);
        else if (g === '(') depth++;
        else if (g === ')' && --depth === 0) break;
      }
      i = skipQuantifier(i + 1);
      continue;
    }
    if (c === '[') {
      flush();
      i = skipQuantifier(classEnd(pattern, i) + 1);
      continue;
    }
    if (c === '^' || c === '$' || c === '.') {
      flush();
      i = skipQuantifier(i + 1);
      continue;
    }
    if (QUANT.includes(c) || c === ')') return '';
    let ch = c;
    let next = i + 1;
    if (c === '\\') {
      const e = pattern[i + 1] ?? '';
      if (/[dDwWsSbBAz]/.test(e)) {
        flush();
        i = skipQuantifier(i + 2);
        continue;
      }
      if (/[A-Za-z0-9]/.test(e) || e === '') return '';
      ch = e;
      next = i + 2;
    }
    const q = pattern[next];
    if (q === '*' || q === '?' || q === '{') {
      flush();
      i = skipQuantifier(next);
    } else if (q === '+') {
      run += ch;
      flush();
      i = skipQuantifier(next);
    } else {
      run += ch;
      i = next;
    }
  }
  flush();
  return best;
}

/** The index of the `]` closing the class that opens at `start` (the pattern's end if none). */
function classEnd(pattern: string, start: number): number {
  let i = start + 1;
  if (pattern[i] === '^') i++;
  if (pattern[i] === ']') i++;
  for (; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === '[' && pattern[i + 1] === ':') {
      const end = pattern.indexOf(':]', i + 2);
      if (end > 0) i = end + 1;
    } else if (pattern[i] === ']') return i;
  }
  return pattern.length;
}

function hostRule(text: string, glob: string, bad: (why: string) => InvalidOptionError): UrlRule {
  const labels = glob.replace(/\.+$/, '').split('.');
  const ascii = labels.map((l) => (l.includes('*') ? l.toLowerCase() : domainToASCII(l)));
  if (ascii.some((l) => l === '') || !ascii.every((l) => /^[a-z0-9_*-]+$/.test(l)))
    throw bad('a host glob is dot-separated labels of letters, digits, - and _, with * for any run (*.example.org)');
  const pattern = ascii.join('.');
  if (!pattern.includes('*')) return { text, matches: (_url, p) => p.host === pattern };
  if (pattern.startsWith('*.') && !pattern.slice(2).includes('*')) {
    const domain = pattern.slice(2);
    const dotted = `.${domain}`;
    return { text, matches: (_url, p) => p.host === domain || p.host.endsWith(dotted) };
  }
  const parts = pattern.split('*');
  return { text, matches: (_url, p) => globMatches(parts, p.host) };
}

/**
 * Whether `s` matches a glob whose only wildcard is `*`, split on it into `parts`: the first part
 * a prefix, the last a suffix, each middle part found leftmost in order (greedy leftmost is exact
 * for `*`-only globs, and linear).
 */
function globMatches(parts: readonly string[], s: string): boolean {
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (s.length < first.length + last.length || !s.startsWith(first) || !s.endsWith(last)) return false;
  let at = first.length;
  const end = s.length - last.length;
  for (let k = 1; k < parts.length - 1; k++) {
    const found = s.indexOf(parts[k]!, at);
    if (found < 0 || found + parts[k]!.length > end) return false;
    at = found + parts[k]!.length;
  }
  return true;
}

function surtRule(text: string, prefix: string, bad: (why: string) => InvalidOptionError): UrlRule {
  let surt: string;
  if (prefix.startsWith('(')) {
    const close = prefix.indexOf(')');
    surt = close < 0 ? prefix.toLowerCase() : prefix.slice(0, close).toLowerCase() + prefix.slice(close);
  } else {
    let u: URL;
    try {
      u = new URL(prefix);
    } catch {
      throw bad('a SURT prefix is written as SURT, (org,example,)/path, or as an http(s) URL');
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw bad('a SURT prefix URL must be http or https');
    const hasPath = /^[a-z]+:\/\/[^/?#]*[/?]/i.test(prefix);
    const s = surtOf({
      host: u.hostname.replace(/\.+$/, ''),
      origin: u.origin,
      pathname: u.pathname,
      search: u.search,
    });
    surt = hasPath ? s : s.slice(0, s.indexOf(')'));
  }
  return { text, matches: (_url, p) => surtOf(p).startsWith(surt) };
}

/** The port of an origin when it has one (`:8080`), else ''. */
export function portOf(origin: string): string {
  const m = /:(\d+)$/.exec(origin);
  return m === null ? '' : m[0];
}

/** Whether a host name is an IP address (IPv4 dotted or IPv6 in brackets): its labels are not reversed. */
function isIp(host: string): boolean {
  return host.startsWith('[') || /^\d+\.\d+\.\d+\.\d+$/.test(host);
}

// the SURT host part of the last origin asked: the links of a batch mostly share one
let lastOrigin = '';
let lastSurtHost = '';

/** The scheme-less SURT form of a URL: `(org,example,www,:8080)/path?query`. */
export function surtOf(p: UrlParts): string {
  if (p.origin !== lastOrigin) {
    const host = isIp(p.host) ? `${p.host},` : `${p.host.split('.').reverse().join(',')},`;
    lastSurtHost = `(${host}${portOf(p.origin)})`;
    lastOrigin = p.origin;
  }
  return `${lastSurtHost}${p.pathname}${p.search}`;
}

/**
 * Checks `--deny-extension` / `--allow-extension` values: a suffix of letters and digits, with
 * or without its dot; returns it lowercase without the dot.
 */
export function parseExtension(flag: string, value: string): string {
  const ext = value.replace(/^\./, '').toLowerCase();
  if (!/^[a-z0-9]{1,16}$/.test(ext))
    throw new InvalidOptionError(
      `${flag} takes a path suffix of letters and digits like zip or .zip, got ${JSON.stringify(value)}`,
    );
  return ext;
}

/** The filter settings of a crawl (CrawlConfig's fields of the same names). */
export interface FilterOptions {
  readonly allowRules: readonly string[];
  readonly denyRules: readonly string[];
  readonly maxDepth: number;
  readonly denyExtensions: readonly string[];
  readonly allowExtensions: readonly string[];
}

/**
 * The stateless half of a crawl's scope: strict depth, path suffixes, deny and allow rules.
 * A link is refused when it is deeper than `maxDepth` (0: no limit), its path ends in a denied
 * suffix, it matches a deny rule, or allow rules are given and it matches none (deny wins).
 */
export class UrlFilter {
  private readonly allow: readonly UrlRule[];
  private readonly deny: readonly UrlRule[];
  private readonly extensions: ReadonlySet<string>;
  private readonly maxDepth: number;
  /** Whether any link can be refused at all (false: `refusal` always answers undefined). */
  readonly active: boolean;

  /** Throws InvalidOptionError on a bad rule or suffix. */
  constructor(o: FilterOptions) {
    this.allow = o.allowRules.map(compileRule);
    this.deny = o.denyRules.map(compileRule);
    const allowed = new Set(o.allowExtensions.map((e) => parseExtension('--allow-extension', e)));
    const denied = [
      ...DEFAULT_DENIED_EXTENSIONS,
      ...o.denyExtensions.map((e) => parseExtension('--deny-extension', e)),
    ];
    this.extensions = new Set(denied.filter((e) => !allowed.has(e)));
    this.maxDepth = o.maxDepth;
    this.active = this.allow.length + this.deny.length + this.extensions.size > 0 || this.maxDepth > 0;
  }

  /**
   * Why a link is refused (the `rule` label of `urls_refused`: `max-depth`, `extension`,
   * `deny RULE` or `allow`), or undefined to let it through. `maxDepth` replaces the crawl's
   * hop limit for this link (a per-site override; 0: none). `bySuffix` false skips the suffix
   * list (a sitemap or feed: `sitemap.xml.gz` is a sitemap, not an archive).
   */
  refusal(url: string, parts: UrlParts, depth: number, maxDepth = this.maxDepth, bySuffix = true): string | undefined {
    if (maxDepth > 0 && depth > maxDepth) return 'max-depth';
    if (bySuffix && this.extensions.size > 0) {
      const path = parts.pathname;
      const dot = path.lastIndexOf('.');
      if (dot > path.lastIndexOf('/') && this.extensions.has(path.slice(dot + 1).toLowerCase())) return 'extension';
    }
    for (const r of this.deny) if (r.matches(url, parts)) return `deny ${r.text}`;
    if (this.allow.length === 0) return undefined;
    for (const r of this.allow) if (r.matches(url, parts)) return undefined;
    return 'allow';
  }
}
