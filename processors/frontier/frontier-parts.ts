import { M } from '../../core/metric-catalogue.js';
import type { ProcessorContext } from '../../runtime/processor.js';
import type { FetchRequest, HostState } from '../../schemas/types.js';
import { SeenSet } from '../../state/seen-set.js';
import type { MemoryBudget } from '../../state/memory-budget.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { BackQueues } from './back-queues.js';
import { DeferredSet } from './deferred-set.js';
import { FrontQueues } from './front-queues.js';
import {
  DEFERRED_STORE,
  DUE_STORE,
  FRONT_STORE,
  HISTORY_STORE,
  HOSTS_STORE,
  META_STORE,
  QUEUE_STORE,
  ROBOTS_STORE,
  SEEN_STORE,
  SITES_STORE,
  SCOPE_STORE,
  type DeferredStore,
  type FrontStore,
  type HostStore,
  type MetaStore,
  type QueueStore,
  type RobotsStore,
  type ScopeStore,
  type SeenStore,
  type SiteStore,
} from './frontier-stores.js';
import { numberBytes, readNumber } from './host-state.js';
import { HostSlots } from './host-slots.js';
import { HostTable } from './host-table.js';
import type { IpLimiter } from './ip-limiter.js';
import type { RobotsCache } from './politeness.js';
import { migrateQueues } from './queue-migration.js';
import { RecrawlSchedule, type DueStore, type HistoryStore } from './recrawl-schedule.js';
import { Revisits } from './revisits.js';
import { RefetchPlanner } from './refetch-planner.js';
import { hopToFetch } from './robots-origins.js';
import { SitePolicy, slowGapMs } from './site-policy.js';
import { RecentOutcomes } from './site-status.js';
import { LinkScope, SeedScope } from './scope.js';

/**
 * What one frontier task is made of, opened once by `openFrontierParts` in `init` and shared by
 * its parts (intake, dispatcher, completion, status). The parts own no state of their own beyond
 * what they say; host membership lives in `slots` only.
 */
export interface FrontierParts {
  readonly ctx: ProcessorContext<string, FetchRequest>;
  readonly config: CrawlConfig;
  readonly slots: HostSlots;
  readonly hosts: HostTable;
  readonly back: BackQueues;
  readonly front: FrontQueues;
  readonly meta: MetaStore;
  readonly sites: SitePolicy;
  readonly seenSet: SeenSet;
  /** The process's memory plan, shared by its frontier tasks (`ProcessorContext.inProcess`). */
  readonly memory: MemoryBudget;
  readonly deferred: DeferredSet;
  /** Which links the user's scope, rules, depth and type filters let in. */
  readonly scope: LinkScope;
  readonly revisits: Revisits;
  readonly robots: RobotsCache;
  readonly ips: IpLimiter;
  /** Each recently answered host's last results, for the site status only. */
  readonly outcomes: RecentOutcomes;
  /** This run's number, one more than the last run's: part of every lease id. */
  readonly epoch: number;
  readonly startedAt: number;
}

/**
 * Opens the frontier's stores and collaborators, migrates old queue layouts, starts a new epoch
 * and rebuilds the host slots from the stored host states (leases still out stay leased until
 * their result or expiry). `robots` and `ips` are the processor's, kept across nothing but this task.
 */
export function openFrontierParts(
  ctx: ProcessorContext<string, FetchRequest>,
  config: CrawlConfig,
  robots: RobotsCache,
  ips: IpLimiter,
): FrontierParts {
  const hostStore = ctx.getStateStore<HostStore>(HOSTS_STORE);
  robots.attach(ctx.getStateStore<RobotsStore>(ROBOTS_STORE));
  const queue = ctx.getStateStore<QueueStore>(QUEUE_STORE);
  const frontStore = ctx.getStateStore<FrontStore>(FRONT_STORE);
  const meta = ctx.getStateStore<MetaStore>(META_STORE);
  const migrated = migrateQueues({ hosts: hostStore, queue, front: frontStore, meta });
  if (migrated > 0) ctx.metrics.inc(M.frontierQueueUrlsMigrated, migrated);
  const slots = new HostSlots();
  const hosts = new HostTable(hostStore, (host) => slots.isActive(host));
  const front = new FrontQueues(
    frontStore,
    (k) => readNumber(meta.get(k)),
    (k, v) => meta.put(k, numberBytes(v)),
    config.recrawlShare,
  );
  // the process's plan (its RocksDB databases claimed in it): one that takes over more partitions stays within it
  const memory = ctx.memory();
  const seenSet = new SeenSet(ctx.getStateStore<SeenStore>(SEEN_STORE), {
    expectedCount: config.seenExpectedUrls,
    falsePositiveRate: config.seenFalsePositiveRate,
    exact: { blockCacheBytes: config.seenBlockCacheBytes },
    memory,
  });
  seenSet.init();
  const sites = new SitePolicy(ctx.getStateStore<SiteStore>(SITES_STORE), config, () => ctx.currentTimeMs());
  const revisits = new Revisits(
    new RecrawlSchedule(
      ctx.getStateStore<HistoryStore>(HISTORY_STORE),
      ctx.getStateStore<DueStore>(DUE_STORE),
      meta,
      config,
    ),
    new RefetchPlanner(config, sites),
    config,
    () => ctx.metrics,
  );
  const deferred = new DeferredSet(ctx.getStateStore<DeferredStore>(DEFERRED_STORE));
  // options may have changed since the last run (an operator raised a budget or an allowance)
  for (const [site] of deferred.sites()) deferred.mark(site, { budget: true, template: true, exhausted: true });
  const epoch = readNumber(meta.get('epoch')) + 1;
  meta.put('epoch', numberBytes(epoch));
  const p: FrontierParts = {
    ctx,
    config,
    slots,
    hosts,
    back: new BackQueues(queue),
    front,
    meta,
    sites,
    seenSet,
    memory,
    deferred,
    scope: new LinkScope(config, new SeedScope(config.scope, ctx.getStateStore<ScopeStore>(SCOPE_STORE)), (site, url) =>
      sites.settings.forUrl(site, url),
    ),
    revisits,
    robots,
    ips,
    outcomes: new RecentOutcomes(),
    epoch,
    startedAt: ctx.currentTimeMs(),
  };
  restoreSlots(p);
  return p;
}

/** Every stored host with queued URLs, a lease out or a robots.txt hop takes its slot again. */
function restoreSlots(p: FrontierParts): void {
  for (const [host, state] of p.hosts.all()) {
    const queued = state.tailSeq - state.headSeq;
    p.slots.queuedMore(queued);
    if (queued > 0 || state.lease || state.robotsHops.length > 0) p.slots.activate(host);
    if (queued > 0 && (state.robots.some((r) => r.state === 'UNAVAILABLE') || state.parkedUntil > 0))
      p.slots.park(host);
    if (state.lease) {
      p.slots.lease(host, state.lease.leaseId, state.lease.expiresAt);
      p.ips.holdExisting(state.ip);
    } else if (queued > 0 || hopToFetch(state)) p.slots.schedule(host, eligibleAt(p, state));
  }
}

/**
 * Puts hosts that waited on their address's per-IP limit back in the schedule at `at`, those with
 * the most queued URLs first (ties keep their order): on a busy address the site with the most
 * left to fetch is the crawl's critical path (the longest-processing-time rule), and the others
 * lose a few milliseconds each. Only the heap's order changes (keys `at` + i µs); when each may be
 * fetched is still decided from its state.
 */
export function wakeWaiting(p: FrontierParts, hosts: readonly string[], at: number): void {
  if (hosts.length <= 1) return void p.slots.wake(hosts, at);
  const left = (host: string) => {
    const state = p.hosts.get(host);
    return state ? state.tailSeq - state.headSeq : 0;
  };
  const order = hosts.map((host) => ({ host, left: left(host) })).sort((a, b) => b.left - a.left);
  order.forEach(({ host }, i) => p.slots.wake([host], at + i / 1_000));
}

/**
 * The earliest a host may be fetched: its own clock, and a full gap after this task started. An
 * operator's `slow` gap applies to every fetch: the host's clock is its last fetch's end plus
 * its own gap, and the slow gap replaces that gap when longer.
 */
export function eligibleAt(p: FrontierParts, state: HostState): number {
  const slow = slowGapMs(p.sites.control(state.site));
  const gap = Math.max(state.gapMs, p.sites.settings.minDelayMs(state.site, state.host), slow);
  const slowed = slow > state.gapMs ? state.nextEligibleAt + slow - state.gapMs : state.nextEligibleAt;
  return Math.max(slowed, state.parkedUntil, p.startedAt + gap);
}
