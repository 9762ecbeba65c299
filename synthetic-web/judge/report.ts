import { ms, type PolitenessReport, type ViolationKind } from './types.js';

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
