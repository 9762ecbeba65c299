import { M } from '../../core/metric-catalogue.js';
import type { FetchRequest, HostState, QueueEntry } from '../../schemas/types.js';
import { eligibleAt, wakeWaiting, type FrontierParts } from './frontier-parts.js';
import type { Intake } from './intake.js';
import { EXPIRY_GRACE_MS, leaseExpiresAt } from '../common/lease-expiry.js';
import { leaseIdOf } from '../common/lease-id.js';
import { hopToFetch, originOf, originRobots, robotsDue, waitsOnAnotherHost } from './robots-origins.js';

export const FETCH_REQUESTS_SINK = 'fetch-requests-sink';
export { EXPIRY_GRACE_MS };
/** Leases issued per dispatch punctuation at most. */
const DISPATCH_BATCH = 2_000;

type LeasedEntry = Pick<QueueEntry, 'url' | 'depth' | 'redirectHops' | 'attempts' | 'kind' | 'visit'>;

/**
 * Hands out leases: takes hosts whose time has come from the heap, applies the site's control
 * (blocked: queue dropped; paused: host held), robots.txt gating and the per-IP limit, and
 * forwards one `FetchRequest` per lease to `FETCH_REQUESTS_SINK`. A host holds at most one lease
 * (HostSlots), so one URL per host is in flight.
 */
export class Dispatcher {
  private leaseCounter = 0;

  constructor(
    private readonly p: FrontierParts,
    private readonly intake: Intake,
  ) {}

  dispatch(now: number): void {
    const p = this.p;
    for (const { hosts, at } of p.ips.due(now)) wakeWaiting(p, hosts, at);
    const horizon = now + p.config.dispatchLookaheadMs;
    let issued = 0;
    while (issued < DISPATCH_BATCH) {
      const top = p.slots.popDue(horizon);
      if (top === undefined) break;
      const { host } = top;
      const state = p.hosts.get(host);
      if (!state || state.lease || (state.tailSeq === state.headSeq && !hopToFetch(state))) continue;
      const due = eligibleAt(p, state);
      if (due > horizon) {
        p.slots.schedule(host, due);
        continue;
      }
      if (state.parkedUntil > 0) {
        state.parkedUntil = 0;
        p.slots.unpark(host);
      }
      const control = p.sites.control(state.site);
      if (control?.blocked) {
        this.intake.dropBack(state, 'blocked');
        continue;
      }
      if (control?.paused) {
        p.slots.hold(host, state.site);
        continue;
      }
      const next = this.nextFetch(state, now);
      if (next === undefined) continue;
      const notBefore = p.ips.tryAcquire(state, Math.max(now, due), now);
      if (notBefore === undefined) continue;
      const window = p.config.leaseWindowMs;
      if (typeof next === 'string') {
        const hops = hopToFetch(state)?.chain.length ?? 0;
        const robots = { url: next, depth: 0, redirectHops: hops, attempts: 0, visit: 0 };
        this.lease(state, now, notBefore, window, robots, false);
      } else this.lease(state, now, notBefore, window, next, true);
      issued++;
    }
  }

  /**
   * The host's next request: a robots.txt URL (a redirect of one still to follow, or the
   * robots.txt of the head URL's origin when it is due), else the head URL, after popping heads
   * their origin's robots.txt disallows (counting them). Undefined when the queue ran out, or
   * while its robots.txt waits for another host's request (then it is looked at again a gap
   * later, so that a pause or block of its site still finds it; the result also brings it back).
   */
  private nextFetch(state: HostState, now: number): string | QueueEntry | undefined {
    const p = this.p;
    const hop = hopToFetch(state);
    if (hop !== undefined) return hop.url;
    if (waitsOnAnotherHost(state)) return void p.slots.schedule(state.host, now + p.config.minDelayMs);
    for (;;) {
      const entry = p.back.head(state);
      if (entry === undefined) break;
      if (entry !== null) {
        const origin = originOf(entry.url) ?? state.origin;
        const rules = originRobots(state, origin);
        if (robotsDue(rules, now, p.config.robotsTtlMs)) return `${origin}/robots.txt`;
        // a body in the host state was written by an older version; now bodies live in ROBOTS_STORE
        const allowed =
          rules!.state !== 'READY' ||
          (rules!.body !== null
            ? p.robots.isAllowed(origin, rules!.body, entry.url)
            : p.robots.allows(origin, entry.url));
        if (allowed === undefined) return `${origin}/robots.txt`;
        if (allowed) return entry;
        p.ctx.metrics.inc(M.urlsDropped, 1, 'robots-disallowed');
      }
      p.back.pop(state);
      p.slots.dequeued(1);
    }
    p.hosts.put(state);
    this.intake.deactivate(state);
    return undefined;
  }

  /** `window`: how long after notBefore the fetch may start (then it is dropped, CS_LEASE_EXPIRED). */
  private lease(
    state: HostState,
    now: number,
    notBefore: number,
    window: number,
    entry: LeasedEntry,
    fromQueue: boolean,
  ): void {
    const p = this.p;
    const leaseId = leaseIdOf(p.epoch, p.ctx.taskId.partition, this.leaseCounter++);
    const notAfter = notBefore + window;
    const expiresAt = leaseExpiresAt(notAfter, p.config.fetchTimeoutMs);
    const kind = fromQueue ? (entry.kind ?? 'PAGE') : 'ROBOTS';
    const visit = fromQueue ? (entry.visit ?? 0) : 0;
    const { url, depth, redirectHops, attempts } = entry;
    state.lease = { leaseId, url, kind, depth, redirectHops, attempts, issuedAt: now, expiresAt, fromQueue };
    state.leaseVisit = visit;
    p.hosts.put(state);
    p.slots.lease(state.host, leaseId, expiresAt);
    const request: FetchRequest = {
      leaseId,
      ownerEpoch: p.epoch,
      url,
      host: state.host,
      site: state.site,
      kind,
      depth,
      redirectHops,
      attempt: attempts + 1,
      issuedAt: now,
      notBefore,
      notAfter,
      ifNoneMatch: null,
      ifModifiedSince: null,
      visit,
      previousFetchTime: null,
      previousStatus: 0,
      previousDigest: null,
      previousSimhash: null,
    };
    // a revisit carries its validators and what its last visit found (one history read)
    if (visit > 0) Object.assign(request, p.revisits.fieldsFor(url, visit));
    // keyed by address: every lease of an address, whichever frontier task issued it, goes to one
    // fetcher task, so one process's wire gate keeps the address's gap and concurrency for the
    // whole crawl (ip-limiter.ts), by the sends' real times, whatever clock each lease was read on
    const key = state.ip !== null && state.ip !== '' ? state.ip : state.site;
    p.ctx.forward({ key, value: request, timestamp: now }, FETCH_REQUESTS_SINK);
    p.ctx.metrics.inc(M.leasesIssued, 1, kind);
    // the gap this host must keep after the fetch: what politeness costs, summed over leases
    p.ctx.metrics.inc(M.politenessDelay, state.gapMs / 1000);
  }
}
