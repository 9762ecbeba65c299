import { InvalidOptionError } from '../core/errors.js';
import type { TaskStatus } from '../runtime/engine.js';
import type { HostView, OutcomeView, SiteStatus } from '../processors/frontier/site-status.js';
import { requireSettings, resolveSettings } from './config-sources.js';
import { commandUsage } from './usage.js';

export const STATUS_USAGE = commandUsage(
  'status',
  ['[SITE] --ops URL [--json]'],
  `  asks a running crawl's operations endpoint (the --metrics-port of 'crawl' or 'run') what it
  is doing. Without SITE: the engine, its tasks and their states, and totals. With SITE (a
  registered domain, e.g. example.com): per host of the site its phase (in-flight, parked, held,
  backed-off, waiting, ready, idle), queued URLs, next eligible time, back-off, robots.txt per
  origin, and its last fetch outcomes; the site's budget, templates and operator control.

  On Kafka only the instance owning the site's partition knows it: another one says which
  partition that is (exit 3); ask the instance whose /status lists that frontier partition.

  exit status: 0 answered; 1 unreachable or failed; 2 bad usage; 3 site partition not owned
  there; 4 the owning task cannot answer yet (restoring)`,
);

interface StatusArgs {
  readonly site: string | undefined;
  readonly ops: string;
  readonly json: boolean;
}

/** The status command's settings (file < env < flags); throws InvalidOptionError on a refusal. */
function parseStatusArgs(args: readonly string[], env: NodeJS.ProcessEnv): StatusArgs {
  const resolved = resolveSettings(args, env, STATUS_USAGE, 'status');
  const [site, extra] = resolved.positionals;
  if (extra !== undefined) throw new InvalidOptionError(`one SITE at most, got ${site} and ${extra}`);
  requireSettings(resolved, 'status', STATUS_USAGE);
  const ops = resolved.values.get('ops')!.value as string;
  const base = /^[a-z]+:\/\//i.test(ops) ? ops : `http://${ops}`;
  try {
    const url = new URL(base);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
  } catch {
    throw new InvalidOptionError(`--ops must be an http(s) URL, got ${JSON.stringify(ops)}`);
  }
  return { site, ops: base.replace(/\/+$/, ''), json: resolved.values.get('json')?.value === true };
}

/**
 * `crawlstream status [SITE] --ops URL [--json]`: prints `/status` or `/status/site/SITE` of a
 * running crawl's operations endpoint as tables, or its JSON. Returns the exit status (see usage).
 */
export async function runStatus(
  args: readonly string[],
  out: (line: string) => void,
  err: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const parsed = parseStatusArgs(args, env);
  const path = parsed.site === undefined ? '/status' : `/status/site/${encodeURIComponent(parsed.site)}`;
  let status: number;
  let body: Record<string, unknown>;
  try {
    const res = await fetch(`${parsed.ops}${path}`, { signal: AbortSignal.timeout(15_000) });
    status = res.status;
    const text = await res.text();
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      err(`crawlstream status: ${parsed.ops}${path} answered ${status} without JSON: ${text.trim().slice(0, 200)}`);
      return 1;
    }
  } catch (e) {
    err(`crawlstream status: cannot reach ${parsed.ops}: ${(e as Error).message}`);
    return 1;
  }
  if (parsed.json) out(JSON.stringify(body, null, 2));
  else if (status === 200)
    for (const line of parsed.site === undefined ? engineTable(body) : siteTable(body)) out(line);
  if (status === 200) return 0;
  const why = typeof body['error'] === 'string' ? body['error'] : `HTTP ${status}`;
  if (!parsed.json) err(`crawlstream status: ${why}`);
  if (status === 421) return 3;
  if (status === 503) return 4;
  if (status === 400) return 2;
  return 1;
}

/** Rows as aligned columns, two spaces apart. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** `in 4.2 s (14:03:05Z)`, `now`, or `3.0 s ago`. */
function when(at: number, now: number): string {
  const d = at - now;
  if (Math.abs(d) < 50) return 'now';
  const s = `${(Math.abs(d) / 1000).toFixed(1)} s`;
  return d > 0 ? `in ${s} (${iso(at).slice(11)})` : `${s} ago`;
}

function engineTable(body: Record<string, unknown>): string[] {
  const tasks = (body['tasks'] ?? []) as TaskStatus[];
  const totals = (body['totals'] ?? {}) as Record<string, unknown>;
  const yes = (v: unknown) => (v === true ? 'yes' : 'no');
  const lines = [
    `engine ${String(body['engine'])}  instance ${String(body['instance'])}  state ${String(body['state'])}  live ${yes(body['live'])}  ready ${yes(body['ready'])}  at ${iso(Number(body['now']))}`,
    '',
    ...table(
      ['TASK', 'PROCESSORS', 'PARTITION', 'STATE'],
      tasks.map((t) => [t.task, t.processors.join('+'), String(t.partition), t.state]),
    ),
    '',
  ];
  const byState = (totals['tasksByState'] ?? {}) as Record<string, number>;
  const states = Object.entries(byState)
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');
  lines.push(`tasks: ${String(totals['tasks'] ?? 0)}${states ? ` (${states})` : ''}`);
  const rest = Object.entries(totals).filter(([k]) => k !== 'tasks' && k !== 'tasksByState');
  lines.push(
    ...table(
      ['TOTAL', 'VALUE'],
      rest.map(([k, v]) => [k, String(v)]),
    ),
  );
  return lines;
}

function backoffText(h: HostView): string {
  if (h.backoff === null) return '-';
  const b = h.backoff;
  return b.active ? `until ${iso(b.until).slice(11)}: ${b.why}` : `ended: ${b.why}`;
}

function robotsText(h: HostView): string {
  if (h.robots.length === 0) return 'not fetched';
  return h.robots
    .map(
      (r) =>
        `${r.origin} ${r.state}${r.ageMs !== null ? ` ${(r.ageMs / 1000).toFixed(0)} s old` : ''}` +
        `${r.failures > 0 ? ` ${r.failures} failures` : ''}${r.due ? ' (due)' : ''}`,
    )
    .join('; ');
}

function outcomeText(o: OutcomeView, now: number): string {
  const result = o.errorCode ?? `HTTP ${o.status}`;
  const retry = o.retryAfterMs !== null ? ` Retry-After ${Math.round(o.retryAfterMs / 1000)} s` : '';
  return `${when(o.at, now)}  ${o.kind} ${result}${retry}  ${o.url}`;
}

function siteTable(body: Record<string, unknown>): string[] {
  const s = body['status'] as SiteStatus;
  const now = s.now;
  const lines = [
    `site ${s.site}  (${String(body['engine'])}, task ${String(body['task'])}, partition ${String(body['partition'])})  at ${iso(now)}`,
  ];
  const b = s.budget;
  lines.push(
    b === null
      ? 'budget: no URL of this site admitted yet'
      : `budget: ${b.admitted} of ${b.budget} admitted this cycle${b.cycleStartedAt > 0 ? ` (since ${iso(b.cycleStartedAt)})` : ''}, ` +
          `${b.linkingSites} linking sites${b.seeded ? ', seeded' : ''}${b.dupCut ? ', CUT: mostly duplicates' : ''}`,
  );
  const c = s.control;
  const control =
    c === null ? [] : [c.blocked && 'blocked', c.paused && 'paused', c.minGapMs > 0 && `slow ${c.minGapMs} ms`];
  lines.push(`control: ${control.filter(Boolean).join(', ') || 'none'}`);
  if (s.templates !== null)
    lines.push(
      `templates: ${s.templates.tracked} counters, ${s.templates.demoting} demoting, ${s.templates.dropping} dropping`,
    );
  const bands = Object.entries(s.deferred.byBand)
    .filter(([, n]) => n > 0)
    .map(([band, n]) => `${band} ${n}`)
    .join(', ');
  lines.push(
    `deferred: ${s.deferred.partitionTotal} URLs wait for a host slot in this partition's front queues (all its sites)${bands ? `: ${bands}` : ''}`,
  );
  lines.push(`queued: ${s.queued} URLs in ${s.hosts.length} of ${s.hostsTotal} hosts listed`, '');
  if (s.hosts.length === 0) lines.push('no host of this site is known to its frontier task');
  else {
    lines.push(
      ...table(
        ['HOST', 'PHASE', 'QUEUED', 'NEXT ELIGIBLE', 'BACK-OFF', 'PARKED', 'ROBOTS'],
        s.hosts.map((h) => [
          h.host,
          h.phase,
          String(h.queued),
          h.nextEligibleAt === null ? '-' : when(h.nextEligibleAt, now),
          backoffText(h),
          h.parkedReason ?? '-',
          robotsText(h),
        ]),
      ),
    );
    const outcomes = s.hosts.filter((h) => h.lastOutcomes.length > 0);
    if (outcomes.length > 0) {
      lines.push('', 'last outcomes:');
      for (const h of outcomes) for (const o of h.lastOutcomes) lines.push(`  ${h.host}  ${outcomeText(o, now)}`);
    }
  }
  return lines;
}
