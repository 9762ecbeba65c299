/**
 * The date of a sitemap `<lastmod>`, an RSS `<pubDate>` or `<dc:date>`, or an Atom `<updated>` or
 * `<published>`, in epoch milliseconds, or null when absent or unparseable. Each field is read in
 * every form, as feeds in the wild mix them (ISO dates in `pubDate`, RFC 822 in `lastmod`):
 *
 * - W3C datetime (sitemaps, Atom's RFC 3339 is a subset): `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, and
 *   with `Thh:mm`, `Thh:mm:ss` or `Thh:mm:ss.s…` plus a zone `Z` or `±hh:mm`. A date alone is
 *   midnight UTC; a time without a zone is taken as UTC; a space for the `T` and `±hhmm` are
 *   accepted.
 * - RFC 822 / RFC 1123 / RFC 2822 (RSS): `[Day,] DD Mon YYYY hh:mm[:ss] [zone]`, two-digit years
 *   as RFC 2822 reads them, the zones `UT GMT Z EST EDT CST CDT MST MDT PST PDT` and `±hhmm`; a
 *   missing or other zone name is taken as UTC (hours off at worst, which "changed since the last
 *   fetch" can afford).
 *
 * Out-of-range fields (month 13, 30 February, 25:00) give null. Dates in the future are returned as
 * they are: what to make of them is the caller's decision. Never throws.
 */
export function parseFeedDate(text: string | undefined): number | null {
  if (text === undefined) return null;
  const s = text.trim();
  if (s === '' || s.length > 64) return null;
  return parseW3cDate(s) ?? parseRfc822Date(s);
}

const W3C =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?[ ]?([Zz]|[+-]\d{2}:?\d{2})?)?)?)?$/;

/** A W3C datetime (https://www.w3.org/TR/NOTE-datetime), or null. */
export function parseW3cDate(s: string): number | null {
  const m = W3C.exec(s);
  if (m === null) return null;
  const [, year, month = '1', day = '1', hour = '0', minute = '0', second = '0', fraction, zone] = m;
  const ms = fraction === undefined ? 0 : Math.floor(Number(`0.${fraction}`) * 1000);
  const offset = zone === undefined ? 0 : zoneOffsetMinutes(zone);
  if (offset === undefined) return null;
  return utc(Number(year), Number(month), Number(day), Number(hour), Number(minute), Number(second), ms, offset);
}

const RFC822 =
  /^(?:[A-Za-z]{2,9},?\s*)?(\d{1,2})[\s-]+([A-Za-z]{3})[A-Za-z]*\.?[\s-]+(\d{4}|\d{2})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*([A-Za-z]{1,5}|[+-]\d{4}|[+-]\d{2}:\d{2}))?$/;

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

// RFC 822 §5.1's zone names; other names (military letters, CEST, …) read as UTC, see parseFeedDate
const ZONES: Record<string, number> = {
  ut: 0,
  utc: 0,
  gmt: 0,
  z: 0,
  est: -300,
  edt: -240,
  cst: -360,
  cdt: -300,
  mst: -420,
  mdt: -360,
  pst: -480,
  pdt: -420,
};

/** An RFC 822 / 1123 / 2822 date (`Sat, 07 Sep 2002 00:00:01 GMT`), or null. */
export function parseRfc822Date(s: string): number | null {
  const m = RFC822.exec(s);
  if (m === null) return null;
  const [, day, monthName, yearText, hour, minute, second = '0', zone] = m;
  const month = MONTHS.indexOf(monthName!.toLowerCase()) + 1;
  if (month === 0) return null;
  let year = Number(yearText);
  // RFC 2822 §4.3: two-digit years below 50 are 20xx
  if (yearText!.length === 2) year += year < 50 ? 2000 : 1900;
  let offset = 0;
  if (zone !== undefined) {
    offset = /^[+-]/.test(zone) ? (zoneOffsetMinutes(zone) ?? NaN) : (ZONES[zone.toLowerCase()] ?? 0);
    if (Number.isNaN(offset)) return null;
  }
  return utc(year, month, Number(day), Number(hour), Number(minute), Number(second), 0, offset);
}

/** Minutes east of UTC of `Z`, `±hh:mm` or `±hhmm`; undefined when out of range. */
function zoneOffsetMinutes(zone: string): number | undefined {
  if (zone === 'Z' || zone === 'z') return 0;
  const digits = zone.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2, 4));
  if (hours > 23 || minutes > 59) return undefined;
  return (zone[0] === '-' ? -1 : 1) * (hours * 60 + minutes);
}

function utc(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  ms: number,
  offsetMinutes: number,
): number | null {
  // Date.UTC reads years 0–99 as 19xx
  if (year < 100 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) return null;
  // a leap second is read as the second before it
  const t = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59), ms);
  // Date.UTC rolls 30 February over into March: a day the month does not have is refused
  if (new Date(t).getUTCDate() !== day) return null;
  return t - offsetMinutes * 60_000;
}
