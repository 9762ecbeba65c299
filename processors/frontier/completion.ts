import { M } from '../../core/metric-catalogue.js';
import type { FetchResult, HostState, Lease, LinkBatch, QueueEntry } from '../../schemas/types.js';
import { isFinalOutcome } from '../common/outcome.js';
import { wakeWaiting, type FrontierParts } from './frontier-parts.js';
import type { Intake } from './intake.js';
import { applyFetchTiming, applyPageOutcome } from './outcomes.js';
import { RobotsResults } from './robots-results.js';

/**
 * Applies fetch results to the leases they answer: frees the lease and its place in the address's
 * limit, learns the host's timing, applies robots.txt results (robots-results.ts) or the page
 * outcome (pop, or retry at the back of the host's queue), then settles the host. Results for
 * unknown or replaced leases are counted and ignored, so a result applied twice changes nothing.
 */
export class Completion {
  private readonly robotsResults: RobotsResults;

  constructor(
    private readonly p: FrontierParts,
    private readonly intake: Intake,
  ) {
    this.robotsResults = new RobotsResults({
      hosts: p.hosts,
      config: p.config,
      robots: p.robots,
      metrics: () => p.ctx.metrics,
      slots: p.slots,
      activate: (state) => intake.activate(state),
      settle: (state) => intake.settle(state),
    });
  }

  complete(result: FetchResult): void {
    const p = this.p;
    const now = p.ctx.currentTimeMs();
    const state = p.hosts.get(result.host);
    if (!state || !state.lease || state.lease.leaseId !== result.leaseId) {
      p.ctx.metrics.inc(M.resultsIgnored);
      return;
    }
    const lease = state.lease;
    state.lease = null;
    p.slots.release(result.leaseId);
    p.outcomes.note(result, now);
    const started = result.errorCode === 'CS_LEASE_EXPIRED' ? 0 : result.startedAt;
    const freed = p.ips.release(state.ip, started);
    wakeWaiting(p, freed.hosts, Math.max(freed.at, now));
    if (result.remoteAddress) state.ip = result.remoteAddress;
    if (applyFetchTiming(state, result, now, p.sites.settings.hostConfig(state.site, state.host))) {
      p.slots.park(state.host);
      p.ctx.metrics.inc(M.hostsParked, 1, 'connection-errors');
    }
    let sitemaps: LinkBatch | undefined;
    if (lease.kind === 'ROBOTS') {
      this.robotsResults.complete(state, result, now);
      sitemaps = p.revisits.sitemapsOf(state, now);
    } else if (lease.fromQueue) {
      this.applyPage(state, lease, result, now);
      // a page was due, so its origin's robots.txt was not unavailable
      if (state.parkedUntil === 0) p.slots.unpark(state.host);
    }
    p.hosts.put(state);
    this.intake.settle(state);
    if (sitemaps !== undefined) this.intake.admit(sitemaps, now);
  }

  private applyPage(state: HostState, lease: Lease, result: FetchResult, now: number): void {
    const p = this.p;
    const m = p.ctx.metrics;
    // the lease carries the head entry: no store read on the hot path
    const entry: QueueEntry | undefined =
      state.tailSeq > state.headSeq
        ? {
            url: lease.url,
            depth: lease.depth,
            redirectHops: lease.redirectHops,
            attempts: lease.attempts,
            discoveredAt: lease.issuedAt,
            kind: lease.kind === 'SITEMAP' || lease.kind === 'FEED' ? lease.kind : 'PAGE',
            visit: state.leaseVisit ?? 0,
          }
        : undefined;
    const backoff = applyPageOutcome(state, result, now, p.config);
    if (backoff !== undefined) m.inc(M.backoffs, 1, String(result.status));
    if (!entry) return;
    const attempts = entry.attempts + (result.errorCode === 'CS_LEASE_EXPIRED' ? 0 : 1);
    p.back.pop(state);
    p.slots.dequeued(1);
    if (isFinalOutcome(result.status, result.errorCode, attempts, p.config.maxAttempts)) {
      if (result.errorCode === null) m.inc(M.pagesFetched);
      else m.inc(M.fetchErrors, 1, result.errorCode);
      return;
    }
    // retried at the back of the host's queue; the URL keeps its single place in the seen-set
    p.back.append(state, { ...entry, attempts });
    p.slots.queuedMore(1);
    m.inc(M.fetchRetries, 1, result.errorCode ?? String(result.status));
  }

  /** A lease with no result by its expiry is presumed lost: the URL is retried after a full gap from now. */
  expireLeases(now: number): void {
    const p = this.p;
    for (const [leaseId, { host }] of p.slots.expired(now)) {
      const state = p.hosts.get(host);
      if (!state || !state.lease || state.lease.leaseId !== leaseId) {
        p.slots.release(leaseId);
        continue;
      }
      p.ctx.metrics.inc(M.leasesExpired);
      this.complete(lostResult(leaseId, p.epoch, state, now));
    }
  }
}

/** The result the frontier plays for a lease it gave up on (CS_LEASE_LOST): nothing was learnt. */
function lostResult(leaseId: string, ownerEpoch: number, state: HostState, now: number): FetchResult {
  return {
    leaseId,
    ownerEpoch,
    url: state.lease!.url,
    host: state.host,
    site: state.site,
    kind: state.lease!.kind as FetchResult['kind'],
    status: 0,
    startedAt: now,
    durationMs: 0,
    errorCode: 'CS_LEASE_LOST',
    errorMessage: 'lease expired without a result',
    retryAfterMs: null,
    redirectTarget: null,
    robotsBody: null,
    remoteAddress: null,
  };
}
