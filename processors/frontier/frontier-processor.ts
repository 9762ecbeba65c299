import { M } from '../../core/metric-catalogue.js';
import type { MetricId } from '../../core/metric-catalogue.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import type {
  ControlCommand,
  FetchRequest,
  FetchResult,
  FrontEntry,
  HostState,
  Lease,
  LinkBatch,
  PageRecord,
  QueueEntry,
} from '../../schemas/types.js';
import { TOPICS } from '../common/topics.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { isFinalOutcome } from '../common/outcome.js';
import { admitLinks } from './admission.js';
import { DeferredSet } from './deferred-set.js';
import { releaseDeferred } from './deferred-release.js';
import { BackQueues } from './back-queues.js';
import { newHost, numberBytes, readNumber } from './host-state.js';
import { FrontQueues, LOWEST_BAND, REVISIT_BAND } from './front-queues.js';
import {
  DEFERRED_STORE,
  DUE_STORE,
  FRONT_STORE,
  HISTORY_STORE,
  HOSTS_STORE,
  ROBOTS_STORE,
  META_STORE,
  QUEUE_STORE,
  SEEN_STORE,
  SITES_STORE,
  type DeferredStore,
  type FrontStore,
  type HostStore,
  type MetaStore,
  type QueueStore,
  type RobotsStore,
  type SeenStore,
  type SiteStore,
} from './frontier-stores.js';
import { HostHeap } from './host-heap.js';
import { HostTable } from './host-table.js';
import { IpLimiter } from './ip-limiter.js';
import type { AddressLookup } from './host-addresses.js';
import { migrateQueues } from './queue-migration.js';
import { applyFetchTiming, applyPageOutcome } from './outcomes.js';
import { RobotsCache } from './politeness.js';
import { hopToFetch, originOf, originRobots, robotsDue, waitsOnAnotherHost } from './robots-origins.js';
import { RobotsResults } from './robots-results.js';
import { SitePolicy, slowGapMs } from './site-policy.js';
import { SeenSet } from '../../state/seen-set.js';
import { RecrawlSchedule, type DueStore, type HistoryStore } from './recrawl-schedule.js';
import { Revisits } from './revisits.js';
import { BANDS, type Band } from './front-queues.js';
import { RecentOutcomes, SITE_QUERY, siteStatus, type SiteStatus } from './site-status.js';

export type FrontierInput = LinkBatch | FetchResult | ControlCommand | PageRecord;

export const FETCH_REQUESTS_SINK = 'fetch-requests-sink';
const EXPIRY_GRACE_MS = 5_000;
const DISPATCH_BATCH = 2_000;
/** Due URLs queued per punctuation (every second): the due index drains at most this fast. */
const DUE_BATCH = 1_000;
/** Revisits waiting in the front queues beyond which no more are taken from the due index. */
const DUE_BACKLOG = 10 * DUE_BATCH;
/** How often sites whose budget-deferred URLs wait for a new cycle are looked at. */
const DEFERRED_CYCLE_CHECK_MS = 10_000;

/**
 * The polite frontier of one site partition (Mercator): admitted URLs wait in priority-band front
 * queues until their host holds one of `activeHostSlots`; then in the host's on-disk FIFO. A heap
 * of hosts by next-eligible time hands out leases; a host holds at most one, so one URL per host
 * is in flight, and the next lease's notBefore is the previous fetch's end plus the full gap.
 * After every (re)start each host waits a full gap. Also applies per-IP limits, per-site budgets
 * and operator controls.
 */
export class FrontierProcessor implements Processor<string, FrontierInput, string, FetchRequest> {
  private ctx!: ProcessorContext<string, FetchRequest>;
  private hosts!: HostTable;
  private robotsResults!: RobotsResults;
  private back!: BackQueues;
  private meta!: MetaStore;
  private front!: FrontQueues;
  private sites!: SitePolicy;
  private seenSet!: SeenSet;
  private deferred!: DeferredSet;
  private revisits!: Revisits;
  private readonly heap = new HostHeap();
  private readonly leases = new Map<string, { host: string; expiresAt: number }>();
  /** Hosts with URLs in their back queue or a lease out: the active slots in use. */
  private readonly active = new Set<string>();
  /** Active hosts that cannot be fetched for now: robots.txt unavailable or too many connection errors. */
  private readonly parked = new Set<string>();
  /** Active hosts of paused sites, by site. */
  private readonly held = new Map<string, Set<string>>();
  private readonly robots: RobotsCache;
  private ips: IpLimiter;
  /** Each recently answered host's last results, for the site status only. */
  private readonly outcomes = new RecentOutcomes();
  private epoch = 0;
  private startedAt = 0;
  private leaseCounter = 0;
  private backQueued = 0;
  /** The host state `appendBack` last appended to in this call (already active and marked changed). */
  private lastAppended: HostState | undefined;

  /**
   * `lookup` finds a new host's address before its first lease, for the per-IP limit
   * (host-addresses.ts); `partitions` frontier tasks share every address's limit (ip-limiter.ts).
   */
  constructor(
    private readonly config: CrawlConfig,
    private readonly lookup?: AddressLookup,
    private readonly partitions = 1,
  ) {
    this.robots = new RobotsCache(config.userAgent);
    this.ips = new IpLimiter(config.ipConcurrency, config.ipGapMs, lookup);
  }

  init(context: ProcessorContext<string, FetchRequest>): void {
    this.ctx = context;
    const share = { partition: context.taskId.partition, partitions: this.partitions };
    this.ips = new IpLimiter(this.config.ipConcurrency, this.config.ipGapMs, this.lookup, share);
    const hosts = context.getStateStore<HostStore>(HOSTS_STORE);
    this.robots.attach(context.getStateStore<RobotsStore>(ROBOTS_STORE));
    const queue = context.getStateStore<QueueStore>(QUEUE_STORE);
    const front = context.getStateStore<FrontStore>(FRONT_STORE);
    this.meta = context.getStateStore(META_STORE);
    const migrated = migrateQueues({ hosts, queue, front, meta: this.meta });
    if (migrated > 0) context.metrics.inc(M.frontierQueueUrlsMigrated, migrated);
    this.hosts = new HostTable(hosts, (host) => this.active.has(host));
    this.back = new BackQueues(queue);
    this.robotsResults = new RobotsResults({
      hosts: this.hosts,
      config: this.config,
      robots: this.robots,
      metrics: () => this.ctx.metrics,
      parked: this.parked,
      activate: (state) => {
        this.active.add(state.host);
        if (!state.lease) this.heap.push(state.host, this.eligibleAt(state));
      },
      settle: (state) => this.settle(state),
    });
    this.front = new FrontQueues(
      front,
      (k) => readNumber(this.meta.get(k)),
      (k, v) => this.meta.put(k, numberBytes(v)),
      this.config.recrawlShare,
    );
    this.revisits = new Revisits(
      new RecrawlSchedule(
        context.getStateStore<HistoryStore>(HISTORY_STORE),
        context.getStateStore<DueStore>(DUE_STORE),
        this.meta,
        this.config,
      ),
      this.config,
      () => this.ctx.metrics,
    );
    this.seenSet = new SeenSet(context.getStateStore<SeenStore>(SEEN_STORE), {
      expectedCount: this.config.seenExpectedUrls,
      falsePositiveRate: this.config.seenFalsePositiveRate,
      exact: { blockCacheBytes: this.config.seenBlockCacheBytes },
    });
    this.seenSet.init();
    this.sites = new SitePolicy(context.getStateStore<SiteStore>(SITES_STORE), this.config, () =>
      this.ctx.currentTimeMs(),
    );
    this.deferred = new DeferredSet(context.getStateStore<DeferredStore>(DEFERRED_STORE));
    // options may have changed since the last run (an operator raised a budget or an allowance)
    for (const [site] of this.deferred.sites())
      this.deferred.mark(site, { budget: true, template: true, exhausted: true });
    this.epoch = readNumber(this.meta.get('epoch')) + 1;
    this.meta.put('epoch', numberBytes(this.epoch));
    this.startedAt = context.currentTimeMs();
    for (const [host, state] of this.hosts.all()) {
      const queued = state.tailSeq - state.headSeq;
      this.backQueued += queued;
      if (queued > 0 || state.lease || state.robotsHops.length > 0) this.active.add(host);
      if (queued > 0 && (state.robots.some((r) => r.state === 'UNAVAILABLE') || state.parkedUntil > 0))
        this.parked.add(host);
      if (state.lease) {
        this.leases.set(state.lease.leaseId, { host, expiresAt: state.lease.expiresAt });
        this.ips.holdExisting(state.ip);
      } else if (queued > 0 || hopToFetch(state)) this.heap.push(host, this.eligibleAt(state));
    }
    context.schedule(20, (now) => this.flushed(() => this.dispatch(now)));
    context.schedule(500, (now) => this.flushed(() => this.expireLeases(now)));
    context.schedule(1_000, (now) => this.flushed(() => this.queueDue(now)));
    context.schedule(1_000, () => this.reportGauges());
    context.registerQuery(SITE_QUERY, (site) => this.siteStatus(site));
    context.schedule(DEFERRED_CYCLE_CHECK_MS, (now) => this.flushed(() => this.newCycles(now)));
    this.flushed(() => this.refill());
    this.reportGauges();
  }

  process(record: StreamRecord<string, FrontierInput>): void {
    this.flushed(() => {
      switch (this.ctx.recordMetadata?.topic) {
        case TOPICS.links:
          return this.admit(record.value as LinkBatch, record.timestamp);
        case TOPICS.fetchResults:
          return this.complete(record.value as FetchResult);
        case TOPICS.control:
          return this.control(record.value as ControlCommand);
        case TOPICS.pageRecords: {
          const page = record.value as PageRecord;
          // a revisit is the same URL again, not a new page of its site
          if (!(page.visit > 0) && this.sites.notePage(page.site, page.duplicateOf !== null))
            this.ctx.metrics.inc(M.sitesDupCut);
          this.revisits.onPageRecord(page, this.sites.linkingSites(page.site));
          return;
        }
      }
    });
  }

  /**
   * Runs one call's work, then hands what it buffered (queue chunks, front bounds, host states)
   * to the stores: a commit runs only between calls, so it always sees every change.
   */
  private flushed(work: () => void): void {
    try {
      work();
      this.releaseDeferred();
    } finally {
      this.lastAppended = undefined;
      this.back.flush();
      this.front.flush();
      this.hosts.flush();
    }
  }

  close(): void {
    this.reportGauges();
  }

  /**
   * Idle when nothing is in flight or in the front queues and every queued URL waits on a parked
   * host or a paused site (those resume later; they are not lost). Deferred URLs are not pending
   * work: whatever evidence could release them is released in the call that noted it, so those
   * still waiting wait for evidence that is not coming in this run (an inlink, a new cycle).
   */
  isIdle(): boolean {
    if (this.leases.size > 0 || this.front.size > 0) return false;
    if (this.revisits.dueWithin(this.ctx.currentTimeMs(), this.config.recrawlMinMs)) return false;
    return this.backQueued === this.waitingQueued();
  }

  private waitingQueued(): number {
    let n = 0;
    const count = (host: string) => {
      const s = this.hosts.get(host);
      if (s) n += s.tailSeq - s.headSeq;
    };
    for (const host of this.parked) count(host);
    for (const hosts of this.held.values()) for (const host of hosts) if (!this.parked.has(host)) count(host);
    return n;
  }

  /** Admitted links of an active host go straight to its back queue; others wait for a slot by priority. */
  private admit(batch: LinkBatch, timestamp: number): void {
    const { entries, bands, deferred, deferredHost } = admitLinks(
      batch,
      timestamp,
      this.config,
      this.seenSet,
      this.sites,
      this.deferred,
      this.ctx.metrics,
    );
    // a sitemap or feed: its new URLs first, and known ones it says changed are due now
    if (batch.fromFeed === true) {
      bands.fill(0);
      this.revisits.noteLastmods(batch, this.ctx.currentTimeMs());
    }
    // entries of one host share its string (admitLinks), and this loop activates no host
    let host: string | undefined;
    let active = false;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      if (entry.host !== host) {
        host = entry.host;
        active = this.active.has(host);
      }
      // lowest-band URLs (suspect or demoted) wait for a refill even when their host is active
      if (active && bands[i] !== LOWEST_BAND) this.appendBack(entry);
      else this.front.push(bands[i]!, entry);
    }
    // a site's URLs held back while their host has nothing queued are its next work
    if (deferred > 0 && !this.active.has(deferredHost!)) this.noteExhausted(batch.site);
    this.refill();
  }

  /**
   * URLs of the recrawl schedule that fell due go to the front queues: pages to the revisit band
   * (which shares picks with new URLs, --recrawl-share), sitemaps and feeds to the first band.
   */
  private queueDue(now: number): void {
    // a backlog stays in the due index, where it costs nothing, rather than in the front queues
    if (this.front.sizeOf(REVISIT_BAND) >= DUE_BACKLOG) return;
    const due = this.revisits.due(now, DUE_BATCH);
    for (const e of due) this.front.push(e.kind === 'PAGE' ? REVISIT_BAND : 0, e);
    if (due.length > 0) this.refill();
  }

  /** Queues the deferred URLs that the evidence noted in this call releases. */
  private releaseDeferred(): void {
    for (const [site, evidence] of this.deferred.takePending()) {
      const released = releaseDeferred(site, evidence, this.deferred, this.sites, this.ctx.metrics);
      for (const { entry, band } of released) {
        if (band !== LOWEST_BAND && this.active.has(entry.host)) this.appendBack(entry);
        else this.front.push(band, entry);
      }
      if (released.length > 0) this.refill();
    }
  }

  /** Sites whose budget-deferred URLs waited for a new cycle that has begun are looked at again. */
  private newCycles(now: number): void {
    for (const [site, retryAt] of this.deferred.sites())
      if (retryAt > 0 && retryAt <= now) this.deferred.mark(site, { budget: true });
  }

  /** A host of `site` has nothing queued: its template-deferred URLs may go if its yield fell. */
  private noteExhausted(site: string): void {
    if (this.deferred.waiting(site, 'url-template') > 0) this.deferred.mark(site, { exhausted: true });
  }

  /** Moves URLs from the front queues to back queues while active slots are free. */
  private refill(): void {
    let site: string | undefined;
    let blocked = false;
    while (this.active.size - this.parked.size < this.config.activeHostSlots) {
      const e = this.front.pop();
      if (!e) return;
      if (e.site !== site) {
        site = e.site;
        blocked = this.sites.control(site)?.blocked === true;
      }
      if (blocked) {
        this.ctx.metrics.inc(M.urlsDropped, 1, 'blocked');
        continue;
      }
      this.appendBack(e);
    }
  }

  private appendBack(e: FrontEntry): void {
    // the links of a batch mostly share a host: its state is looked up and marked changed once a call
    let state = this.lastAppended;
    if (state === undefined || state.host !== e.host) {
      state = this.hosts.get(e.host) ?? newHost(e.host, e.origin, e.site);
      this.active.add(e.host);
      this.hosts.put(state);
      this.lastAppended = state;
    }
    const wasEmpty = state.tailSeq === state.headSeq;
    this.back.append(state, e);
    this.backQueued++;
    if (wasEmpty && !state.lease && !this.parked.has(e.host)) this.heap.push(e.host, this.eligibleAt(state));
  }

  /**
   * The earliest a host may be fetched: its own clock, and a full gap after this task started. An
   * operator's `slow` gap applies to every fetch: the host's clock is its last fetch's end plus
   * its own gap, and the slow gap replaces that gap when longer.
   */
  private eligibleAt(state: HostState): number {
    const slow = slowGapMs(this.sites.control(state.site));
    const gap = Math.max(state.gapMs, this.config.minDelayMs, slow);
    const slowed = slow > state.gapMs ? state.nextEligibleAt + slow - state.gapMs : state.nextEligibleAt;
    return Math.max(slowed, state.parkedUntil, this.startedAt + gap);
  }

  private dispatch(now: number): void {
    for (const { hosts, at } of this.ips.due(now)) for (const h of hosts) this.heap.push(h, at);
    const horizon = now + this.config.dispatchLookaheadMs;
    let issued = 0;
    while (issued < DISPATCH_BATCH) {
      const top = this.heap.peekTime();
      if (top === undefined || top > horizon) break;
      const { host } = this.heap.pop()!;
      const state = this.hosts.get(host);
      if (!state || state.lease || (state.tailSeq === state.headSeq && !hopToFetch(state))) continue;
      const due = this.eligibleAt(state);
      if (due > horizon) {
        this.heap.push(host, due);
        continue;
      }
      if (state.parkedUntil > 0) {
        state.parkedUntil = 0;
        this.parked.delete(host);
      }
      const control = this.sites.control(state.site);
      if (control?.blocked) {
        this.dropBack(state, 'blocked');
        continue;
      }
      if (control?.paused) {
        let set = this.held.get(state.site);
        if (!set) this.held.set(state.site, (set = new Set()));
        set.add(host);
        continue;
      }
      const next = this.nextFetch(state, now);
      if (next === undefined) continue;
      const notBefore = this.ips.tryAcquire(state, Math.max(now, due));
      if (notBefore === undefined) continue;
      const window = this.ips.startWindow(state) ?? this.config.leaseWindowMs;
      if (typeof next === 'string')
        this.lease(
          state,
          now,
          notBefore,
          window,
          { url: next, depth: 0, redirectHops: hopToFetch(state)?.chain.length ?? 0, attempts: 0, visit: 0 },
          false,
        );
      else this.lease(state, now, notBefore, window, next, true);
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
    const hop = hopToFetch(state);
    if (hop !== undefined) return hop.url;
    if (waitsOnAnotherHost(state)) return void this.heap.push(state.host, now + this.config.minDelayMs);
    for (;;) {
      const entry = this.back.head(state);
      if (entry === undefined) break;
      if (entry !== null) {
        const origin = originOf(entry.url) ?? state.origin;
        const rules = originRobots(state, origin);
        if (robotsDue(rules, now, this.config.robotsTtlMs)) return `${origin}/robots.txt`;
        // a body in the host state was written by an older version; now bodies live in ROBOTS_STORE
        const allowed =
          rules!.state !== 'READY' ||
          (rules!.body !== null
            ? this.robots.isAllowed(origin, rules!.body, entry.url)
            : this.robots.allows(origin, entry.url));
        if (allowed === undefined) return `${origin}/robots.txt`;
        if (allowed) return entry;
        this.ctx.metrics.inc(M.urlsDropped, 1, 'robots-disallowed');
      }
      this.back.pop(state);
      this.backQueued--;
    }
    this.hosts.put(state);
    this.deactivate(state);
    return undefined;
  }

  /** `window`: how long after notBefore the fetch may start (then it is dropped, CS_LEASE_EXPIRED). */
  private lease(
    state: HostState,
    now: number,
    notBefore: number,
    window: number,
    entry: Pick<QueueEntry, 'url' | 'depth' | 'redirectHops' | 'attempts' | 'kind' | 'visit'>,
    fromQueue: boolean,
  ): void {
    const leaseId = `${this.epoch}-${this.ctx.taskId.partition}-${(this.leaseCounter++).toString(36)}`;
    const notAfter = notBefore + window;
    const expiresAt = notAfter + this.config.fetchTimeoutMs + EXPIRY_GRACE_MS;
    const kind = fromQueue ? (entry.kind ?? 'PAGE') : 'ROBOTS';
    const visit = fromQueue ? (entry.visit ?? 0) : 0;
    state.lease = {
      leaseId,
      url: entry.url,
      kind,
      depth: entry.depth,
      redirectHops: entry.redirectHops,
      attempts: entry.attempts,
      issuedAt: now,
      expiresAt,
      fromQueue,
    };
    state.leaseVisit = visit;
    this.hosts.put(state);
    this.leases.set(leaseId, { host: state.host, expiresAt });
    const request: FetchRequest = {
      leaseId,
      ownerEpoch: this.epoch,
      url: entry.url,
      host: state.host,
      site: state.site,
      kind,
      depth: entry.depth,
      redirectHops: entry.redirectHops,
      attempt: entry.attempts + 1,
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
    if (visit > 0) Object.assign(request, this.revisits.fieldsFor(entry.url, visit));
    this.ctx.forward({ key: state.site, value: request, timestamp: now }, FETCH_REQUESTS_SINK);
    this.ctx.metrics.inc(M.leasesIssued, 1, kind);
    // the gap this host must keep after the fetch: what politeness costs, summed over leases
    this.ctx.metrics.inc(M.politenessDelay, state.gapMs / 1000);
  }

  /** Applies a fetch result to its lease; results for unknown or replaced leases are ignored. */
  private complete(result: FetchResult): void {
    const now = this.ctx.currentTimeMs();
    const state = this.hosts.get(result.host);
    if (!state || !state.lease || state.lease.leaseId !== result.leaseId) {
      this.ctx.metrics.inc(M.resultsIgnored);
      return;
    }
    const lease = state.lease;
    state.lease = null;
    this.leases.delete(result.leaseId);
    this.outcomes.note(result, now);
    if (this.ips.startWindow(state) !== undefined) {
      // how late a lease arrives depends on the engine and its load: the start window learns it
      const notAfter = lease.expiresAt - this.config.fetchTimeoutMs - EXPIRY_GRACE_MS;
      // (a lease the frontier itself gave up on, CS_LEASE_LOST, says nothing about delivery)
      if (result.errorCode === 'CS_LEASE_EXPIRED') {
        if (result.startedAt > notAfter) this.ips.startedLate(result.startedAt - notAfter);
      } else if (result.errorCode !== 'CS_LEASE_LOST') this.ips.startedInTime();
    }
    const freed = this.ips.release(state.ip, result.errorCode === 'CS_LEASE_EXPIRED' ? 0 : result.startedAt);
    for (const h of freed.hosts) this.heap.push(h, Math.max(freed.at, now));
    if (result.remoteAddress) state.ip = result.remoteAddress;
    if (applyFetchTiming(state, result, now, this.config)) {
      this.parked.add(state.host);
      this.ctx.metrics.inc(M.hostsParked, 1, 'connection-errors');
    }
    let sitemaps: LinkBatch | undefined;
    if (lease.kind === 'ROBOTS') {
      this.robotsResults.complete(state, result, now);
      sitemaps = this.revisits.sitemapsOf(state, now);
    } else if (lease.fromQueue) {
      this.applyPage(state, lease, result, now);
      // a page was due, so its origin's robots.txt was not unavailable
      if (state.parkedUntil === 0) this.parked.delete(state.host);
    }
    this.hosts.put(state);
    this.settle(state);
    if (sitemaps !== undefined) this.admit(sitemaps, now);
  }

  /** Back to the schedule when the host has something to fetch, else out of its slot. */
  private settle(state: HostState): void {
    if (state.lease) return;
    if (state.tailSeq > state.headSeq || hopToFetch(state)) this.heap.push(state.host, this.eligibleAt(state));
    else this.deactivate(state);
  }

  private applyPage(state: HostState, lease: Lease, result: FetchResult, now: number): void {
    const m = this.ctx.metrics;
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
    const backoff = applyPageOutcome(state, result, now, this.config);
    if (backoff !== undefined) m.inc(M.backoffs, 1, String(result.status));
    if (!entry) return;
    const attempts = entry.attempts + (result.errorCode === 'CS_LEASE_EXPIRED' ? 0 : 1);
    this.back.pop(state);
    this.backQueued--;
    if (isFinalOutcome(result.status, result.errorCode, attempts, this.config.maxAttempts)) {
      if (result.errorCode === null) m.inc(M.pagesFetched);
      else m.inc(M.fetchErrors, 1, result.errorCode);
      return;
    }
    // retried at the back of the host's queue; the URL keeps its single place in the seen-set
    this.back.append(state, { ...entry, attempts });
    this.backQueued++;
    m.inc(M.fetchRetries, 1, result.errorCode ?? String(result.status));
  }

  /** A host with no queued URL, no lease and no robots.txt hop gives its slot back (keeping its clock) and the slot is refilled. */
  private deactivate(state: HostState): void {
    if (state.lease || state.tailSeq > state.headSeq || state.robotsHops.length > 0) return;
    if (this.lastAppended === state) this.lastAppended = undefined;
    this.active.delete(state.host);
    this.hosts.forget(state.host);
    this.back.forget(state.host);
    this.parked.delete(state.host);
    this.held.get(state.site)?.delete(state.host);
    this.ips.forget(state.host);
    this.noteExhausted(state.site);
    this.refill();
  }

  private dropBack(state: HostState, reason: string): void {
    // robots.txt hops go with the queue; a host whose chain waited on this one is dropped at its own turn
    state.robotsHops = [];
    const n = this.back.clear(state);
    this.backQueued -= n;
    this.hosts.put(state);
    this.ctx.metrics.inc(M.urlsDropped, n, reason);
    this.deactivate(state);
  }

  private control(cmd: ControlCommand): void {
    this.sites.apply(cmd);
    this.ctx.metrics.inc(M.controlCommands, 1, cmd.action);
    // held hosts go back to the schedule, where the new control decides (dispatch drops blocked ones)
    const held = this.held.get(cmd.site);
    this.held.delete(cmd.site);
    const now = this.ctx.currentTimeMs();
    for (const host of held ?? []) this.heap.push(host, now);
  }

  /** A lease with no result by its expiry is presumed lost: the URL is retried after a full gap from now. */
  private expireLeases(now: number): void {
    for (const [leaseId, { host, expiresAt }] of this.leases) {
      if (expiresAt > now) continue;
      const state = this.hosts.get(host);
      if (!state || !state.lease || state.lease.leaseId !== leaseId) {
        this.leases.delete(leaseId);
        continue;
      }
      this.ctx.metrics.inc(M.leasesExpired);
      this.complete({
        leaseId,
        ownerEpoch: this.epoch,
        url: state.lease.url,
        host,
        site: state.site,
        kind: state.lease.kind as FetchResult['kind'],
        status: 0,
        startedAt: now,
        durationMs: 0,
        errorCode: 'CS_LEASE_LOST',
        errorMessage: 'lease expired without a result',
        retryAfterMs: null,
        redirectTarget: null,
        robotsBody: null,
        remoteAddress: null,
      });
    }
  }

  /** One site's state in this task (site-status.ts): read-only, in-memory sets and point reads only. */
  private siteStatus(site: string): SiteStatus {
    return siteStatus(
      {
        now: this.ctx.currentTimeMs(),
        robotsTtlMs: this.config.robotsTtlMs,
        activeHosts: this.active,
        host: (h) => this.hosts.get(h),
        isParked: (h) => this.parked.has(h),
        // every host the view asks about is of `site` (held hosts are kept by site)
        isHeld: (h) => this.held.get(site)?.has(h) === true,
        eligibleAt: (state) => this.eligibleAt(state),
        site: (name) => this.sites.stateOf(name),
        budget: (state) => this.sites.budget(state),
        templateAllowance: { base: this.config.templateAllowance, perInlink: this.config.templateAllowancePerInlink },
        control: (name) => this.sites.control(name),
        outcomes: (h) => this.outcomes.of(h),
        frontBands: () => BANDS.map((_, b) => this.front.sizeOf(b as Band)),
        backQueued: this.backQueued,
      },
      site,
    );
  }

  private reportGauges(): void {
    const owner = String(this.ctx.taskId.partition);
    const g = (name: MetricId, v: number) => this.ctx.metrics.setGauge(name, owner, v);
    g(M.frontierQueuedUrls, this.backQueued + this.front.size);
    g(M.frontierFrontQueuedUrls, this.front.size);
    g(M.frontierLeases, this.leases.size);
    g(M.frontierActiveHosts, this.active.size);
    g(M.frontierHostsWaiting, this.heap.size);
    g(M.frontierParkedHosts, this.parked.size);
    g(M.frontierParkedUrls, this.waitingQueued());
    g(M.frontierDeferredUrls, this.deferred.size);
    g(M.recrawlScheduledUrls, this.revisits.scheduled);
    this.seenSet.reportMetrics(this.ctx.metrics, owner);
    this.ctx.metrics.setGauge(M.cacheBytes, owner, this.robots.bytes, 'robots-parsed');
    this.ctx.metrics.setGauge(M.cacheBytes, owner, this.sites.cacheBytes, 'site-states');
  }
}
