import type { FetchResult, HostState, SiteControl, SiteState } from '../../schemas/types.js';
import { BANDS } from './front-queues.js';
import type { ActiveHosts } from './host-slots.js';

/** The frontier's query (`Engine.query`, processor `frontier`): one site's state in this task, by registered domain. */
export const SITE_QUERY = 'site';

/** Hosts of one site a status lists at most (the rest are counted in `hostsTotal`). */
export const MAX_STATUS_HOSTS = 50;
/** Outcomes kept per host, and hosts kept, by `RecentOutcomes`. */
const OUTCOMES_PER_HOST = 5;
const OUTCOME_HOSTS = 4_096;

/** One fetch result as a status shows it. */
export interface OutcomeView {
  readonly at: number;
  readonly url: string;
  readonly kind: string;
  readonly status: number;
  readonly errorCode: string | null;
  readonly retryAfterMs: number | null;
}

/**
 * The last few fetch results of recently answered hosts, in memory only (a restart forgets them):
 * at most OUTCOMES_PER_HOST per host and OUTCOME_HOSTS hosts, the least recently answered
 * forgotten first. What an operator asks first of a stuck host: what did it last answer?
 */
export class RecentOutcomes {
  private readonly byHost = new Map<string, OutcomeView[]>();

  note(result: FetchResult, at: number): void {
    const list = this.byHost.get(result.host) ?? [];
    this.byHost.delete(result.host); // re-inserted last: the Map's order is recency
    list.push({
      at,
      url: result.url,
      kind: result.kind,
      status: result.status,
      errorCode: result.errorCode,
      retryAfterMs: result.retryAfterMs,
    });
    if (list.length > OUTCOMES_PER_HOST) list.shift();
    this.byHost.set(result.host, list);
    if (this.byHost.size > OUTCOME_HOSTS) this.byHost.delete(this.byHost.keys().next().value!);
  }

  of(host: string): readonly OutcomeView[] {
    return this.byHost.get(host) ?? [];
  }
}

/** What the site view reads of a frontier task: its in-memory sets and a few point reads, no scans. */
export interface SiteStatusSource {
  readonly now: number;
  readonly robotsTtlMs: number;
  /** The task's hosts holding an active slot (in memory, bounded by the slots and parked hosts). */
  readonly activeHosts: ActiveHosts;
  host(host: string): HostState | undefined;
  isParked(host: string): boolean;
  isHeld(host: string): boolean;
  /** When the host may be fetched next, by the frontier's own rule (gap, back-off, park, slow, restart). */
  eligibleAt(state: HostState): number;
  /** The site's stored state (budget, templates, control), if it has one. */
  site(site: string): SiteState | undefined;
  budget(state: SiteState): number;
  /** --template-allowance and --template-allowance-per-inlink. */
  readonly templateAllowance: { readonly base: number; readonly perInlink: number };
  control(site: string): SiteControl | undefined;
  outcomes(host: string): readonly OutcomeView[];
  /** URLs waiting in this task's front queues, per band: for a slot, for every site of the partition. */
  frontBands(): readonly number[];
  /** Every URL in this task's host queues. */
  readonly backQueued: number;
}

export type HostPhase = 'in-flight' | 'parked' | 'held' | 'backed-off' | 'waiting' | 'ready' | 'idle';

export interface HostView {
  readonly host: string;
  /** What the host is doing now, the first that applies in this order. */
  readonly phase: HostPhase;
  readonly queued: number;
  readonly active: boolean;
  /** Why it is parked (robots.txt unavailable, connection errors) or held (site paused); null otherwise. */
  readonly parkedReason: string | null;
  /** Epoch ms of the next fetch it may make, when it has something to fetch; null otherwise. */
  readonly nextEligibleAt: number | null;
  readonly gapMs: number;
  readonly crawlDelayMs: number;
  readonly backoff: {
    readonly active: boolean;
    readonly since: number;
    readonly waitMs: number;
    readonly until: number;
    readonly why: string;
  } | null;
  readonly connErrors: number;
  readonly fetches: number;
  readonly lease: { readonly url: string; readonly kind: string; readonly issuedAt: number } | null;
  readonly robots: readonly {
    readonly origin: string;
    readonly state: string;
    readonly fetchedAt: number;
    /** ms since it was fetched; null when never. */
    readonly ageMs: number | null;
    /** Fetched again before the next URL of that origin (unknown, unavailable or older than --robots-ttl). */
    readonly due: boolean;
    readonly failures: number;
    readonly crawlDelayMs: number;
  }[];
  readonly lastOutcomes: readonly OutcomeView[];
}

/** One site's state in one frontier task, as `/status/site/NAME` answers it. */
export interface SiteStatus {
  readonly site: string;
  readonly now: number;
  /** URLs in the site's hosts' queues (listed hosts only). */
  readonly queued: number;
  readonly hostsTotal: number;
  readonly hosts: readonly HostView[];
  readonly budget: {
    readonly admitted: number;
    readonly budget: number;
    readonly cycleStartedAt: number;
    readonly linkingSites: number;
    readonly seeded: boolean;
    /** New URLs of the site are no longer admitted: its recent pages were mostly duplicates. */
    readonly dupCut: boolean;
  } | null;
  /**
   * The site's template counters (url-templates.ts) whose internal links passed half a template's
   * allowance (new URLs of it go to the lowest band) or all of it (dropped). A host's counter of
   * all its templated URLs together has three times that allowance, so it may show here early.
   */
  readonly templates: { readonly tracked: number; readonly demoting: number; readonly dropping: number } | null;
  readonly control: SiteControl | null;
  /**
   * URLs held back in this task's front queues until their host gets a slot, per band; they are
   * counted for the whole partition (all its sites): the frontier keeps no count per site.
   */
  readonly deferred: { readonly partitionTotal: number; readonly byBand: Readonly<Record<string, number>> };
  readonly partitionQueued: number;
}

/**
 * The site's hosts this task knows without a scan: its active hosts (an in-memory set), and the
 * site's apex and `www.` hosts read by key (kept when inactive, e.g. a host whose queue ran out).
 */
function hostsOf(src: SiteStatusSource, site: string, activeNames: ActiveHosts): HostState[] {
  const names = new Set<string>();
  const suffix = `.${site}`;
  for (const h of activeNames) if (h === site || h.endsWith(suffix)) names.add(h);
  names.add(site);
  names.add(`www.${site}`);
  const states: HostState[] = [];
  for (const name of names) {
    const s = src.host(name);
    if (s !== undefined && s.site === site) states.push(s);
  }
  return states.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
}

function hostView(
  src: SiteStatusSource,
  state: HostState,
  activeNames: ActiveHosts,
  control: SiteControl | undefined,
): HostView {
  const now = src.now;
  const queued = state.tailSeq - state.headSeq;
  const active = activeNames.has(state.host);
  const parked = src.isParked(state.host);
  // a paused or blocked site's hosts are held from the moment of the command (dispatch holds or drops them at their turn)
  const hasWork = queued > 0 || state.robotsHops.length > 0;
  const held = src.isHeld(state.host) || (hasWork && (control?.paused === true || control?.blocked === true));
  const unavailable = state.robots.filter((r) => r.state === 'UNAVAILABLE').map((r) => r.origin);
  let parkedReason: string | null = null;
  if (parked)
    parkedReason =
      state.parkedUntil > 0
        ? `${state.connErrors} connection errors in a row: parked until ${new Date(state.parkedUntil).toISOString()}`
        : unavailable.length > 0
          ? `robots.txt unavailable (${unavailable.join(', ')}): retried at the next eligible time`
          : 'parked';
  else if (held)
    parkedReason =
      control?.blocked === true
        ? 'site blocked by an operator: its queued URLs are dropped at their turn'
        : 'site paused by an operator';
  const outcomes = src.outcomes(state.host);
  let backoff: HostView['backoff'] = null;
  if (state.lastBackoffAt > 0) {
    const until = Math.max(state.lastBackoffAt + state.backoffMs, state.nextEligibleAt);
    const last = [...outcomes].reverse().find((o) => o.status === 429 || o.status === 503);
    const why = last
      ? `HTTP ${last.status}${last.retryAfterMs !== null ? ` with Retry-After ${Math.round(last.retryAfterMs / 1000)} s` : ''}`
      : 'HTTP 429 or 503';
    backoff = { active: until > now, since: state.lastBackoffAt, waitMs: state.backoffMs, until, why };
  } else if (state.connErrors >= 2) {
    backoff = {
      active: state.nextEligibleAt > now,
      since: 0,
      waitMs: 0,
      until: state.nextEligibleAt,
      why: `${state.connErrors} connection errors in a row`,
    };
  }
  const nextEligibleAt = hasWork && state.lease === null ? src.eligibleAt(state) : null;
  let phase: HostPhase;
  if (state.lease !== null) phase = 'in-flight';
  else if (parked) phase = 'parked';
  else if (held) phase = 'held';
  else if (!hasWork) phase = 'idle';
  else if (backoff?.active === true) phase = 'backed-off';
  else if (nextEligibleAt !== null && nextEligibleAt > now) phase = 'waiting';
  else phase = 'ready';
  return {
    host: state.host,
    phase,
    queued,
    active,
    parkedReason,
    nextEligibleAt,
    gapMs: state.gapMs,
    crawlDelayMs: state.crawlDelayMs,
    backoff,
    connErrors: state.connErrors,
    fetches: state.fetches,
    lease: state.lease && { url: state.lease.url, kind: state.lease.kind, issuedAt: state.lease.issuedAt },
    robots: state.robots.map((r) => ({
      origin: r.origin,
      state: r.state,
      fetchedAt: r.fetchedAt,
      ageMs: r.fetchedAt > 0 ? now - r.fetchedAt : null,
      due: r.state === 'UNKNOWN' || r.state === 'UNAVAILABLE' || now - r.fetchedAt > src.robotsTtlMs,
      failures: r.failures,
      crawlDelayMs: r.crawlDelayMs,
    })),
    lastOutcomes: outcomes,
  };
}

/**
 * One site's state in this task: per host its queue, phase, back-off, robots.txt per origin,
 * next eligible time and last outcomes; the site's budget, templates and control. Reads in-memory
 * state and a few keys: cheap enough to answer while the task runs, and bounded (MAX_STATUS_HOSTS).
 */
export function siteStatus(src: SiteStatusSource, site: string): SiteStatus {
  const activeNames = src.activeHosts;
  const all = hostsOf(src, site, activeNames);
  const control = src.control(site);
  const hosts = all.slice(0, MAX_STATUS_HOSTS).map((s) => hostView(src, s, activeNames, control));
  const stored = src.site(site);
  const bands = src.frontBands();
  const byBand: Record<string, number> = {};
  BANDS.forEach((name, i) => (byBand[name] = bands[i] ?? 0));
  let demoting = 0;
  let dropping = 0;
  for (const t of stored?.templates ?? []) {
    // as SitePolicy.noteTemplates judges one template's internal links against its allowance
    const allowance = src.templateAllowance.base + src.templateAllowance.perInlink * t.external;
    if (t.internal > allowance) dropping++;
    else if (2 * t.internal > allowance) demoting++;
  }
  return {
    site,
    now: src.now,
    queued: hosts.reduce((n, h) => n + h.queued, 0),
    hostsTotal: all.length,
    hosts,
    budget: stored
      ? {
          admitted: stored.admitted,
          budget: src.budget(stored),
          cycleStartedAt: stored.cycleStartedAt ?? 0,
          linkingSites: stored.linkingSites.length,
          seeded: stored.seeded,
          dupCut: stored.dupCut,
        }
      : null,
    templates: stored ? { tracked: stored.templates.length, demoting, dropping } : null,
    control: control ?? null,
    deferred: { partitionTotal: bands.reduce((a, b) => a + b, 0), byBand },
    partitionQueued: src.backQueued,
  };
}
