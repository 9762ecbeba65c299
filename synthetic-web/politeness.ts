import robotsParserModule from 'robots-parser';
import type { SiteSpec } from './sites.js';
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

interface HostRules {
  /** Defined when robots.txt answers 2xx. */
  isAllowed?: (path: string) => boolean;
  crawlDelayMs: number;
  /** robots.txt answers 5xx: nothing but robots.txt may be requested. */
  unavailable: boolean;
}

/**
 * Judges a crawl from the server's request log alone, host by host, requests ordered by start:
 * - overlap: a request starts before an earlier one to the host has ended;
 * - gap: start − previous end < max(minGapMs, slowFactor × previous duration, Crawl-delay);
 * - robots-not-first: the host's first request is not `/robots.txt`;
 * - disallowed-fetched: a path the site's robots.txt disallows for `userAgent` was requested;
 * - retry-after: a request started before end + Retry-After of an earlier response;
 * - robots-unavailable-fetched: a non-robots request to a host whose robots.txt answers 5xx.
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

  const violations: Violation[] = [];
  const perHost: PolitenessReport['perHost'] = {};
  for (const host of [...byHost.keys()].sort()) {
    const entries = byHost
      .get(host)!
      .slice()
      .sort((a, b) => a.start - b.start || a.seq - b.seq);
    const rules = hostRules(siteByHost.get(host), userAgent);
    const flag = (kind: ViolationKind, e: RequestLogEntry, detail: string): void => {
      violations.push({ kind, host, seq: e.seq, detail });
    };

    const first = entries[0]!;
    if (first.path !== '/robots.txt')
      flag('robots-not-first', first, `first request was ${first.method} ${first.path}`);

    let minGap: number | null = null;
    let prev: RequestLogEntry | undefined; // the earlier request that ended last
    let notBefore = -Infinity;
    let notBeforeSeq = 0;
    for (const e of entries) {
      if (e.path !== '/robots.txt') {
        if (rules.unavailable)
          flag('robots-unavailable-fetched', e, `${e.path} requested while robots.txt answers 5xx`);
        else if (rules.isAllowed !== undefined && !rules.isAllowed(e.path))
          flag('disallowed-fetched', e, `${e.path} is disallowed by robots.txt`);
      }
      if (prev !== undefined) {
        const gap = e.start - prev.end;
        minGap = minGap === null ? gap : Math.min(minGap, gap);
        const needed = Math.max(minGapMs, slowFactor * (prev.end - prev.start), rules.crawlDelayMs);
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

function hostRules(site: SiteSpec | undefined, userAgent: string): HostRules {
  const robots = site?.robots;
  if (site === undefined || robots === undefined || (robots.status >= 400 && robots.status < 500)) {
    return { crawlDelayMs: 0, unavailable: false };
  }
  if (robots.status >= 500) return { crawlDelayMs: 0, unavailable: true };
  if (robots.status < 200 || robots.status >= 300) return { crawlDelayMs: 0, unavailable: false };
  const origin = `http://${site.host}`;
  const parsed = robotsParser(`${origin}/robots.txt`, robots.body);
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
