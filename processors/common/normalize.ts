import { getDomain } from 'tldts';
import { CrawlError } from '../../core/errors.js';

/** Longest URL the crawl accepts, counted in UTF-16 code units of the normalized form. */
export const MAX_URL_LENGTH = 2000;

export type NormalizeResult =
  { ok: true; url: string } | { ok: false; reason: 'bad-url' | 'unsupported-scheme' | 'too-long' };

// Query parameters that carry a session, matched on the lowercased, percent-decoded name.
const SESSION_PARAMS = new Set([
  'jsessionid',
  'phpsessid',
  'sid',
  'sessid',
  'sessionid',
  'session_id',
  'cfid',
  'cftoken',
  'zenid',
  'oscsid',
]);

// Query parameters that only carry campaign or click tracking, matched like SESSION_PARAMS.
const TRACKING_PARAMS = new Set([
  'gclid',
  'gclsrc',
  'dclid',
  'gbraid',
  'wbraid',
  'fbclid',
  'msclkid',
  'yclid',
  'twclid',
  'ttclid',
  'igshid',
  'li_fat_id',
  'mc_eid',
  'mc_cid',
  '_ga',
  '_gl',
  '_hsenc',
  '_hsmi',
  '__hstc',
  '__hssc',
  '__hsfp',
  'mkt_tok',
  'oly_anon_id',
  'oly_enc_id',
  'vero_id',
  'vero_conv',
  'rb_clickid',
  's_cid',
  'wickedid',
]);

// Prefixes of tracking parameter names; `aspsessionid` is followed by a random suffix.
const DROPPED_PREFIXES = ['utm_', 'aspsessionid'];

// `;jsessionid=…` and friends, as servlet containers append them to the path.
const PATH_SESSION_PARAM = /;(?:jsessionid|phpsessid|sessionid|sid)=[^/;?]*/gi;

// ASP.NET cookieless sessions put `(S(…))`, `(A(…))`, `(F(…))` as the first path segment.
const ASPNET_COOKIELESS_SEGMENT = /^\/\((?:[A-Za-z]\([A-Za-z0-9_-]*\))+\)(?=\/|$)/;

const PCT_ESCAPE = /%([0-9A-Fa-f]{2})/g;

/**
 * Normalizes a URL found on the web into the one string the crawl knows it by, or says why it
 * cannot. `raw` is resolved against `base` when relative. Only http and https are accepted.
 *
 * The rules are those that never change which resource a server returns, plus the removal of
 * session ids and tracking parameters: scheme and host lowercased, IDN hosts as punycode, a
 * trailing dot of the host dropped, default port dropped, dot segments resolved, an empty path
 * made `/`, the fragment and an empty query dropped, empty query pairs dropped, percent escapes
 * uppercased and those of unreserved characters (`A-Z a-z 0-9 - . _ ~`) decoded, while escapes of
 * reserved characters stay encoded. The order of the remaining query parameters is kept.
 * Normalizing an already normalized URL returns it unchanged. Never throws.
 */
export function normalizeUrl(raw: string, base?: string): NormalizeResult {
  return normalizeSimple(raw.trim(), base) ?? normalizeByParser(raw, base);
}

/**
 * `normalizeUrl` by the WHATWG URL parser alone, without the fast path for simple URLs: the
 * reference the fast path is tested against.
 */
export function normalizeByParser(raw: string, base?: string): NormalizeResult {
  let parsed: URL;
  try {
    parsed = base === undefined ? new URL(raw.trim()) : new URL(raw.trim(), base);
  } catch {
    return { ok: false, reason: 'bad-url' };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return { ok: false, reason: 'unsupported-scheme' };
  }

  let host = parsed.host;
  if (parsed.hostname.endsWith('.')) {
    // `example.com.` names the same DNS host, but servers often reject the dotted Host header
    const bare = parsed.hostname.replace(/\.+$/, '');
    if (bare === '') return { ok: false, reason: 'bad-url' };
    host = parsed.port === '' ? bare : `${bare}:${parsed.port}`;
  }
  if (host === '') return { ok: false, reason: 'bad-url' };

  let userinfo = '';
  if (parsed.username !== '' || parsed.password !== '') {
    userinfo = normalizeEscapes(parsed.username);
    if (parsed.password !== '') userinfo += ':' + normalizeEscapes(parsed.password);
    userinfo += '@';
  }

  const path = normalizeEscapes(stripPathSessions(parsed.pathname));
  const query = normalizeQuery(parsed.search);
  const url = `${parsed.protocol}//${userinfo}${host}${path}${query === '' ? '' : '?' + query}`;
  if (url.length > MAX_URL_LENGTH) return { ok: false, reason: 'too-long' };
  return { ok: true, url };
}

/**
 * The site of an absolute URL: its registered domain by the ICANN section of the public suffix
 * list (`blog.example.co.uk` → `example.co.uk`), or the hostname itself for IP addresses and
 * hosts without a registered domain (`localhost`). Throws CS_BAD_URL if `url` does not parse.
 */
export function siteOf(url: string): string {
  const hostname = hostOf(url);
  if (hostname.startsWith('[')) return hostname;
  const domain = getDomain(hostname, { allowPrivateDomains: false, extractHostname: false });
  return domain === null || domain === '' ? hostname : domain;
}

/**
 * The lowercase hostname of an absolute URL, without port; IPv6 addresses keep their brackets.
 * Throws CS_BAD_URL if `url` does not parse.
 */
export function hostOf(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (err) {
    throw new CrawlError('CS_BAD_URL', `not an absolute URL: ${url.slice(0, 200)}`, { cause: err });
  }
  return parsed.hostname.replace(/\.+$/, '');
}

function stripPathSessions(path: string): string {
  let out = path;
  if (out.includes(';')) out = out.replace(PATH_SESSION_PARAM, '');
  if (out.startsWith('/(')) {
    out = out.replace(ASPNET_COOKIELESS_SEGMENT, '');
    if (out === '') out = '/';
  }
  return out;
}

function normalizeQuery(search: string): string {
  if (search.length <= 1) return '';
  const kept: string[] = [];
  for (const pair of search.slice(1).split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = eq === -1 ? pair : pair.slice(0, eq);
    if (isDroppedParam(name)) continue;
    kept.push(normalizeEscapes(pair));
  }
  return kept.join('&');
}

function isDroppedParam(rawName: string): boolean {
  let name = rawName.toLowerCase();
  if (name.includes('%')) {
    try {
      name = decodeURIComponent(name);
    } catch {
      return false;
    }
  }
  if (SESSION_PARAMS.has(name) || TRACKING_PARAMS.has(name)) return true;
  for (const prefix of DROPPED_PREFIXES) if (name.startsWith(prefix)) return true;
  return false;
}

function normalizeEscapes(s: string): string {
  if (!s.includes('%')) return s;
  return s.replace(PCT_ESCAPE, (_m, hex: string) => {
    const code = parseInt(hex, 16);
    return isUnreserved(code) ? String.fromCharCode(code) : '%' + hex.toUpperCase();
  });
}

function isUnreserved(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    (code >= 0x30 && code <= 0x39) || // 0-9
    code === 0x2d || // -
    code === 0x2e || // .
    code === 0x5f || // _
    code === 0x7e // ~
  );
}

// ---- fast path -------------------------------------------------------------------------------
//
// Most links on a page are plain: an absolute http(s) URL with a lowercase DNS name, or a path
// relative to a plain page URL, made of characters the URL parser leaves as they are and the
// normalizer has nothing to do with (no escapes, no dot segments, no path parameters). For those,
// the normalized form is the string itself, resolved and with its query filtered, and building
// it costs a character scan instead of a URL parse. Anything else — any character outside the
// tables below, a port, userinfo, an IP address, an IDN, upper case in scheme or host — returns
// undefined and goes to the parser. test/processors/parser/normalize-fast.test.ts checks that
// both paths agree on every table case and on generated URLs.

const HOST = 1;
const PATH = 2;
const QUERY = 4;
const RELATIVE_START = 8;
const CHAR_CLASS = (() => {
  const t = new Uint8Array(128);
  const set = (chars: string, bits: number) => {
    for (const c of chars) t[c.charCodeAt(0)]! |= bits;
  };
  const alnum = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  set('abcdefghijklmnopqrstuvwxyz0123456789-.', HOST);
  // left raw by the URL parser in paths, and not touched by the normalizer (no ; % \)
  set(alnum + "-._~!$&'()*+,=:@/", PATH);
  // left raw by the URL parser in special-scheme queries (no ' or %), # excluded as the end
  set(alnum + '-._~!$&()*+,;=:@/?', QUERY);
  set(alnum + '_~-', RELATIVE_START);
  return t;
})();

interface SimpleUrl {
  /** `scheme://host[:port]`, normalized. */
  origin: string;
  /** The path, starting with `/`. */
  path: string;
  /** `?` and the raw query, or ''. */
  search: string;
}

/** The normalized URL when `raw` (trimmed) and `base` are simple enough to skip the URL parser. */
function normalizeSimple(raw: string, base: string | undefined): NormalizeResult | undefined {
  const hash = raw.indexOf('#');
  const ref = hash === -1 ? raw : raw.slice(0, hash);
  let url: SimpleUrl | undefined;
  const first = ref.charCodeAt(0);
  if (first === 0x68 /* h */ && (ref.startsWith('http://') || ref.startsWith('https://'))) {
    // the URL parser refuses an invalid base even for an absolute reference
    if (base !== undefined && !baseOf(base).valid) return undefined;
    url = parseSimple(ref);
  } else if (base !== undefined && first === 0x2f /* / */) {
    if (ref.charCodeAt(1) === 0x2f) return undefined; // scheme-relative
    const b = baseOf(base).simple;
    if (b === undefined) return undefined;
    url = splitPathQuery(ref, 0, b.origin);
  } else if (base !== undefined && ref.length > 0 && isRelativeStart(first)) {
    const end = firstOf(ref, 0);
    if (ref.lastIndexOf(':', end) !== -1) return undefined; // may be a scheme
    const b = baseOf(base).simple;
    if (b === undefined) return undefined;
    url = splitPathQuery(b.path.slice(0, b.path.lastIndexOf('/') + 1) + ref, 0, b.origin);
  }
  if (url === undefined) return undefined;
  const query = normalizeQuery(url.search);
  const out = `${url.origin}${url.path}${query === '' ? '' : '?' + query}`;
  if (out.length > MAX_URL_LENGTH) return { ok: false, reason: 'too-long' };
  return { ok: true, url: out };
}

let lastBase: { raw: string; simple: SimpleUrl | undefined; valid: boolean } | undefined;

/** `base` parsed as a simple URL, and whether it parses at all; the last one is remembered, as a page resolves all its links against one base. */
function baseOf(base: string): { simple: SimpleUrl | undefined; valid: boolean } {
  if (lastBase?.raw !== base) {
    // not trimmed: the URL parser strips other characters than String#trim, so a padded base takes the slow path
    const hash = base.indexOf('#');
    const absolute = base.startsWith('http://') || base.startsWith('https://');
    const simple = absolute ? parseSimple(hash === -1 ? base : base.slice(0, hash)) : undefined;
    lastBase = { raw: base, simple, valid: simple !== undefined || URL.canParse(base) };
  }
  return lastBase;
}

/** An absolute `http://` or `https://` URL without fragment, if simple. */
function parseSimple(ref: string): SimpleUrl | undefined {
  const https = ref.charCodeAt(4) === 0x73; /* s */
  const hostStart = https ? 8 : 7;
  let i = hostStart;
  let port = -1;
  let lastLabel = hostStart;
  for (; i < ref.length; i++) {
    const c = ref.charCodeAt(i);
    if (c === 0x2f || c === 0x3f) break; // / ?
    if (c === 0x3a /* : */) {
      port = i;
      break;
    }
    if (c >= 128 || (CHAR_CLASS[c]! & HOST) === 0) return undefined;
    if (c === 0x2e /* . */) {
      // no empty labels, no trailing dot
      if (i === lastLabel) return undefined;
      lastLabel = i + 1;
    }
  }
  const hostEnd = port === -1 ? i : port;
  if (hostEnd === lastLabel) return undefined; // empty host or trailing dot
  // a last label starting with a digit may make the host an IPv4 address (`0x7f.1`, `2130706433`)
  const lead = ref.charCodeAt(lastLabel);
  if (lead < 0x61 || lead > 0x7a) return undefined;
  const host = ref.slice(hostStart, hostEnd);
  if (host.includes('xn--')) return undefined;
  let origin = (https ? 'https://' : 'http://') + host;
  if (port !== -1) {
    let end = port + 1;
    while (end < ref.length && ref.charCodeAt(end) >= 0x30 && ref.charCodeAt(end) <= 0x39) end++;
    const digits = ref.slice(port + 1, end);
    if (end < ref.length && ref.charCodeAt(end) !== 0x2f && ref.charCodeAt(end) !== 0x3f) return undefined;
    if (digits.length === 0 || digits.length > 5 || digits.charCodeAt(0) === 0x30) return undefined;
    const n = Number(digits);
    if (n > 65_535) return undefined;
    if (n !== (https ? 443 : 80)) origin += ':' + digits;
    i = end;
  }
  if (i === ref.length || ref.charCodeAt(i) === 0x3f) {
    // an empty path is `/`
    return splitPathQuery('/' + ref.slice(i), 0, origin);
  }
  return splitPathQuery(ref, i, origin);
}

/** `ref` from `start` as a path (starting with `/`) and query, if every character is simple. */
function splitPathQuery(ref: string, start: number, origin: string): SimpleUrl | undefined {
  const q = ref.indexOf('?', start);
  const pathEnd = q === -1 ? ref.length : q;
  for (let i = start; i < pathEnd; i++) {
    const c = ref.charCodeAt(i);
    if (c >= 128 || (CHAR_CLASS[c]! & PATH) === 0) return undefined;
  }
  const path = ref.slice(start, pathEnd);
  // dot segments, and the ASP.NET cookieless marker, are the parser's and normalizer's business
  if (path.includes('/.') || path.startsWith('/(')) return undefined;
  if (q === -1) return { origin, path, search: '' };
  for (let i = q + 1; i < ref.length; i++) {
    const c = ref.charCodeAt(i);
    if (c >= 128 || (CHAR_CLASS[c]! & QUERY) === 0) return undefined;
  }
  return { origin, path, search: ref.slice(q) };
}

/** A path-relative reference's first character: a letter, digit, `_`, `~` or `-`. */
function isRelativeStart(c: number): boolean {
  return c < 128 && (CHAR_CLASS[c]! & RELATIVE_START) !== 0;
}

/** Index of the first `/` or `?` in `s` from `from`, or `s.length`. */
function firstOf(s: string, from: number): number {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x2f || c === 0x3f) return i;
  }
  return s.length;
}
