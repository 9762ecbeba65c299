import type { FetchRequest } from '../../schemas/types.js';
import { EXPIRY_GRACE_MS } from '../common/lease-expiry.js';
import { leaseIssuer } from '../common/lease-id.js';
import { LeaseClock, type ProcessFrame } from './lease-clock.js';

/** One issuing frontier partition, as a fetcher task knows it. */
export interface Issuer {
  /** The newest owner epoch seen on its leases; older leases are stale. */
  newestEpoch: number;
  /** Its clock, estimated from its leases. */
  readonly clock: LeaseClock;
}

/**
 * Whether the lease's window (and `beyondMs` after it) has passed now, and now on the frontier's
 * clock with the offset it was judged with.
 */
export function lateness(
  req: FetchRequest,
  clock: LeaseClock,
  beyondMs = 0,
): { late: boolean; now: number; offset: number } {
  const offset = clock.lateOffsetFor(req.host);
  const now = clock.toFrontier(clock.now(), offset);
  // the offset cannot tell skew from transit: leases that waited for this task's assignment (or
  // in a lag lasting the offset's window) read as on time. Its own clock bounds that: a fetcher
  // may run ahead of the frontier by at most the grace the frontier gives a lease's result.
  const late = now > req.notAfter + beyondMs || Date.now() - req.notAfter > EXPIRY_GRACE_MS;
  return { late, now, offset };
}

/** How long until the lease's notBefore on its issuer's clock (≤ 0: due). */
export function untilDue(req: FetchRequest, clock: LeaseClock): number {
  return clock.toLocal(req.notBefore ?? 0, clock.offsetFor(req.host)) - clock.now();
}

/**
 * What a fetcher task keeps of every frontier partition whose leases it takes (fetch requests are
 * keyed by address, so a task takes leases of many; the lease id names the issuer): its newest
 * owner epoch and its clock. The clocks read through the process's `ProcessFrame`. At most one
 * entry a frontier partition; not thread-safe.
 */
export class LeaseIssuers {
  private readonly issuers = new Map<string, Issuer>();

  constructor(private readonly frame: ProcessFrame) {}

  /**
   * The issuer of `req`, its clock fed with the lease. A newer owner epoch of the partition may
   * run on another machine: its clock is learnt afresh; a stale lease's times are on its old
   * owner's clock and teach nothing.
   */
  received(req: FetchRequest): Issuer {
    const key = leaseIssuer(req.leaseId);
    let issuer = this.issuers.get(key);
    if (issuer === undefined)
      this.issuers.set(key, (issuer = { newestEpoch: 0, clock: new LeaseClock(undefined, undefined, this.frame) }));
    if (req.ownerEpoch > issuer.newestEpoch) {
      issuer.newestEpoch = req.ownerEpoch;
      issuer.clock.reset();
    }
    if (req.ownerEpoch === issuer.newestEpoch) issuer.clock.observe(req.issuedAt);
    return issuer;
  }
}
