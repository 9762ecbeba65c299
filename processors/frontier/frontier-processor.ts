import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import type { FetchRequest, FetchResult, HostState, LinkBatch, QueueEntry } from '../../schemas/types.js';
import type { CrawlConfig } from '../crawl-config.js';
import { isFinalOutcome } from '../outcome.js';
import { fingerprint64 } from '../parser/fingerprint.js';
import { siteOf } from '../parser/normalize.js';
import { HOSTS_STORE, META_STORE, QUEUE_STORE, SEEN_STORE, type HostStore, type MetaStore, type QueueStore, type SeenStore } from './frontier-stores.js';
import { HostHeap } from './host-heap.js';
import { backoffAfter, requiredGap, robotsVerdict, RobotsCache } from './politeness.js';
import { trapCheck } from './url-rules.js';

export type FrontierInput = LinkBatch | FetchResult;

export const FETCH_REQUESTS_SINK = 'fetch-requests-sink';
const EXPIRY_GRACE_MS = 5_000;
const DISPATCH_BATCH = 2_000;

/**
 * The polite frontier of one site partition: admits discovered URLs through the seen-set into one
 * FIFO per host, and hands out leases for hosts whose gap has passed. A host holds at most one lease
 * at a time, so one URL per host is in flight; the gap counts from when its result arrives. After
 * every (re)start each host waits a full gap before its next fetch.
 */
export class FrontierProcessor implements Processor<string, FrontierInput, string, FetchRequest> {
  private ctx!: ProcessorContext<string, FetchRequest>;
  private hosts!: HostStore;
  private queue!: QueueStore;
  private seen!: SeenStore;
  private meta!: MetaStore;
  private readonly heap = new HostHeap();
  private readonly leases = new Map<string, { host: string; expiresAt: number }>();
  /** Hosts whose robots.txt answered 5xx or nothing: disallowed until a retry succeeds. */
  private readonly parked = new Set<string>();
  private readonly robots: RobotsCache;
  private epoch = 0;
  private startedAt = 0;
  private leaseCounter = 0;
  private queued = 0;

  constructor(private readonly config: CrawlConfig) {
    this.robots = new RobotsCache(config.userAgent);
  }

  init(context: ProcessorContext<string, FetchRequest>): void {
    this.ctx = context;
    this.hosts = context.getStateStore(HOSTS_STORE);
    this.queue = context.getStateStore(QUEUE_STORE);
    this.seen = context.getStateStore(SEEN_STORE);
    this.meta = context.getStateStore(META_STORE);
    this.epoch = readNumber(this.meta.get('epoch')) + 1;
    this.meta.put('epoch', numberBytes(this.epoch));
    this.startedAt = context.currentTimeMs();
    for (const [host, state] of this.hosts.range('', '\uffff')) {
      this.queued += state.tailSeq - state.headSeq;
      if (state.robotsState === 'UNAVAILABLE') this.parked.add(host);
      if (state.lease) this.leases.set(state.lease.leaseId, { host, expiresAt: state.lease.expiresAt });
      else if (state.tailSeq > state.headSeq) this.heap.push(host, this.eligibleAt(state));
    }
    context.schedule(20, (now) => this.dispatch(now));
    context.schedule(500, (now) => this.expireLeases(now));
    context.schedule(1_000, () => this.reportGauges());
    this.reportGauges();
  }

  process(record: StreamRecord<string, FrontierInput>): void {
    const value = record.value;
    if ('links' in value) this.admit(value, record.timestamp);
    else this.complete(value);
  }

  close(): void {
    // final gauges for the run summary; stores are still open here
    this.reportGauges();
  }

  /**
   * Idle when nothing is in flight and every queued URL waits on a host parked because its
   * robots.txt is unavailable (those resume on a later run or retry; they are not lost).
   */
  isIdle(): boolean {
    if (this.leases.size > 0) return false;
    return this.queued === this.parkedQueued();
  }

  private parkedQueued(): number {
    let n = 0;
    for (const host of this.parked) {
      const state = this.hosts.get(host);
      if (state) n += state.tailSeq - state.headSeq;
    }
    return n;
  }

  /** Seen-set first, then trap rules and the site budget; a URL is queued at most once, ever. */
  private admit(batch: LinkBatch, timestamp: number): void {
    const m = this.ctx.metrics;
    for (const link of batch.links) {
      const reason = trapCheck(link.url, link.redirectHops, this.config);
      if (reason) {
        m.inc('urls_dropped', 1, reason);
        continue;
      }
      const fp = fingerprintBytes(link.url);
      if (this.seen.get(fp) !== undefined) {
        m.inc('urls_seen');
        continue;
      }
      this.seen.put(fp, EMPTY);
      const site = siteOf(link.url);
      const budgetKey = `budget\u0000${site}`;
      const admitted = readNumber(this.meta.get(budgetKey));
      if (admitted >= this.config.sitePageBudget) {
        m.inc('urls_dropped', 1, 'site-budget');
        continue;
      }
      this.meta.put(budgetKey, numberBytes(admitted + 1));
      const url = new URL(link.url);
      const host = url.hostname;
      const state = this.hosts.get(host) ?? newHost(host, url.origin, site);
      const entry: QueueEntry = { url: link.url, depth: link.depth, redirectHops: link.redirectHops, attempts: 0, discoveredAt: timestamp };
      this.queue.put({ host, seq: state.tailSeq }, entry);
      const wasEmpty = state.tailSeq === state.headSeq;
      state.tailSeq++;
      this.queued++;
      this.hosts.put(host, state);
      m.inc('urls_admitted');
      if (wasEmpty && !state.lease) this.heap.push(host, this.eligibleAt(state));
    }
  }

  /** The earliest a host may be fetched: its own clock, and a full gap after this task started. */
  private eligibleAt(state: HostState): number {
    return Math.max(state.nextEligibleAt, this.startedAt + Math.max(state.gapMs, this.config.minDelayMs));
  }

  private dispatch(now: number): void {
    let issued = 0;
    while (issued < DISPATCH_BATCH) {
      const at = this.heap.peekTime();
      if (at === undefined || at > now) break;
      const { host } = this.heap.pop()!;
      const state = this.hosts.get(host);
      if (!state || state.lease || state.tailSeq === state.headSeq) continue;
      const due = this.eligibleAt(state);
      if (due > now) {
        this.heap.push(host, due);
        continue;
      }
      if (this.needsRobots(state, now)) {
        this.lease(state, now, { url: `${state.origin}/robots.txt`, depth: 0, redirectHops: 0, attempts: 0 }, false);
        issued++;
        continue;
      }
      const entry = this.nextAllowed(state);
      if (!entry) continue;
      this.lease(state, now, entry, true);
      issued++;
    }
  }

  private needsRobots(state: HostState, now: number): boolean {
    if (state.robotsState === 'UNKNOWN' || state.robotsState === 'UNAVAILABLE') return true;
    return now - state.robotsFetchedAt > this.config.robotsTtlMs;
  }

  /** Pops queue heads the host's robots.txt disallows (counting them) until one is allowed. */
  private nextAllowed(state: HostState): QueueEntry | undefined {
    while (state.headSeq < state.tailSeq) {
      const key = { host: state.host, seq: state.headSeq };
      const entry = this.queue.get(key);
      if (!entry) {
        state.headSeq++;
        this.queued--;
        continue;
      }
      if (state.robotsState === 'READY' && state.robotsBody !== null && !this.robots.isAllowed(state.origin, state.robotsBody, entry.url)) {
        this.queue.delete(key);
        state.headSeq++;
        this.queued--;
        this.ctx.metrics.inc('urls_dropped', 1, 'robots-disallowed');
        continue;
      }
      return entry;
    }
    this.hosts.put(state.host, state);
    return undefined;
  }

  private lease(state: HostState, now: number, entry: Pick<QueueEntry, 'url' | 'depth' | 'redirectHops' | 'attempts'>, fromQueue: boolean): void {
    const leaseId = `${this.epoch}-${this.ctx.taskId.partition}-${(this.leaseCounter++).toString(36)}`;
    const notAfter = now + this.config.leaseWindowMs;
    const expiresAt = notAfter + this.config.fetchTimeoutMs + EXPIRY_GRACE_MS;
    const kind = fromQueue ? 'PAGE' : 'ROBOTS';
    state.lease = { leaseId, url: entry.url, kind, depth: entry.depth, redirectHops: entry.redirectHops, attempts: entry.attempts, issuedAt: now, expiresAt, fromQueue };
    this.hosts.put(state.host, state);
    this.leases.set(leaseId, { host: state.host, expiresAt });
    const request: FetchRequest = {
      leaseId, ownerEpoch: this.epoch, url: entry.url, host: state.host, site: state.site, kind,
      depth: entry.depth, redirectHops: entry.redirectHops, attempt: entry.attempts + 1,
      issuedAt: now, notAfter, ifNoneMatch: null, ifModifiedSince: null,
    };
    this.ctx.forward({ key: state.site, value: request, timestamp: now }, FETCH_REQUESTS_SINK);
    this.ctx.metrics.inc('leases_issued', 1, kind);
  }

  /** Applies a fetch result to its lease; results for unknown or replaced leases are ignored. */
  private complete(result: FetchResult): void {
    const now = this.ctx.currentTimeMs();
    const state = this.hosts.get(result.host);
    if (!state || !state.lease || state.lease.leaseId !== result.leaseId) {
      this.ctx.metrics.inc('results_ignored');
      return;
    }
    const lease = state.lease;
    state.lease = null;
    this.leases.delete(result.leaseId);
    const fetched = result.errorCode !== 'CS_LEASE_EXPIRED';
    if (fetched) {
      state.fetches++;
      state.gapMs = requiredGap(this.config, result.durationMs, state.crawlDelayMs);
      // the gap counts from when the result is known here: never earlier than the fetch's end
      state.nextEligibleAt = Math.max(now, result.startedAt + result.durationMs) + state.gapMs;
    }
    if (lease.kind === 'ROBOTS') this.applyRobots(state, result, now);
    else this.applyPage(state, lease.fromQueue, result, now);
    this.hosts.put(state.host, state);
    if (state.tailSeq > state.headSeq) this.heap.push(state.host, this.eligibleAt(state));
  }

  private applyRobots(state: HostState, result: FetchResult, now: number): void {
    const verdict = robotsVerdict(result.status, result.errorCode);
    this.ctx.metrics.inc('robots_results', 1, verdict);
    if (result.errorCode === 'CS_LEASE_EXPIRED') return;
    state.robotsFetchedAt = now;
    if (verdict === 'UNAVAILABLE') {
      // disallow all and retry later; the queue is kept (parked), never dropped
      state.robotsState = 'UNAVAILABLE';
      state.robotsFailures++;
      this.parked.add(state.host);
      const wait = Math.min(this.config.robotsRetryMs * 2 ** (state.robotsFailures - 1), this.config.backoffMaxMs);
      state.nextEligibleAt = Math.max(state.nextEligibleAt, now + wait);
      return;
    }
    this.parked.delete(state.host);
    state.robotsFailures = 0;
    state.robotsState = verdict;
    state.robotsBody = verdict === 'READY' ? (result.robotsBody ?? '') : null;
    state.crawlDelayMs = state.robotsBody !== null ? this.robots.crawlDelayMs(state.origin, state.robotsBody) : 0;
    state.gapMs = Math.max(state.gapMs, requiredGap(this.config, result.durationMs, state.crawlDelayMs));
    state.nextEligibleAt = Math.max(state.nextEligibleAt, now + state.gapMs);
  }

  private applyPage(state: HostState, fromQueue: boolean, result: FetchResult, now: number): void {
    const m = this.ctx.metrics;
    const key = { host: state.host, seq: state.headSeq };
    const entry = fromQueue ? this.queue.get(key) : undefined;
    if (result.status === 429 || result.status === 503) {
      state.backoffMs = backoffAfter(this.config, result.retryAfterMs, state.backoffMs);
      state.nextEligibleAt = Math.max(state.nextEligibleAt, now + state.backoffMs);
      m.inc('backoffs', 1, String(result.status));
    } else if (result.errorCode === null) {
      state.backoffMs = 0;
    }
    if (!entry) return;
    const attempts = entry.attempts + (result.errorCode === 'CS_LEASE_EXPIRED' ? 0 : 1);
    this.queue.delete(key);
    state.headSeq++;
    this.queued--;
    if (isFinalOutcome(result.status, result.errorCode, attempts, this.config.maxAttempts)) {
      if (result.errorCode === null) m.inc('pages_fetched');
      else m.inc('fetch_errors', 1, result.errorCode);
      return;
    }
    // retried at the back of the host's queue; the URL keeps its single place in the seen-set
    this.queue.put({ host: state.host, seq: state.tailSeq }, { ...entry, attempts });
    state.tailSeq++;
    this.queued++;
    m.inc('fetch_retries', 1, result.errorCode ?? String(result.status));
  }

  /** A lease with no result by its expiry is presumed lost: the URL is retried after a full gap. */
  private expireLeases(now: number): void {
    for (const [leaseId, { host, expiresAt }] of this.leases) {
      if (expiresAt > now) continue;
      const state = this.hosts.get(host);
      this.leases.delete(leaseId);
      if (!state || !state.lease || state.lease.leaseId !== leaseId) continue;
      this.ctx.metrics.inc('leases_expired');
      this.complete({
        leaseId, ownerEpoch: this.epoch, url: state.lease.url, host, site: state.site, kind: state.lease.kind === 'ROBOTS' ? 'ROBOTS' : 'PAGE',
        status: 0, startedAt: state.lease.issuedAt, durationMs: 0, errorCode: 'CS_TIMEOUT', errorMessage: 'lease expired without a result',
        retryAfterMs: null, redirectTarget: null, robotsBody: null,
      });
    }
  }

  private reportGauges(): void {
    const owner = String(this.ctx.taskId.partition);
    this.ctx.metrics.setGauge('frontier_queued_urls', owner, this.queued);
    this.ctx.metrics.setGauge('frontier_leases', owner, this.leases.size);
    this.ctx.metrics.setGauge('frontier_parked_hosts', owner, this.parked.size);
    this.ctx.metrics.setGauge('frontier_parked_urls', owner, this.parkedQueued());
    // heap entries are hints (a host may appear twice), so this is an upper bound of hosts waiting with work
    this.ctx.metrics.setGauge('frontier_hosts_waiting', owner, this.heap.size);
  }
}

const EMPTY = Buffer.alloc(0);

function newHost(host: string, origin: string, site: string): HostState {
  return {
    host, origin, site, headSeq: 0, tailSeq: 0, nextEligibleAt: 0, gapMs: 0, backoffMs: 0,
    robotsState: 'UNKNOWN', robotsBody: null, robotsFetchedAt: 0, robotsFailures: 0, crawlDelayMs: 0, lease: null, fetches: 0,
  };
}

function fingerprintBytes(url: string): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(fingerprint64(url));
  return b;
}

function readNumber(b: Buffer | undefined): number {
  return b === undefined ? 0 : Number(b.readBigUInt64BE(0));
}

function numberBytes(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}
