/**
 * What the frontier needs of a URL, from one parse: the back-queue host, the origin robots.txt
 * comes from, the path (trap rules, band) and the query (band).
 */
export interface UrlShape {
  /** Lowercase hostname without port or trailing dots (IPv6 keeps its brackets): the back-queue key. */
  readonly host: string;
  /** `scheme://host[:port]`, as `URL.origin`. */
  readonly origin: string;
  /** As `URL.pathname`. */
  readonly pathname: string;
  /** As `URL.search`: '' or `?` and a non-empty query. */
  readonly search: string;
}

const HOST = 1;
const PATH = 2;
const QUERY = 4;
// characters the WHATWG URL parser leaves as they are in a special URL's host, path and query
const CHAR_CLASS = (() => {
  const t = new Uint8Array(128);
  const set = (chars: string, bits: number) => {
    for (const c of chars) t[c.charCodeAt(0)]! |= bits;
  };
  const lower = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const alnum = lower + 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  set(lower + '-._', HOST);
  set(alnum + "-._~!$&'()*+,;=:@/%", PATH);
  set(alnum + '-._~!$&()*+,;=:@/?%', QUERY);
  return t;
})();

/**
 * The shape of an absolute URL, or undefined when it does not parse. Links on the `links` topic
 * are already normalized, so most are plain (`http(s)://` + lowercase DNS name + path of
 * characters the URL parser keeps as they are) and are read by a character scan; anything else —
 * a port, userinfo, an IP address, an IDN, escapes of dots, a fragment, other characters — goes
 * through the URL parser. Both give the same answer (test/processors/frontier/url-shape.test.ts).
 */
export function urlShape(url: string): UrlShape | undefined {
  return plainShape(url) ?? parsedShape(url);
}

/** The shape by the WHATWG URL parser: the reference for `plainShape`. */
export function parsedShape(url: string): UrlShape | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  return { host: u.hostname.replace(/\.+$/, ''), origin: u.origin, pathname: u.pathname, search: u.search };
}

function plainShape(url: string): UrlShape | undefined {
  let p: number;
  if (url.startsWith('https://')) p = 8;
  else if (url.startsWith('http://')) p = 7;
  else return undefined;
  const len = url.length;
  const hostStart = p;
  let labelStart = p;
  for (; p < len; p++) {
    const c = url.charCodeAt(p);
    if (c === 0x2f) break;
    if (c >= 128 || (CHAR_CLASS[c]! & HOST) === 0) return undefined;
    if (c === 0x2e) {
      // empty labels and trailing dots are left to the parser
      if (p === labelStart) return undefined;
      labelStart = p + 1;
    }
  }
  // no path (the parser adds '/'), an empty host, a trailing dot
  if (p === len || p === hostStart || labelStart === p) return undefined;
  const pathStart = p;
  // a last label starting with a digit may be an IPv4 address, which the parser rewrites
  const last = url.charCodeAt(labelStart);
  if (last >= 0x30 && last <= 0x39) return undefined;
  const host = url.slice(hostStart, pathStart);
  // punycode labels are validated (and may be refused) by the parser
  if (host.includes('xn--')) return undefined;
  let query = -1;
  for (; p < len; p++) {
    const c = url.charCodeAt(p);
    if (c === 0x3f) {
      query = p;
      break;
    }
    if (c >= 128 || (CHAR_CLASS[c]! & PATH) === 0) return undefined;
    // dot segments ('.', '..', and their %2e spellings) are resolved by the parser
    if (c === 0x2e && url.charCodeAt(p - 1) === 0x2f) return undefined;
    if (c === 0x25 && url.charCodeAt(p + 1) === 0x32 && (url.charCodeAt(p + 2) | 0x20) === 0x65) return undefined;
  }
  const pathEnd = query === -1 ? len : query;
  for (p = query + 1; query !== -1 && p < len; p++) {
    const c = url.charCodeAt(p);
    if (c >= 128 || (CHAR_CLASS[c]! & QUERY) === 0) return undefined;
  }
  return {
    host,
    origin: url.slice(0, pathStart),
    pathname: url.slice(pathStart, pathEnd),
    search: query === -1 || query === len - 1 ? '' : url.slice(query),
  };
}
