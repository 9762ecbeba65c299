import { Controls } from './judge/controls.js';
import { judgeHost } from './judge/host-rules.js';
import { judgeIps } from './judge/ip-rules.js';
import { RobotsAnswers } from './judge/robots-answers.js';
import { byStart, judgeOptions, type PolitenessOptions, type PolitenessReport, type Violation } from './judge/types.js';
import type { SiteSpec } from './sites.js';
import type { RequestLogEntry } from './request-log.js';

export { formatPolitenessReport } from './judge/report.js';
export type { ControlEvent, PolitenessOptions, PolitenessReport, Violation, ViolationKind } from './judge/types.js';

/**
 * Judges a crawl from the server's request log alone, each rule a violation kind. Every limit is
 * an option defaulting to the crawler's default (judge/types.ts). Timing is per host, whatever
 * the scheme, requests in start order; robots.txt is per origin (scheme and host, RFC 9309),
 * its answers read from the log (judge/robots-answers.ts) and its rules from `sites` with the
 * judge's own RFC 9309 matcher (robots-rfc9309.ts), never the crawler's parser.
 *
 * Per host:
 * - overlap: a request starts before an earlier one to the host has ended;
 * - gap: start − previous end < max(minGapMs, slowFactor × previous duration, Crawl-delay of
 *   the host's origins' latest robots.txt, capped at maxCrawlDelayMs);
 * - retry-after: a request starts before a 429/503's Retry-After (seconds from its end, or an
 *   HTTP-date; capped at backoffMaxMs) has passed;
 * - backoff: a request starts before end + backoffMs × 2^(n−1) (capped at backoffMaxMs) of the
 *   n-th 429/503 without a usable Retry-After in a row (a row ends after backoffQuietMs without
 *   429/503) to a page, not a robots.txt request;
 * - robots-retry: a robots.txt request starts before end + robotsRetryMs × 2^(n−1) (capped) of
 *   the n-th 429/5xx/unanswered robots.txt of its origin in a row;
 * - robots-refetched: a robots.txt request starts less than robotsTtlMs after the start of the
 *   request of its origin's latest answer, and that answer was available (rules or allow-all) and
 *   not possibly lost by a kill of the crawler (`crashes`: a kill after it was asked and less than
 *   crashGraceMs after it ended).
 * Per origin, for every request that is not robots.txt or a hop of a robots.txt redirect chain:
 * - robots-not-first: no robots.txt answer of the origin was complete when it started;
 * - robots-unavailable-fetched: the latest answer was unavailable (429, 5xx, no answer, a failed
 *   redirect chain), so nothing but robots.txt may be requested until it answers again;
 * - robots-expired: it started more than robotsTtlMs after the latest answer was complete;
 * - disallowed-fetched: the latest answer's rules disallow its path for `userAgent`.
 * Per address (only with `ipOf`; judge/ip-rules.ts): ip-concurrency, ip-gap.
 * After operator controls (judge/controls.ts; a command binds from its time plus controlGraceMs):
 * control-blocked and control-paused (any request to a host of the site), control-slow (a gap
 * under the SLOW's minGapMs).
 * The requests of a robots.txt redirect chain count as robots.txt requests, on whatever host.
 * An overlapping pair is reported as overlap, not also as gap.
 */
export function checkPoliteness(
  log: RequestLogEntry[],
  sites: readonly SiteSpec[],
  options: PolitenessOptions = {},
): PolitenessReport {
  const o = judgeOptions(options);
  const answers = new RobotsAnswers(log, sites);
  const controls = new Controls(o.controls, o.controlGraceMs);

  const byHost = new Map<string, RequestLogEntry[]>();
  for (const entry of log) {
    const list = byHost.get(entry.host);
    if (list === undefined) byHost.set(entry.host, [entry]);
    else list.push(entry);
  }

  const violations: Violation[] = [];
  const perHost: PolitenessReport['perHost'] = {};
  for (const host of [...byHost.keys()].sort()) {
    const entries = byHost.get(host)!.slice().sort(byStart);
    const minGapMs = judgeHost(host, entries, answers, controls, o, (kind, e, detail) =>
      violations.push({ kind, host, seq: e.seq, detail }),
    );
    perHost[host] = { requests: entries.length, minGapMs };
  }
  judgeIps(log, o, (kind, e, detail) => violations.push({ kind, host: e.host, seq: e.seq, detail }));

  violations.sort((a, b) => a.seq - b.seq);
  return { requests: log.length, hosts: byHost.size, violations, perHost };
}
