import type { RequestLogEntry } from '../../synthetic-web/request-log.js';
import type { PolitenessReport, Violation } from '../../synthetic-web/judge/types.js';

/** Cumulative counts of one histogram by upper bound (`le`, seconds; Infinity for +Inf), as Prometheus exposes them. */
export type Buckets = Map<number, number>;

/** The cumulative buckets of `crawlstream_commit_duration_seconds` in one /metrics text (empty when absent). */
export function parseCommitBuckets(metrics: string): Buckets {
  const buckets: Buckets = new Map();
  for (const m of metrics.matchAll(/^crawlstream_commit_duration_seconds_bucket\{[^}]*le="([^"]+)"[^}]*\} (\S+)$/gm))
    buckets.set(m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2]));
  return buckets;
}

/** Adds `more` into `into` bucket by bucket (two lives of one instance, or two instances). */
export function addBuckets(into: Buckets, more: Buckets): void {
  for (const [le, n] of more) into.set(le, (into.get(le) ?? 0) + n);
  const sorted = [...into].sort(([a], [b]) => a - b);
  into.clear();
  for (const [le, n] of sorted) into.set(le, n);
}

/**
 * The least bucket bound at or under which a `q` share of the observations fell: the quantile is
 * at most that. Undefined with no observations.
 */
export function commitQuantile(buckets: Buckets, q: number): number | undefined {
  const total = buckets.get(Infinity) ?? 0;
  if (total === 0) return undefined;
  for (const [le, n] of [...buckets].sort(([a], [b]) => a - b)) if (n >= q * total) return le;
  return Infinity;
}

/**
 * The longest time between consecutive request starts over [from, to], counting from the last
 * request before `from` and up to the first after `to` (a stop that spans an end counts whole);
 * `from` itself is where the gap ran from.
 */
export function longestGap(starts: readonly number[], from: number, to: number): { ms: number; from: number } {
  const sorted = [...starts].sort((a, b) => a - b);
  let first = sorted.findIndex((s) => s >= from);
  if (first < 0) first = sorted.length;
  const lo = Math.max(0, first - 1);
  let hi = sorted.findIndex((s) => s > to);
  if (hi < 0) hi = sorted.length - 1;
  let best = { ms: 0, from };
  for (let i = lo + 1; i <= hi; i++) {
    const gap = sorted[i]! - sorted[i - 1]!;
    if (gap > best.ms) best = { ms: gap, from: sorted[i - 1]! };
  }
  return best;
}

/** A judge's violation with the requests it names: its own (`seq`) and each `#N` its detail cites. */
export interface ViolationWithRequests {
  readonly violation: Violation;
  readonly requests: readonly RequestLogEntry[];
}

/** Each violation of `report` beside the log entries of the requests it names, for reading against another log. */
export function violationsWithRequests(
  report: PolitenessReport,
  log: readonly RequestLogEntry[],
): ViolationWithRequests[] {
  const bySeq = new Map(log.map((r) => [r.seq, r]));
  return report.violations.map((violation) => {
    const cited = [...violation.detail.matchAll(/#(\d+)/g)].map((m) => Number(m[1]));
    const seqs = [...new Set([...cited, violation.seq])].sort((a, b) => a - b);
    return { violation, requests: seqs.flatMap((s) => bySeq.get(s) ?? []) };
  });
}
