import { M } from '../../core/metric-catalogue.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import type { FetchedPage, FetchRequest, FetchResult } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { AddressGuard, parseCidr } from './address-guard.js';
import { decodeBody, decodedSizeExceeds } from '../common/decode.js';
import { CachingDnsResolver, parseResolveRule } from './dns-resolver.js';
import { WireGate } from './wire-gate.js';
import { FetchPermits } from './fetch-permits.js';
import { ProcessFrame } from './lease-clock.js';
import { LeaseIssuers, lateness, untilDue, type Issuer } from './lease-issuers.js';
import { CrawlError } from '../../core/errors.js';
import { EXPIRY_GRACE_MS } from '../common/lease-expiry.js';
import { HttpClient, type FetchOutcome } from './http-client.js';
import { isDedupable } from '../common/payload.js';
import { AcceptTypes } from '../common/accept-types.js';
import { SiteOverrides } from '../common/site-overrides.js';
import { sha1Digest } from '../common/payload.js';

export const FETCH_RESULTS_SINK = 'fetch-results-sink';
export const FETCHED_SINK = 'fetched-sink';
/** RFC 9309 §2.5: crawlers must parse at least 500 KiB of a robots.txt; we keep exactly that. */
const ROBOTS_MAX_BYTES = 500 * 1024;
/**
 * Lease ids a fetcher task remembers to drop a lease record written twice; a copy follows its
 * original closely (a producer's retry of the same batch), well within a poll batch or two.
 */
const RECENT_LEASES = 10_000;
/** What one remembered lease id holds besides its characters (string header, the set's slot). */
const LEASE_ID_OVERHEAD = 64;
/**
 * Leases a fetcher task holds beyond its fetch permits, waiting for their start: the runtime gives
 * the task `fetchConcurrency` plus this many records at once (crawl-topology.ts). A waiting lease
 * is a timer and its request; a lease past this many waits in the task's input.
 */
export const LEASES_WAITING = 2_048;

/**
 * Stateless fetcher: waits for the lease's notBefore (on the issuing frontier's clock, as the task's
 * LeaseClock estimates it: fetcher and frontier may run on machines whose clocks disagree), then turns each lease into exactly one fetch result (to the frontier) and exactly
 * one fetched record (to the parser, which archives every one in WARC and publishes PAGE kinds). A fetched
 * 2xx page body carries its payload digest, which is also its key (see schemas/fetched-page.avsc).
 * This holds for every outcome: a response, a failure (status 0 and an error code), and a lease
 * whose not-after deadline has passed, which is dropped unfetched as CS_LEASE_EXPIRED so a backlog
 * of requests can never burst a host. Every time a result reports is on the frontier's clock too. A lease from an older frontier owner epoch than one this
 * task has already seen from the same frontier partition (it moved to a new owner) is dropped the
 * same way. Fetch requests are keyed by address, so a task takes leases of many frontier
 * partitions, each with its own epochs and clock, and every lease of an address passes one
 * process's wire gate.
 *
 * The lease's `ifNoneMatch` / `ifModifiedSince` are sent as conditional headers; a 304 is an
 * ordinary outcome (status 304, no error). A 2xx body whose content coding decodes to more than
 * `maxDecodedBytes` is reported as CS_BOMB; its raw bytes are still archived.
 */
export class FetcherProcessor implements Processor<string, FetchRequest, string, FetchResult | FetchedPage> {
  private ctx!: ProcessorContext<string, FetchResult | FetchedPage>;
  private client!: HttpClient;
  /** Ids of the last RECENT_LEASES leases taken, oldest first. */
  private readonly recentLeases = new Set<string>();
  private recentLeaseBytes = 0;
  private resolver!: CachingDnsResolver;
  private readonly acceptTypes: AcceptTypes;
  /** The config file's `sites:` entries: their extra request headers. */
  private readonly siteOverrides: SiteOverrides;
  /** Leases waiting for their notBefore; `close` ends every wait at once (their task is gone). */
  private readonly waits = new LeaseWaits();
  /** Fetches under way at once (--fetch-concurrency); leases waiting for their start hold none. */
  private readonly permits: FetchPermits;
  /** The per-IP gap at the wire: shared by the process's fetcher tasks when the engine runs them all. */
  private gate!: WireGate;
  /**
   * Each issuing frontier partition's newest owner epoch (its older leases are stale) and clock,
   * estimated from its leases: a task takes leases of many (fetch requests are keyed by address).
   */
  private issuers!: LeaseIssuers;

  constructor(private readonly config: CrawlConfig) {
    this.acceptTypes = new AcceptTypes(config.acceptTypes);
    this.siteOverrides = new SiteOverrides(config.sites);
    this.permits = new FetchPermits(config.fetchConcurrency);
  }

  init(context: ProcessorContext<string, FetchResult | FetchedPage>): void {
    this.ctx = context;
    // every fetch of this process to an address passes one gate, whichever task it belongs to
    this.gate = context.inProcess(
      'fetcher-wire-gate',
      () => new WireGate(this.config.ipGapMs, undefined, this.config.ipConcurrency),
    );
    // and every lease of the process starts on one offset (lease-clock.ts, ProcessFrame)
    this.issuers = new LeaseIssuers(context.inProcess('fetcher-lease-frame', () => new ProcessFrame()));
    const resolver = (this.resolver = new CachingDnsResolver({
      rules: this.config.resolve.map(parseResolveRule),
      systemDns: this.config.systemDns,
    }));
    const guard = new AddressGuard(this.config.allowIps.map(parseCidr));
    this.client = new HttpClient({
      userAgent: this.config.userAgent,
      resolver,
      guard,
      connectTimeoutMs: this.config.connectTimeoutMs,
      headersTimeoutMs: this.config.headersTimeoutMs,
      totalTimeoutMs: this.config.fetchTimeoutMs,
      maxBodyBytes: this.config.maxBodyBytes,
      extraCaPem: this.config.extraCaPem,
    });
  }

  async process(record: StreamRecord<string, FetchRequest>): Promise<void> {
    const req = record.value;
    // a lease id seen before is the same lease in a record written twice (a producer's retry):
    // one lease is one request, so the copy is dropped without an answer (the first one answers)
    if (this.recentLeases.has(req.leaseId)) return;
    this.recentLeases.add(req.leaseId);
    this.recentLeaseBytes += LEASE_ID_OVERHEAD + 2 * req.leaseId.length;
    if (this.recentLeases.size > RECENT_LEASES) {
      const oldest = this.recentLeases.values().next().value!;
      this.recentLeases.delete(oldest);
      this.recentLeaseBytes -= LEASE_ID_OVERHEAD + 2 * oldest.length;
    }
    const owner = String(this.ctx.taskId.partition);
    this.ctx.metrics.setGauge(M.cacheBytes, owner, this.recentLeaseBytes, 'fetcher-recent-leases');
    this.ctx.metrics.setGauge(M.cacheBytes, owner, this.resolver.cacheBytes, 'dns');
    this.ctx.metrics.setGauge(M.cacheBytes, owner, this.client.tlsSessions.bytes, 'tls-sessions');
    const issuer = this.issuers.received(req);
    const clock = issuer.clock;
    // one figure a process, whichever task took the lease: its tasks read one frame
    const ahead = clock.wallAheadMs(Date.now());
    if (ahead !== undefined) this.ctx.metrics.setGauge(M.fetcherClockAhead, 'fetchers', ahead / 1000);
    // a lease may be handed out just before its host is due; the gap is kept by starting no earlier
    // (looped: timers may fire a millisecond early, and the offset may move while waiting)
    for (let early = untilDue(req, clock); early > 0; early = untilDue(req, clock))
      if (!(await this.waits.wait(early))) break;
    // closed while waiting (or before): the task's last commit is done, so a result could never be
    // committed; no request is sent, and the frontier's lease expiry issues the URL again
    if (this.waits.closed) return;
    if (this.droppedLate(req, issuer, 'on arrival')) return;
    // a lease waiting for its start holds no fetch permit; one waiting for a permit may pass its
    // window, which the gate's check below catches
    if (!(await this.permits.take())) return;
    try {
      await this.fetchLeased(req, issuer);
    } finally {
      this.permits.give();
    }
  }

  /** Fetches a lease that is due, holding a permit: through the wire gate, then one result and one fetched record. */
  private async fetchLeased(req: FetchRequest, issuer: Issuer): Promise<void> {
    const clock = issuer.clock;
    // the per-IP gap where the request leaves: a lease that reached this fetcher late must not
    // start within the gap of one that left before it (a URL or name that does not resolve fails
    // in the fetch below, as before)
    const address = await this.addressOf(req.url);
    const wire =
      address === undefined ? undefined : await this.gate.pass(address, (ms, wake) => this.waits.wait(ms, wake));
    if (address !== undefined && wire === undefined) return;
    // the gate may have held it past its window: the frontier may have given the URL out again
    if (this.droppedLate(req, issuer, 'at the gate')) return wire?.done();
    // a site's extra headers first: the lease's validators are its own
    const headers = { ...this.siteOverrides.forUrl(req.url).headers, ...conditionalHeaders(req) };
    let outcome: FetchOutcome;
    const started = clock.now();
    try {
      // robots.txt, sitemaps and feeds are read whatever type they are served as
      const accept =
        req.kind === 'PAGE' ? (h: Record<string, string>) => this.acceptTypes.accepts(h['content-type']) : undefined;
      // the gate's gap runs from the real send: a connect that took long must not shorten it. A
      // lease may take as much again as its window for its fetch to reach the wire; one that has
      // not by then is not sent (the frontier's expiry may have given the URL out again)
      outcome = await this.client.fetch(req.url, headers, accept, () => {
        const late = lateness(req, clock, Math.max(0, req.notAfter - (req.notBefore ?? req.notAfter)));
        if (late.late) return new CrawlError('CS_LEASE_EXPIRED', lateMessage(req, late.now));
        // undici writes the head in this turn, after the hook returns: taken once it is written, a
        // pause between the two (a GC, a preempted thread) lengthens the address's gap, never eats it
        queueMicrotask(() => {
          wire?.sent();
          // when the head left, on this machine's clock: beside a server's log, it tells a late
          // stamp there from a start here (--log-level debug; the send path's only debug line)
          this.ctx.log.debug('request sent', {
            url: req.url,
            address: address ?? null,
            lease: req.leaseId,
            sentAt: Math.round((performance.timeOrigin + performance.now()) * 10) / 10,
          });
        });
      });
    } catch (err) {
      // the client never rejects by contract; if it ever does, the lease still gets its answer
      outcome = failedOutcome(req.url, Math.round(clock.now() - started), err);
    } finally {
      wire?.done();
    }
    // reported with the offset of now: the host's next lease keeps its gap from this report
    const reportOffset = clock.offset;
    outcome.startedAt = clock.toFrontier(started, reportOffset);
    clock.reported(req.host, reportOffset);
    // refused at the wire (its window passed during the connect): a late drop, not a fetch
    if (outcome.errorCode === 'CS_LEASE_EXPIRED') {
      this.ctx.metrics.inc(M.leasesDroppedLate);
      this.ctx.log.debug('lease dropped', { url: req.url, lease: req.leaseId, why: 'late', where: 'at the wire' });
    } else this.ctx.metrics.inc(M.fetches, 1, req.kind);
    let robotsBody: string | null = null;
    try {
      // a body cut at the cap is still checked: a bomb is the more telling verdict than its size
      const complete = outcome.errorCode === undefined || outcome.errorCode === 'CS_TOO_LARGE';
      if (complete && outcome.status >= 200 && outcome.status < 300) {
        if (await decodedSizeExceeds(outcome.body, outcome.headers['content-encoding'], this.config.maxDecodedBytes)) {
          outcome.errorCode = 'CS_BOMB';
          outcome.errorMessage = `${outcome.headers['content-encoding']} body of ${outcome.body.length} bytes decodes to more than ${this.config.maxDecodedBytes} bytes`;
        } else if (req.kind === 'ROBOTS' && outcome.errorCode === undefined) {
          const decoded = decodeBody(outcome.body, outcome.headers['content-encoding'], this.config.maxDecodedBytes);
          robotsBody = decoded.body.subarray(0, ROBOTS_MAX_BYTES).toString('utf8');
        }
      }
    } catch (err) {
      outcome.errorCode = 'CS_INTERNAL';
      outcome.errorMessage = `checking the body failed: ${(err as Error).message}`;
    }
    const m = this.ctx.metrics;
    if (outcome.errorCode) m.inc(M.fetchOutcomeErrors, 1, outcome.errorCode);
    m.inc(
      M.fetchOutcomes,
      1,
      `${outcome.errorCode ?? 'ok'},${outcome.status === 0 ? 'none' : `${Math.floor(outcome.status / 100)}xx`}`,
    );
    m.inc(M.fetchBodyBytes, outcome.body.length);
    m.observe(M.fetchDuration, outcome.durationMs / 1000, req.kind);
    this.emit(req, outcome, robotsBody, this.client.requestHead(req.url, headers));
  }

  /**
   * Whether the lease is answered as late (past its window: CS_LEASE_EXPIRED) or stale (an older
   * owner's) instead of fetched; if so the answer is out.
   */
  private droppedLate(req: FetchRequest, issuer: Issuer, where: string): boolean {
    const { late, now, offset } = lateness(req, issuer.clock);
    const stale = req.ownerEpoch < issuer.newestEpoch;
    if (!late && !stale) return false;
    this.ctx.log.debug('lease dropped', {
      url: req.url,
      lease: req.leaseId,
      why: stale ? 'stale' : 'late',
      where,
      pastWindowMs: Math.round(now - req.notAfter),
      // how far ahead of its start it was issued, and how long ago: a lease issued at its start
      // has only its window to cross the frontier's commit and reach this task
      leadMs: Math.round((req.notBefore ?? req.issuedAt) - req.issuedAt),
      issuedAgoMs: Math.round(now - req.issuedAt),
      offset: Math.round(offset),
    });
    this.ctx.metrics.inc(late ? M.leasesDroppedLate : M.leasesDroppedStale);
    // nothing was sent, and not before the lease was due (by then the host's gap had passed): its
    // next lease keeps no gap from this one
    if (!stale) issuer.clock.forget(req.host);
    this.emit(req, lateOutcome(req, now, late, issuer.newestEpoch), null);
    return true;
  }

  /** Forwards the lease's one fetch result and one fetched record (their times on the frontier's clock). */
  private emit(
    req: FetchRequest,
    o: FetchOutcome,
    robotsBody: string | null,
    head = this.client.requestHead(req.url, conditionalHeaders(req)),
  ): void {
    const result: FetchResult = {
      leaseId: req.leaseId,
      ownerEpoch: req.ownerEpoch,
      url: req.url,
      host: req.host,
      site: req.site,
      kind: req.kind,
      status: o.status,
      startedAt: o.startedAt,
      durationMs: o.durationMs,
      errorCode: o.errorCode ?? null,
      errorMessage: o.errorMessage ?? null,
      retryAfterMs: o.retryAfterMs ?? null,
      redirectTarget: o.redirectTarget ?? null,
      robotsBody,
      remoteAddress: o.remoteAddress ?? null,
    };
    this.ctx.forward({ key: req.site, value: result, timestamp: Date.now() }, FETCH_RESULTS_SINK);
    this.ctx.metrics.inc(M.fetchResults, 1, req.kind);
    const page: FetchedPage = {
      leaseId: req.leaseId,
      url: req.url,
      host: req.host,
      site: req.site,
      depth: req.depth,
      redirectHops: req.redirectHops,
      attempt: req.attempt,
      fetchedAt: o.startedAt,
      durationMs: o.durationMs,
      status: o.status,
      httpVersion: o.httpVersion ?? null,
      requestHead: head,
      headers: Object.entries(o.headers).map(([name, value]) => ({ name, value })),
      body: o.body,
      truncated: o.truncated,
      remoteAddress: o.remoteAddress ?? null,
      errorCode: o.errorCode ?? null,
      errorMessage: o.errorMessage ?? null,
      redirectTarget: o.redirectTarget ?? null,
      kind: req.kind,
      // what the last visit found goes on with the page: the parser tells a change, or archives a 304
      visit: req.visit ?? 0,
      previousFetchTime: req.previousFetchTime ?? null,
      previousStatus: req.previousStatus ?? 0,
      previousDigest: req.previousDigest ?? null,
      previousSimhash: req.previousSimhash ?? null,
    };
    // keyed by payload digest when it takes part in duplicate detection, so that every copy of a
    // payload, on any site, reaches the parser partition that archived the first one
    if (isDedupable(page)) page.payloadDigest = sha1Digest(page.body);
    try {
      this.ctx.forward({ key: page.payloadDigest ?? req.site, value: page, timestamp: Date.now() }, FETCHED_SINK);
    } catch (err) {
      // the result is already out; the archive still gets a record of this lease, without the body
      this.ctx.forward(
        {
          key: req.site,
          timestamp: Date.now(),
          value: {
            ...page,
            status: 0,
            headers: [],
            body: Buffer.alloc(0),
            truncated: false,
            errorCode: 'CS_INTERNAL',
            payloadDigest: null,
            errorMessage:
              `fetched record not writable (${(err as Error).message}); original outcome ${o.status} ${o.errorCode ?? ''}`.trimEnd(),
          },
        },
        FETCHED_SINK,
      );
    }
  }

  /** The address a request to `url` connects to (the resolver's first), or undefined when it has none. */
  private async addressOf(url: string): Promise<string | undefined> {
    try {
      return (await this.resolver.resolve(new URL(url).hostname))[0];
    } catch {
      return undefined;
    }
  }

  /** Leases waiting for their notBefore now (each lease waits at most once at a time). */
  get waitingLeases(): number {
    return this.waits.size;
  }

  /** Leases still waiting for their time give up at once (no request, no result); fetches under way end first. */
  async close(): Promise<void> {
    this.waits.close();
    this.permits.close();
    await this.client?.close();
  }
}

/**
 * Timed waits that one `close` ends together. Every lease of a task may be waiting at once (a
 * host's next start is seconds away), so a wait is a timer and an entry in a set that is gone when
 * the wait ends: an abortable sleep on one shared AbortSignal would add an 'abort' listener per
 * waiting lease, and past ten Node warns of a listener leak (MaxListenersExceededWarning).
 */
class LeaseWaits {
  private readonly pending = new Set<() => void>();
  closed = false;

  /**
   * Resolves true after `ms` or as soon as `wake` resolves, whichever is first; false as soon as
   * `close` is called (at once when it was).
   */
  wait(ms: number, wake?: Promise<void>): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const end = (elapsed: boolean) => {
        clearTimeout(timer);
        this.pending.delete(cancel);
        resolve(elapsed);
      };
      const cancel = () => end(false);
      const timer = setTimeout(end, ms, true);
      this.pending.add(cancel);
      void wake?.then(() => end(true));
    });
  }

  get size(): number {
    return this.pending.size;
  }

  close(): void {
    this.closed = true;
    for (const cancel of [...this.pending]) cancel();
  }
}

/** The lease's validators as request headers. */
export function conditionalHeaders(req: Pick<FetchRequest, 'ifNoneMatch' | 'ifModifiedSince'>): Record<string, string> {
  const headers: Record<string, string> = {};
  // a validator that could split the header block is not sent: the fetch just becomes unconditional
  if (req.ifNoneMatch && !/[\r\n]/.test(req.ifNoneMatch)) headers['if-none-match'] = req.ifNoneMatch;
  if (req.ifModifiedSince && !/[\r\n]/.test(req.ifModifiedSince)) headers['if-modified-since'] = req.ifModifiedSince;
  return headers;
}

/** Why a lease whose window has passed (`now` on the frontier's clock) is not fetched. */
function lateMessage(req: FetchRequest, now: number): string {
  return now > req.notAfter
    ? `lease started ${now - req.notAfter} ms after its not-after deadline`
    : `lease started ${Date.now() - req.notAfter} ms after its not-after deadline on this fetcher's clock, more than the ${EXPIRY_GRACE_MS} ms it may run ahead of the frontier's`;
}

/** A lease dropped unfetched: past its deadline, or issued by an owner epoch older than one already seen (the partition moved). */
function lateOutcome(req: FetchRequest, now: number, late: boolean, newestEpoch: number): FetchOutcome {
  const why = !late
    ? `lease of frontier owner epoch ${req.ownerEpoch}; epoch ${newestEpoch} owns the partition now`
    : lateMessage(req, now);
  return {
    url: req.url,
    status: 0,
    headers: {},
    body: Buffer.alloc(0),
    truncated: false,
    startedAt: now,
    durationMs: 0,
    errorCode: 'CS_LEASE_EXPIRED',
    errorMessage: why,
  };
}

function failedOutcome(url: string, durationMs: number, err: unknown): FetchOutcome {
  return {
    url,
    status: 0,
    headers: {},
    body: Buffer.alloc(0),
    truncated: false,
    startedAt: 0,
    durationMs,
    errorCode: 'CS_INTERNAL',
    errorMessage: `fetch failed unexpectedly: ${(err as Error)?.message ?? String(err)}`,
  };
}
