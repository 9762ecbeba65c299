import type { TemplateCount } from '../../schemas/types.js';
import type { UrlShape } from './url-shape.js';

/**
 * The template of a URL: its path and query with every part that looks generated — numbers,
 * dates, hex ids, UUIDs, long tokens mixing letters and digits such as session ids — replaced by
 * `{n}` (digits) or `{id}`, and everything else (words, slugs, parameter names) kept; every
 * generalized part holds a digit. URLs that a script emits one after another (`/cal/2031/07/`,
 * `/cal/2031/08/`; `/s/a8f3e1/page`, `/s/77b0c2/page`) share a template; hand-named pages
 * (`/about/`, `/my-first-post`) do not.
 */
export interface UrlTemplate {
  readonly template: string;
  /** Whether any part was generalized: only such templates can run away. */
  readonly templated: boolean;
}

// separators inside a segment or query value: tokens between them are classified one by one
const SEPARATOR = new Uint8Array(128);
for (const c of '-_.,;~+= ') SEPARATOR[c.charCodeAt(0)] = 1;

const DIGIT = 1;
const HEX_LETTER = 2;
const LETTER = 4;
const UPPER = 8;
const CLASS = new Uint8Array(128);
for (let c = 0x30; c <= 0x39; c++) CLASS[c] = DIGIT;
for (let c = 0x61; c <= 0x7a; c++) CLASS[c] = LETTER | (c <= 0x66 ? HEX_LETTER : 0);
for (let c = 0x41; c <= 0x5a; c++) CLASS[c] = LETTER | UPPER | (c <= 0x46 ? HEX_LETTER : 0);

/** A token this long or longer that mixes letters and digits is an id (base64-ish tokens, session ids). */
const MIXED_ID_LENGTH = 10;
/** A hex token this long or longer with a digit and a hex letter is an id (hashes, short hex ids). */
const HEX_ID_LENGTH = 6;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const fnv = (h: number, c: number): number => Math.imul(h ^ c, FNV_PRIME);
const N = ['{'.charCodeAt(0), 'n'.charCodeAt(0), '}'.charCodeAt(0)];
const ID = ['{'.charCodeAt(0), 'i'.charCodeAt(0), 'd'.charCodeAt(0), '}'.charCodeAt(0)];
const hashN = (h: number): number => fnv(fnv(fnv(h, N[0]!), N[1]!), N[2]!);
const hashId = (h: number): number => fnv(fnv(fnv(fnv(h, ID[0]!), ID[1]!), ID[2]!), ID[3]!);

// the template is hashed as it is read (one pass, no strings); when OUT is set it is also spelled
// out there, for urlTemplate (tests, docs) — both come from the same walk, so they always agree
let OUT: string[] | null = null;
let TEMPLATED = false;

/**
 * Whether `s[start, end)` is a UUID (8-4-4-4-12 hex digits, at least one a digit, as every
 * generalized part has): its `-`s would otherwise split it into short tokens.
 */
function isUuid(s: string, start: number, end: number): boolean {
  if (end - start !== 36) return false;
  let digits = 0;
  for (let i = 0; i < 36; i++) {
    const c = s.charCodeAt(start + i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 0x2d) return false;
    } else if (c >= 128 || (CLASS[c]! & (DIGIT | HEX_LETTER)) === 0) return false;
    else digits += CLASS[c]! & DIGIT;
  }
  return digits > 0;
}

/**
 * Hashes the generalized `s[start, end)` (a path segment or a query value) into `h`. Tokens
 * between separators are read once: hashed as written while their class is gathered, and
 * re-hashed as `{n}` or `{id}` from the state before them when they turn out to be generated.
 */
function hashPart(h: number, s: string, start: number, end: number): number {
  if (end - start === 36 && isUuid(s, start, end)) {
    TEMPLATED = true;
    OUT?.push('{id}');
    return hashId(h);
  }
  let before = h;
  let tokenStart = start;
  let copied = start;
  let seen = 0;
  let nonHex = false;
  let plain = true;
  for (let i = start; i <= end; i++) {
    const c = i === end ? -1 : s.charCodeAt(i);
    if (c !== -1 && (c >= 128 || SEPARATOR[c] !== 1)) {
      h = fnv(h, c);
      const k = c < 128 ? CLASS[c]! : 0;
      // anything but ASCII letters and digits (escapes, other scripts) keeps the token as written
      if (k === 0) plain = false;
      else {
        seen |= k;
        if ((k & LETTER) !== 0 && (k & HEX_LETTER) === 0) nonHex = true;
      }
      continue;
    }
    const len = i - tokenStart;
    let kind = 0;
    if (len > 0 && plain && (seen & DIGIT) !== 0) {
      if (seen === DIGIT) kind = 1;
      else if ((!nonHex && len >= HEX_ID_LENGTH) || len >= MIXED_ID_LENGTH) kind = 2;
    }
    if (kind !== 0) {
      h = kind === 1 ? hashN(before) : hashId(before);
      TEMPLATED = true;
      if (OUT !== null) {
        if (tokenStart > copied) OUT.push(s.slice(copied, tokenStart));
        OUT.push(kind === 1 ? '{n}' : '{id}');
        copied = i;
      }
    }
    if (c !== -1) h = fnv(h, c);
    before = h;
    tokenStart = i + 1;
    seen = 0;
    nonHex = false;
    plain = true;
  }
  if (OUT !== null && end > copied) OUT.push(s.slice(copied, end));
  return h;
}

function hashChars(h: number, s: string, start: number, end: number): number {
  for (let i = start; i < end; i++) h = fnv(h, s.charCodeAt(i));
  OUT?.push(s.slice(start, end));
  return h;
}

/** Hashes the template of `shape`'s path and query into `h`; sets TEMPLATED when a part was generalized. */
function hashTemplate(h: number, shape: Pick<UrlShape, 'pathname' | 'search'>): number {
  TEMPLATED = false;
  const path = shape.pathname;
  let segStart = 0;
  for (let i = 0; i <= path.length; i++) {
    if (i < path.length && path.charCodeAt(i) !== 0x2f) continue;
    if (i > segStart) h = hashPart(h, path, segStart, i);
    if (i < path.length) {
      h = fnv(h, 0x2f);
      OUT?.push('/');
    }
    segStart = i + 1;
  }
  const q = shape.search;
  if (q.length > 1) {
    h = hashChars(h, q, 0, 1);
    let start = 1;
    for (let i = 1; i <= q.length; i++) {
      if (i < q.length && q.charCodeAt(i) !== 0x26) continue;
      const eq = q.indexOf('=', start);
      if (eq === -1 || eq > i) h = hashChars(h, q, start, i);
      else h = hashPart(hashChars(h, q, start, eq + 1), q, eq + 1, i);
      if (i < q.length) h = hashChars(h, q, i, i + 1);
      start = i + 1;
    }
  }
  return h;
}

/** The template of a URL already parsed into `shape`, spelled out (tests, documentation, logs). */
export function urlTemplate(shape: Pick<UrlShape, 'pathname' | 'search'>): UrlTemplate {
  OUT = [];
  try {
    hashTemplate(0, shape);
    return { template: OUT.join(''), templated: TEMPLATED };
  } finally {
    OUT = null;
  }
}

function hashHost(host: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < host.length; i++) h = fnv(h, host.charCodeAt(i));
  return fnv(h, 0x20);
}

/**
 * The key a URL's template is counted under on its host — equal to
 * `templateKey(host, urlTemplate(shape).template)` — or undefined when nothing in the URL was
 * generalized (hand-named URLs are not counted). One pass over path and query, no strings.
 */
export function templateKeyOf(host: string, shape: Pick<UrlShape, 'pathname' | 'search'>): number | undefined {
  // every generalized part holds a digit: a URL without one is hand-named, found in one cheap scan
  if (!hasDigit(shape.pathname) && !hasDigit(shape.search)) return undefined;
  const h = hashTemplate(hashHost(host), shape);
  return TEMPLATED ? h >>> 0 : undefined;
}

function hasDigit(s: string): boolean {
  for (let i = 0; i < s.length; i++) if ((s.charCodeAt(i) - 0x30) >>> 0 < 10) return true;
  return false;
}

/** 32-bit FNV-1a of a host, a space and a template: the key a template is counted under. */
export function templateKey(host: string, template: string): number {
  let h = hashHost(host);
  for (let i = 0; i < template.length; i++) h = fnv(h, template.charCodeAt(i));
  return h >>> 0;
}

/** Counters kept per site: enough for the templates that matter, few enough to keep a site state small. */
export const TEMPLATE_SLOTS = 32;

/**
 * The counter of `key` in a site's bounded template table (Space-Saving, Metwally et al. 2005):
 * when the table is full, the least-counted entry is taken over and its counts are inherited, so
 * a template's count is never under-estimated — a trap cannot hide by rotating through more
 * templates than there are slots; it can only be cut a little early. `keep` is never taken over.
 */
export function templateCounter(table: TemplateCount[], key: number, keep?: TemplateCount): TemplateCount {
  let min: TemplateCount | undefined;
  for (const t of table) {
    if (t.key === key) return t;
    if (t !== keep && (min === undefined || t.internal < min.internal)) min = t;
  }
  if (table.length < TEMPLATE_SLOTS || min === undefined) {
    const fresh = { key, internal: 0, external: 0 };
    table.push(fresh);
    return fresh;
  }
  min.key = key;
  // the outside links were another template's: the newcomer has earned none yet
  min.external = 0;
  return min;
}

const WORD = 0x01;

/**
 * The key of a hand-named URL's skeleton on its host — its path with every segment a word
 * (`/about` and `/contact` share `/{w}`, `/posts/my-first-post` is `/{w}/{w}`) and its query's
 * parameter names with every value a word — or undefined for the host's root (`/`, no query).
 * For URLs `templateKeyOf` does not count: a site answering 200 for every path with pages naming
 * new word paths (a soft 404) is a shape no rule names; counted this way, its breadth spends an
 * allowance as a generated shape's does, and only evidence (links from other sites, a yield that
 * falls as the host runs out) lets more through. Distinct from every template key (a template
 * has no `\x01`).
 */
export function skeletonKeyOf(host: string, shape: Pick<UrlShape, 'pathname' | 'search'>): number | undefined {
  const path = shape.pathname;
  const q = shape.search;
  if (path.length <= 1 && q.length <= 1) return undefined;
  let h = hashHost(host);
  for (let i = 0; i < path.length; i++) {
    if (path.charCodeAt(i) === 0x2f) h = fnv(h, 0x2f);
    else if (i === 0 || path.charCodeAt(i - 1) === 0x2f) h = fnv(h, WORD);
  }
  if (q.length > 1) {
    h = fnv(h, 0x3f);
    let inValue = false;
    for (let i = 1; i < q.length; i++) {
      const c = q.charCodeAt(i);
      if (c === 0x26) {
        inValue = false;
        h = fnv(h, c);
      } else if (c === 0x3d && !inValue) {
        inValue = true;
        h = fnv(fnv(h, c), WORD);
      } else if (!inValue) h = fnv(h, c);
    }
  }
  return h >>> 0;
}
