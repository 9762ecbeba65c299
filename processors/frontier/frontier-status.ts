import { M, type MetricId } from '../../core/metric-catalogue.js';
import { eligibleAt, type FrontierParts } from './frontier-parts.js';
import { BANDS, type Band } from './front-queues.js';
import { siteStatus, type SiteStatus } from './site-status.js';

/**
 * URLs queued at hosts that wait without being pending work: parked hosts and hosts of paused
 * sites (they resume later; they are not lost). Point reads of active host states only.
 */
export function waitingQueued(p: FrontierParts): number {
  let n = 0;
  for (const host of p.slots.waitingHosts()) {
    const s = p.hosts.get(host);
    if (s) n += s.tailSeq - s.headSeq;
  }
  return n;
}

/** One site's state in this task (site-status.ts): read-only, in-memory sets and point reads only. */
export function frontierSiteStatus(p: FrontierParts, site: string): SiteStatus {
  return siteStatus(
    {
      now: p.ctx.currentTimeMs(),
      robotsTtlMs: p.config.robotsTtlMs,
      activeHosts: p.slots.activeHosts,
      host: (h) => p.hosts.get(h),
      isParked: (h) => p.slots.isParked(h),
      // every host the view asks about is of `site`
      isHeld: (h) => p.slots.isHeld(h, site),
      eligibleAt: (state) => eligibleAt(p, state),
      site: (name) => p.sites.stateOf(name),
      budget: (state) => p.sites.budget(state),
      templateAllowance: { base: p.config.templateAllowance, perInlink: p.config.templateAllowancePerInlink },
      control: (name) => p.sites.control(name),
      outcomes: (h) => p.outcomes.of(h),
      frontBands: () => BANDS.map((_, b) => p.front.sizeOf(b as Band)),
      backQueued: p.slots.backQueued,
    },
    site,
  );
}

/** Sets the frontier's gauges for this task's partition. */
export function reportFrontierGauges(p: FrontierParts): void {
  const owner = String(p.ctx.taskId.partition);
  const metrics = p.ctx.metrics;
  const g = (name: MetricId, v: number) => metrics.setGauge(name, owner, v);
  g(M.frontierQueuedUrls, p.slots.backQueued + p.front.size);
  g(M.frontierFrontQueuedUrls, p.front.size);
  g(M.frontierLeases, p.slots.leaseCount);
  g(M.frontierActiveHosts, p.slots.activeCount);
  g(M.frontierHostsWaiting, p.slots.scheduledCount);
  g(M.frontierParkedHosts, p.slots.parkedCount);
  g(M.frontierParkedUrls, waitingQueued(p));
  g(M.frontierDeferredUrls, p.deferred.size);
  g(M.recrawlScheduledUrls, p.revisits.scheduled);
  p.seenSet.reportMetrics(metrics, owner);
  p.memory.reportMetrics(metrics);
  metrics.setGauge(M.cacheBytes, owner, p.robots.bytes, 'robots-parsed');
  metrics.setGauge(M.cacheBytes, owner, p.sites.cacheBytes, 'site-states');
}
