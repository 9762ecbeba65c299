import { getDomain } from 'tldts';
import { CrawlError } from '../../runtime/errors.js';

/** Longest URL the crawl accepts, counted in UTF-16 code units of the normalized form. */
export const MAX_URL_LENGTH = 2000;

export type NormalizeResult =
  | { ok: true; url: string }
  | { ok: false; reason: 'bad-url' | 'unsupported-scheme' | 'too-long' };

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
  return DROPPED_PREFIXES.some((prefix) => name.startsWith(prefix));
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
