import { domainToASCII } from 'node:url';

/**
 * The SURT key of a URL exactly as Python's `surt` package (0.3.1) computes it with its defaults,
 * which is what pywb and cdxj-indexer sort and look up CDXJ lines by: the IA canonicalisation
 * (host lowercased, `www`/`www2.` dropped, default port, user info and fragment dropped, path and
 * query lowercased, query arguments sorted, session ids removed, escapes made minimal) and the
 * host reversed into commas, without the scheme: `http://www.Example.com:8080/A?b=1&a=2` →
 * `com,example:8080)/a?a=2&b=1`. A URL that has no valid port gives back the URL itself, as
 * cdxj-indexer's fallback does. Pure; never throws.
 *
 * The Python code works on bytes; here a byte string is a JS string of code units 0–255 (latin1).
 * Hosts are never resolved: a host that only a DNS lookup could turn into an address keeps its name.
 */
export function surt(url: string): string {
  const bytes = Buffer.from(url, 'utf8').toString('latin1');
  if (bytes === '') return '-';
  if (bytes.startsWith('filedesc')) return url;
  const parsed = parse(bytes);
  if (parsed === undefined) return url;
  return Buffer.from(surtString(iaCanonicalize(googleCanonicalize(parsed))), 'latin1').toString('utf8');
}

/** handyurl's fields after parsing; null where Python has None. */
interface HandyUrl {
  scheme: string;
  host: string | null;
  port: number | null;
  path: string | null;
  query: string | null;
  hash: string | null;
  lastDelimiter: string | null;
}

// the RFC 2396 split handyurl uses: scheme, authority, path, query, fragment
const RFC2396 = /^(([a-zA-Z][a-zA-Z0-9+.-]*):)?((\/\/([^/?#]*))?([^?#]*)(\?([^#]*))?)?(#(.*))?$/s;

function parse(input: string): HandyUrl | undefined {
  // eslint-disable-next-line no-control-regex -- Python's bytes.strip() removes exactly these
  let url = input.replace(/^[ \t\n\r\x0b\x0c]+|[ \t\n\r\x0b\x0c]+$/g, '').replace(/[\n\r\t]/g, '');
  if (url !== '' && !/^[a-zA-Z][a-zA-Z0-9+\-.]*:/.test(url)) url = 'http://' + url;
  url = url.replace(/^(https?:\/\/)+/, (_all, last: string) => last);
  const m = RFC2396.exec(url);
  if (m === null) return undefined;
  let netloc = m[5] ?? '';
  if (netloc.endsWith(':')) netloc = netloc.replace(/:+$/, '');
  const info = hostInfo(netloc);
  let port: number | null = null;
  if (info.port !== null) {
    // urllib raises on such a port; cdxj-indexer then keys the line by the URL itself
    if (!/^[0-9]+$/.test(info.port)) return undefined;
    port = Number(info.port);
    if (port > 65535) return undefined;
    if (port === 0) port = null;
  }
  let host = info.host;
  let path = m[6] || null;
  const scheme = m[2] || '';
  if (scheme.startsWith('http') && host === null && path !== null) {
    const rest = path.replace(/^\/+/, '');
    const slash = rest.indexOf('/');
    host = slash === -1 ? rest : rest.slice(0, slash);
    path = '/' + (slash === -1 ? '' : rest.slice(slash + 1));
  }
  const query = m[8] || null;
  return {
    scheme,
    host,
    port,
    path,
    query,
    hash: m[10] || null,
    lastDelimiter: url.endsWith('?') && query === null ? '?' : null,
  };
}

/** urllib's `_hostinfo` and `hostname`: user info dropped, IPv6 brackets removed, host lowercased. */
function hostInfo(netloc: string): { host: string | null; port: string | null } {
  const hostinfo = netloc.slice(netloc.lastIndexOf('@') + 1);
  let host: string;
  let port: string;
  const open = hostinfo.indexOf('[');
  if (open !== -1) {
    const bracketed = hostinfo.slice(open + 1);
    const close = bracketed.indexOf(']');
    host = close === -1 ? bracketed : bracketed.slice(0, close);
    const after = close === -1 ? '' : bracketed.slice(close + 1);
    port = after.includes(':') ? after.slice(after.indexOf(':') + 1) : '';
  } else {
    const colon = hostinfo.indexOf(':');
    host = colon === -1 ? hostinfo : hostinfo.slice(0, colon);
    port = colon === -1 ? '' : hostinfo.slice(colon + 1);
  }
  if (host === '') return { host: null, port: port || null };
  const pct = host.indexOf('%');
  const lowered = pct === -1 ? asciiLower(host) : asciiLower(host.slice(0, pct)) + host.slice(pct);
  return { host: lowered, port: port || null };
}

function googleCanonicalize(u: HandyUrl): HandyUrl {
  const out = { ...u, hash: null };
  if (out.query !== null) out.query = escapeOnce(unescapeRepeatedly(out.query));
  if (out.host) {
    let host = unescapeRepeatedly(out.host);
    if (/[\x80-\xff]/.test(host)) {
      const ascii = domainToASCII(
        Buffer.from(host, 'latin1')
          .toString('utf8')
          .replace(/\uFFFD/g, ''),
      );
      if (ascii !== '') host = ascii;
    }
    host = host.replaceAll('..', '.').replace(/^\.+|\.+$/g, '');
    out.host = ipAddress(host) ?? escapeOnce(asciiLower(host));
  }
  let path = out.path === null ? null : unescapeRepeatedly(out.path);
  if (out.host) path = normalizePath(path);
  out.path = path === null ? null : escapeOnce(path);
  return out;
}

function iaCanonicalize(u: HandyUrl): HandyUrl {
  const out = { ...u };
  if (out.host) out.host = asciiLower(out.host).replace(/^www\d*\./, '');
  if (out.port !== null && out.port === defaultPort(out.scheme)) out.port = null;
  let path = out.path;
  if (path) path = stripPathSessionId(asciiLower(path));
  if (path && path.endsWith('/') && path.length > 1) path = path.slice(0, -1);
  out.path = path;
  if (out.query) {
    const query = alphaReorderQuery(asciiLower(stripQuerySessionId(out.query)));
    out.query = query === '' ? null : query;
  } else {
    out.lastDelimiter = null;
  }
  return out;
}

function surtString(u: HandyUrl): string {
  let s = u.host ? u.host.split('.').reverse().join(',') : u.scheme + ':';
  if (u.host) s += (u.port !== null ? `:${u.port}` : '') + ')';
  if (u.path) s += u.path;
  else if (u.query !== null || u.hash !== null) s += '/';
  if (u.query !== null) s += '?' + u.query;
  if (u.hash !== null) s += '#' + u.hash;
  if (u.lastDelimiter !== null) s += u.lastDelimiter;
  return s;
}

function normalizePath(path: string | null): string {
  if (!path) return '/';
  const kept: string[] = [];
  for (const p of path.split('/').slice(1)) {
    if (p === '.') continue;
    if (p === '..') {
      if (kept.length > 0) kept.pop();
      else kept.push(p);
    } else kept.push(p);
  }
  let out = '/';
  // empty segments before the last are dropped (no `//`); a trailing '' keeps the trailing slash
  for (const p of kept.slice(0, -1)) if (p.length > 0) out += p + '/';
  return out + (kept.length > 0 ? kept[kept.length - 1] : '');
}

/** inet_aton's forms (what gethostbyname accepts for a numeric host), as a dotted quad; undefined when not one. */
function ipAddress(host: string): string | undefined {
  if (/^[0-9]+$/.test(host)) return quad(Number(BigInt(host) & 0xffffffffn));
  if (
    !/^([1-9][0-9]*)(\.[0-9]+)?(\.[0-9]+)?(\.[0-9]+)?$/.test(host) &&
    !/^(0[0-7]*)(\.[0-7]+)?(\.[0-7]+)?(\.[0-7]+)?$/.test(host)
  )
    return undefined;
  const parts = host.split('.').map((p) => (p.length > 1 && p.startsWith('0') ? parseOctal(p) : Number(p)));
  if (parts.some((p) => Number.isNaN(p))) return undefined;
  const last = parts.pop()!;
  if (parts.some((p) => p > 255) || last >= 2 ** (8 * (4 - parts.length))) return undefined;
  let value = 0;
  for (const [i, p] of parts.entries()) value += p * 2 ** (8 * (3 - i));
  return quad(value + last);
}

function parseOctal(p: string): number {
  return /^[0-7]+$/.test(p) ? parseInt(p, 8) : NaN;
}

function quad(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

function defaultPort(scheme: string): number {
  const s = asciiLower(scheme);
  return s === 'http' ? 80 : s === 'https' ? 443 : 0;
}

const PATH_SESSION_IDS = [
  /^(.*\/)(\((?:[a-z]\([0-9a-z]{24}\))+\)\/)([^?]+\.aspx.*)$/i,
  /^(.*\/)(\([0-9a-z]{24}\)\/)([^?]+\.aspx.*)$/i,
];

const QUERY_SESSION_IDS = [
  /^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$/i,
  /^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$/i,
  /^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$/i,
  /^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$/i,
  /^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$/i,
];

function stripPathSessionId(path: string): string {
  for (const re of PATH_SESSION_IDS) {
    const m = re.exec(path);
    if (m !== null) path = m[1]! + m[3]!;
  }
  return path;
}

function stripQuerySessionId(query: string): string {
  for (const re of QUERY_SESSION_IDS) {
    const m = re.exec(query);
    if (m !== null) query = m[1]! + (m[2] ? m[2] : '');
  }
  return query;
}

/** Sorts `a=1&b` arguments as Python sorts their (name, value) tuples; `?b` stays apart from `?b=`. */
function alphaReorderQuery(query: string): string {
  if (query.length <= 1) return query;
  const args = query.split('&').map((arg) => {
    const eq = arg.indexOf('=');
    return eq === -1 ? [arg] : [arg.slice(0, eq), arg.slice(eq + 1)];
  });
  args.sort((a, b) => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
    }
    return a.length - b.length;
  });
  return args.map((a) => a.join('=')).join('&');
}

function unescapeRepeatedly(s: string): string {
  for (;;) {
    const un = s.replace(/%([0-9a-fA-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (un === s) return s;
    s = un;
  }
}

// Python's quote_from_bytes with the safe set the Google canonicaliser gives: only controls,
// space, '#', '%' and bytes ≥ 0x7f are escaped
function escapeOnce(s: string): string {
  // eslint-disable-next-line no-control-regex -- controls are among the bytes escaped
  return s.replace(/[\x00-\x20#%\x7f-\xff]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
}

function asciiLower(s: string): string {
  return s.replace(/[A-Z]+/g, (c) => c.toLowerCase());
}
