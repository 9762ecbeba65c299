import robotsParserModule from 'robots-parser';
import type { SiteSpec } from './sites.js';
import { originRobots, type Scheme } from './origins.js';
import type { RequestLogEntry } from './synthetic-web.js';

// robots-parser is CommonJS whose typings declare an ES default export; the default import is the function
const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default;

export type ViolationKind =
  'overlap' | 'gap' | 'robots-not-first' | 'disallowed-fetched' | 'retry-after' | 'robots-unavailable-fetched';

export interface Violation {
  kind: ViolationKind;
  host: string;
  /** The offending request's `seq`. */
  seq: number;
  detail: string;
}

export interface PolitenessReport {
  requests: number;
  hosts: number;
  violations: Violation[];
  /** minGapMs: smallest `start − end of the previous request` seen, negative on overlap; null below 2 requests. */
  perHost: Record<string, { requests: number; minGapMs: number | null }>;
}

export interface PolitenessOptions {
  /** Floor of the gap between two requests to a host, in ms; default 1000. */
  minGapMs?: number;
  /** The gap must also be ≥ this × the previous request's duration; default 10. */
  slowFactor?: number;
  /** Product token matched against robots.txt groups; default `*`. */
  userAgent?: string;
}

interface OriginRules {
  /** Defined when robots.txt (after its redirects) answers 2xx. */
  isAllowed?: (path: string) => boolean;
  crawlDelayMs: number;
  /** robots.txt is unavailable (5xx, 429, too many redirects, a loop): nothing but robots.txt may be requested. */
  unavailable: boolean;
}

/**
 * Judges a crawl from the server's request log alone, host by host, requests ordered by start.
 * Timing is per host, whatever the scheme; robots.txt is per origin (the request's scheme and
 * host, RFC 9309):
 * - overlap: a request starts before an earlier one to the host has ended;
 * - gap: start − previous end < max(minGapMs, slowFactor × previous duration, Crawl-delay);
 * - robots-not-first: an origin's first request is not `/robots.txt`;
 * - disallowed-fetched: a path the robots.txt of the request's origin (after its redirects)
 *   disallows for `userAgent` was requested;
 * - retry-after: a request started before end + Retry-After of an earlier response;
 * - robots-unavailable-fetched: a non-robots request to an origin whose robots.txt is
 *   unavailable (5xx, 429, more than five redirects, a loop).
 * The requests of a robots.txt redirect chain count as robots.txt requests, on whatever host.
 * Robots rules come from `sites`; hosts not in `sites` (logged 404s) are judged on timing and
 * robots-first only. An overlapping pair is reported as overlap, not also as gap.
 */
export function checkPoliteness(
  log: RequestLogEntry[],
  sites: readonly SiteSpec[],
  options: PolitenessOptions = {},
): PolitenessReport {
  const minGapMs = options.minGapMs ?? 1000;
  const slowFactor = options.slowFactor ?? 10;
  const userAgent = options.userAgent ?? '*';
  const siteByHost = new Map(sites.map((s) => [s.host, s]));

  const byHost = new Map<string, RequestLogEntry[]>();
  for (const entry of log) {
    const list = byHost.get(entry.host);
    if (list === undefined) byHost.set(entry.host, [entry]);
    else list.push(entry);
  }

  // a hop of one origin's robots.txt chain may be a request on another origin, or another host
  const chainRequests = new Set<string>();
  for (const site of sites)
    for (const scheme of ['http', 'https'] as const)
      for (const c of originRobots(site, scheme, sites).chain) chainRequests.add(`${c.scheme} ${c.host} ${c.path}`);

  const violations: Violation[] = [];
  const perHost: PolitenessReport['perHost'] = {};
  for (const host of [...byHost.keys()].sort()) {
    const entries = byHost
      .get(host)!
      .slice()
      .sort((a, b) => a.start - b.start || a.seq - b.seq);
    const site = siteByHost.get(host);
    const bySchemes = new Map<Scheme, OriginRules>();
    const rulesOf = (scheme: Scheme): OriginRules => {
      let rules = bySchemes.get(scheme);
      if (rules === undefined) bySchemes.set(scheme, (rules = originRules(site, scheme, sites, userAgent)));
      return rules;
    };
    const flag = (kind: ViolationKind, e: RequestLogEntry, detail: string): void => {
      violations.push({ kind, host, seq: e.seq, detail });
    };

    const robotsRequest = (e: RequestLogEntry): boolean =>
      e.path === '/robots.txt' || chainRequests.has(`${e.scheme ?? 'http'} ${e.host} ${e.path}`);
    // an origin's first request other than robots.txt (or a hop of a robots.txt chain) must come after its robots.txt
    const robotsAsked = new Set<Scheme>();
    for (const e of entries) {
      const scheme = e.scheme ?? 'http';
      if (e.path === '/robots.txt') robotsAsked.add(scheme);
      else if (!robotsAsked.has(scheme) && !robotsRequest(e)) {
        flag('robots-not-first', e, `first request to ${scheme}://${host} was ${e.method} ${e.path}`);
        robotsAsked.add(scheme);
      }
    }
    const hostCrawlDelayMs = Math.max(
      ...[...new Set(entries.map((e) => e.scheme ?? 'http'))].map((s) => rulesOf(s).crawlDelayMs),
    );

    let minGap: number | null = null;
    let prev: RequestLogEntry | undefined; // the earlier request that ended last
    let notBefore = -Infinity;
    let notBeforeSeq = 0;
    for (const e of entries) {
      if (!robotsRequest(e)) {
        const rules = rulesOf(e.scheme ?? 'http');
        const where = `${e.scheme ?? 'http'}://${host}`;
        if (rules.unavailable)
          flag('robots-unavailable-fetched', e, `${e.path} requested while robots.txt of ${where} is unavailable`);
        else if (rules.isAllowed !== undefined && !rules.isAllowed(e.path))
          flag('disallowed-fetched', e, `${e.path} is disallowed by robots.txt of ${where}`);
      }
      if (prev !== undefined) {
        const gap = e.start - prev.end;
        minGap = minGap === null ? gap : Math.min(minGap, gap);
        const needed = Math.max(minGapMs, slowFactor * (prev.end - prev.start), hostCrawlDelayMs);
        if (gap < 0) flag('overlap', e, `started ${ms(-gap)} before #${prev.seq} ended`);
        else if (gap < needed) flag('gap', e, `${ms(gap)} after #${prev.seq} ended; needs ${ms(needed)}`);
      }
      if (e.start < notBefore)
        flag('retry-after', e, `started ${ms(notBefore - e.start)} before Retry-After of #${notBeforeSeq} expired`);
      if (e.retryAfterSec !== undefined && e.end + e.retryAfterSec * 1000 > notBefore) {
        notBefore = e.end + e.retryAfterSec * 1000;
        notBeforeSeq = e.seq;
      }
      if (prev === undefined || e.end >= prev.end) prev = e;
    }
    perHost[host] = { requests: entries.length, minGapMs: minGap };
  }

  violations.sort((a, b) => a.seq - b.seq);
  return { requests: log.length, hosts: byHost.size, violations, perHost };
}

/** The rules of `scheme://site.host` as the web serves its robots.txt, redirects followed (origins.ts). */
function originRules(
  site: SiteSpec | undefined,
  scheme: Scheme,
  sites: readonly SiteSpec[],
  userAgent: string,
): OriginRules {
  if (site === undefined) return { crawlDelayMs: 0, unavailable: false };
  const { rules } = originRobots(site, scheme, sites);
  if (rules.kind === 'unavailable') return { crawlDelayMs: 0, unavailable: true };
  if (rules.kind === 'allow-all') return { crawlDelayMs: 0, unavailable: false };
  const origin = rules.origin;
  const parsed = robotsParser(`${origin}/robots.txt`, rules.body);
  return {
    isAllowed: (path) =>
      parsed.isAllowed(path.startsWith('/') ? origin + path : `${origin}/${path}`, userAgent) !== false,
    crawlDelayMs: (parsed.getCrawlDelay(userAgent) ?? 0) * 1000,
    unavailable: false,
  };
}

/** A line per host (requests, smallest gap, violations), the violations, then the verdict. */
export function formatPolitenessReport(r: PolitenessReport): string {
  const lines = [`politeness: ${r.requests} requests to ${r.hosts} hosts`];
  const width = Math.max(4, ...Object.keys(r.perHost).map((h) => h.length));
  for (const [host, stats] of Object.entries(r.perHost)) {
    const count = r.violations.filter((v) => v.host === host).length;
    const gap = stats.minGapMs === null ? 'min gap -' : `min gap ${ms(stats.minGapMs)}`;
    lines.push(
      `  ${host.padEnd(width)}  ${String(stats.requests).padStart(4)} requests  ${gap}  ${count === 0 ? 'ok' : `${count} violations`}`,
    );
  }
  for (const v of r.violations) lines.push(`  ${v.kind} ${v.host} #${v.seq}: ${v.detail}`);
  if (r.violations.length === 0) {
    lines.push('verdict: POLITE (0 violations)');
  } else {
    const counts = new Map<ViolationKind, number>();
    for (const v of r.violations) counts.set(v.kind, (counts.get(v.kind) ?? 0) + 1);
    const summary = [...counts].map(([kind, n]) => `${kind} ${n}`).join(', ');
    lines.push(`verdict: IMPOLITE (${r.violations.length} violations: ${summary})`);
  }
  return lines.join('\n');
}

function ms(value: number): string {
  return `${Math.round(value)} ms`;
}
