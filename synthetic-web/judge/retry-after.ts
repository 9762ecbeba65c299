import type { RequestLogEntry } from '../request-log.js';

/**
 * When the Retry-After of a response lets the next request to its host start (RFC 9110 §10.2.3),
 * or undefined when it sent none, or one that is neither form (which counts as none). Seconds
 * count from the response's end; an HTTP-date is a time of its own. The wait is capped at
 * `capMs` after the end, as the crawler caps it (`--backoff-max`). Logs written before the raw
 * value was logged carry only `retryAfterSec`.
 */
export function retryAfterUntil(e: RequestLogEntry, capMs: number): number | undefined {
  const raw = e.retryAfter?.trim() ?? (e.retryAfterSec !== undefined ? String(e.retryAfterSec) : undefined);
  if (raw === undefined) return undefined;
  let until: number;
  if (/^\d+$/.test(raw)) until = e.end + Number(raw) * 1000;
  else {
    const at = parseHttpDate(raw);
    if (at === undefined) return undefined;
    until = at;
  }
  return Math.min(until, e.end + capMs);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * An HTTP-date (RFC 9110 §5.6.7) as epoch ms: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), or
 * the obsolete RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`)
 * forms recipients must accept.
 */
export function parseHttpDate(text: string): number | undefined {
  const time = '(\\d{2}):(\\d{2}):(\\d{2})';
  const month = `(${MONTHS.join('|')})`;
  let m = new RegExp(`^[A-Z][a-z]{2}, (\\d{2}) ${month} (\\d{4}) ${time} GMT$`).exec(text);
  if (m) return utc(Number(m[3]), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = new RegExp(`^[A-Z][a-z]{5,8}, (\\d{2})-${month}-(\\d{2}) ${time} GMT$`).exec(text);
  if (m) {
    // RFC 9110: a two-digit year more than 50 years in the future is in the past century
    const yy = Number(m[3]);
    const thisYear = new Date().getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + yy;
    if (year > thisYear + 50) year -= 100;
    return utc(year, m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  }
  m = new RegExp(`^[A-Z][a-z]{2} ${month} ([ \\d]\\d) ${time} (\\d{4})$`).exec(text);
  if (m) return utc(Number(m[6]), m[1]!, Number(m[2]!.trim()), m[3]!, m[4]!, m[5]!);
  return undefined;
}

function utc(year: number, month: string, day: number, h: string, min: string, s: string): number | undefined {
  const t = Date.UTC(year, MONTHS.indexOf(month), day, Number(h), Number(min), Number(s));
  return Number.isNaN(t) || new Date(t).getUTCDate() !== day ? undefined : t;
}
