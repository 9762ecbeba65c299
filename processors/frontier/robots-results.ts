import { M } from '../../core/metric-catalogue.js';
import type { Metrics } from '../../core/metrics.js';
import type { FetchResult, HostState, RobotsHop } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { newHost } from './host-state.js';
import type { HostSlots } from './host-slots.js';
import type { HostTable } from './host-table.js';
import { applyRobotsOutcome, isUnanswered } from './outcomes.js';
import type { RobotsCache } from './politeness.js';
import { hostOfUrl, originOf } from './robots-origins.js';

/** What `RobotsResults` needs of the frontier that owns the host states. */
export interface RobotsResultsHost {
  readonly hosts: HostTable;
  readonly config: CrawlConfig;
  readonly robots: RobotsCache;
  metrics(): Pick<Metrics, 'inc'>;
  /** The frontier's host states: this parks and unparks hosts, and changes no other membership. */
  readonly slots: HostSlots;
  /** Takes `state` into an active slot and schedules it unless it holds a lease (the caller puts it). */
  activate(state: HostState): void;
  /** Schedules `state` (already put) when it has something to fetch, else frees its slot. */
  settle(state: HostState): void;
}

/**
 * Applies robots.txt results to the hosts they concern. A robots.txt redirect to another host
 * of the same site (same partition, so its state is here) is that host's request: the hop is
 * handed to it (`HostState.robotsHops`) and fetched on its gap and single flight, and its
 * result goes back to the host whose origin asked. Mutates host states and puts the ones it
 * changes other than the one it is given.
 */
export class RobotsResults {
  constructor(private readonly f: RobotsResultsHost) {}

  /**
   * A robots.txt result of `state`'s request: applied to its own origin (a hop of its chain, or
   * its robots.txt) and to every other host of the site whose chain waited for it. A result that
   * says nothing (lease lost or late) leaves every hop to be asked again. A lease the frontier gave
   * up on (CS_LEASE_LOST: no result by its expiry, e.g. the instance died between the fetch and its
   * commit) may have been answered 429/5xx, so it is asked again only after --robots-retry, as
   * after an unavailable robots.txt (without counting a failure); one the fetcher dropped unfetched
   * (CS_LEASE_EXPIRED) after the gap.
   */
  complete(state: HostState, result: FetchResult, now: number): void {
    if (isUnanswered(result)) {
      if (result.errorCode === 'CS_LEASE_LOST')
        state.nextEligibleAt = Math.max(state.nextEligibleAt, now + this.f.config.robotsRetryMs);
      return void this.f.metrics().inc(M.robotsResults, 1, 'EXPIRED');
    }
    const waiting = state.robotsHops.filter((h) => h.url === result.url);
    state.robotsHops = state.robotsHops.filter((h) => h.url !== result.url);
    const own = waiting.find((h) => hostOfUrl(h.origin) === state.host);
    const ownChain = state.robotsHops.some((h) => hostOfUrl(h.origin) === state.host);
    // a request made for other hosts still tells this host its robots.txt, when it is that
    if (own || waiting.length === 0 || (!ownChain && result.url === `${originOf(result.url)}/robots.txt`))
      this.apply(state, result, now, own ?? null);
    for (const hop of waiting) {
      const other = hop === own ? undefined : this.f.hosts.get(hostOfUrl(hop.origin) ?? '');
      if (other === undefined) continue;
      this.apply(other, result, now, hop);
      this.f.hosts.put(other);
      this.f.settle(other);
    }
  }

  private apply(state: HostState, result: FetchResult, now: number, hop: RobotsHop | null): void {
    const { verdict, refused } = applyRobotsOutcome(state, result, now, this.f.config, this.f.robots, hop);
    this.f.metrics().inc(M.robotsResults, 1, verdict);
    if (refused !== undefined) this.f.metrics().inc(M.robotsRedirectsRefused, 1, refused);
    // a host without a slot has nothing queued to hold back (a waiting host whose queue was dropped)
    if (verdict === 'UNAVAILABLE') {
      if (this.f.slots.isActive(state.host)) this.f.slots.park(state.host);
    } else if (state.parkedUntil === 0) this.f.slots.unpark(state.host);
    const next = verdict === 'REDIRECT' ? state.robotsHops[state.robotsHops.length - 1] : undefined;
    const host = next && hostOfUrl(next.url);
    if (next === undefined || host === undefined || host === state.host) return;
    // a request to another host of the site is that host's: its lease, its gap, its single flight
    const target = this.f.hosts.get(host) ?? newHost(host, originOf(next.url)!, state.site);
    if (!target.robotsHops.some((h) => h.origin === next.origin && h.url === next.url))
      target.robotsHops.push({ origin: next.origin, url: next.url, chain: [...next.chain] });
    this.f.activate(target);
    this.f.hosts.put(target);
  }
}
