import type { TemplateCount } from '../../schemas/types.js';
import type { UrlShape } from './url-shape.js';

/**
 * The template of a URL: its path and query with every part that looks generated — numbers,
 * dates, hex ids, UUIDs, long mixed-case or mixed-digit tokens such as session ids — replaced by
 * `{n}` (digits) or `{id}`, and everything else (words, slugs, parameter names) kept. URLs that a
 * script emits one after another (`/cal/2031/07/`, `/cal/2031/08/`; `/s/a8f3e1/page`,
 * `/s/77b0c2/page`) share a template; hand-named pages (`/about/`, `/my-first-post`) do not.
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

/**
 * What one token stands for: `{n}` for digits, `{id}` for an id, or undefined (kept as written).
 * Reads `s` from `start` to `end` once.
 */
function classifyToken(s: string, start: number, end: number): '{n}' | '{id}' | undefined {
  const len = end - start;
  if (len === 0) return undefined;
  let seen = 0;
  let nonHex = false;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    const k = c < 128 ? CLASS[c]! : 0;
    // anything but ASCII letters and digits (escapes, other scripts) is kept as written
    if (k === 0) return undefined;
    seen |= k;
    if ((k & LETTER) !== 0 && (k & HEX_LETTER) === 0) nonHex = true;
  }
  if (seen === DIGIT) return '{n}';
  if ((seen & DIGIT) === 0) return undefined;
  if (!nonHex && len >= HEX_ID_LENGTH) return '{id}';
  if (len >= MIXED_ID_LENGTH) return '{id}';
  return undefined;
}

/** Whether `s[start, end)` is a UUID (8-4-4-4-12 hex digits): its `-`s would otherwise split it. */
function isUuid(s: string, start: number, end: number): boolean {
  if (end - start !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const c = s.charCodeAt(start + i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 0x2d) return false;
    } else if (c >= 128 || ((CLASS[c]! & DIGIT) === 0 && (CLASS[c]! & HEX_LETTER) === 0)) return false;
  }
  return true;
}

/** Appends the generalized `s[start, end)` (a path segment or a query value) to `out`; returns whether anything was generalized. */
function generalize(s: string, start: number, end: number, out: string[]): boolean {
  if (isUuid(s, start, end)) {
    out.push('{id}');
    return true;
  }
  let changed = false;
  let tokenStart = start;
  let copiedTo = start;
  for (let i = start; i <= end; i++) {
    const c = i === end ? 0x20 : s.charCodeAt(i);
    if (c >= 128 || SEPARATOR[c] !== 1) continue;
    const kind = classifyToken(s, tokenStart, i);
    if (kind !== undefined) {
      if (tokenStart > copiedTo) out.push(s.slice(copiedTo, tokenStart));
      out.push(kind);
      copiedTo = i;
      changed = true;
    }
    tokenStart = i + 1;
  }
  if (end > copiedTo) out.push(s.slice(copiedTo, end));
  return changed;
}

/** The template of a URL already parsed into `shape` (one scan of its path and query). */
export function urlTemplate(shape: Pick<UrlShape, 'pathname' | 'search'>): UrlTemplate {
  const out: string[] = [];
  let templated = false;
  const path = shape.pathname;
  let segStart = 0;
  for (let i = 0; i <= path.length; i++) {
    if (i < path.length && path.charCodeAt(i) !== 0x2f) continue;
    if (i > segStart) templated = generalize(path, segStart, i, out) || templated;
    if (i < path.length) out.push('/');
    segStart = i + 1;
  }
  const q = shape.search;
  if (q.length > 1) {
    out.push('?');
    let start = 1;
    for (let i = 1; i <= q.length; i++) {
      if (i < q.length && q.charCodeAt(i) !== 0x26) continue;
      const eq = q.indexOf('=', start);
      if (eq === -1 || eq > i) out.push(q.slice(start, i));
      else {
        out.push(q.slice(start, eq + 1));
        templated = generalize(q, eq + 1, i, out) || templated;
      }
      if (i < q.length) out.push('&');
      start = i + 1;
    }
  }
  return { template: out.join(''), templated };
}

/** 32-bit FNV-1a of a host and a template: the key a template is counted under. */
export function templateKey(host: string, template: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < host.length; i++) h = Math.imul(h ^ host.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ 0x20, 0x01000193);
  for (let i = 0; i < template.length; i++) h = Math.imul(h ^ template.charCodeAt(i), 0x01000193);
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
