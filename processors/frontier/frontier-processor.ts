import { M } from '../../core/metric-catalogue.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import type { ControlCommand, FetchRequest, FetchResult, LinkBatch, PageRecord } from '../../schemas/types.js';
import { TOPICS } from '../common/topics.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { Completion } from './completion.js';
import { Dispatcher } from './dispatch.js';
import { openFrontierParts, type FrontierParts } from './frontier-parts.js';
import { frontierSiteStatus, reportFrontierGauges, waitingQueued } from './frontier-status.js';
import { Intake } from './intake.js';
import { AddressClock } from './address-clock.js';
import { IpLimiter } from './ip-limiter.js';
import type { AddressLookup } from './host-addresses.js';
import { RobotsCache } from './politeness.js';
import { SITE_QUERY } from './site-status.js';

export { FETCH_REQUESTS_SINK } from './dispatch.js';

export type FrontierInput = LinkBatch | FetchResult | ControlCommand | PageRecord;

/** How often sites whose budget-deferred URLs wait for a new cycle are looked at. */
const DEFERRED_CYCLE_CHECK_MS = 10_000;
/**
 * The seen-set's filter fills in slices of this long, one per this interval, until it holds every
 * stored fingerprint: half the task's thread while it lasts, and no pause longer than a slice, far
 * under a Kafka heartbeat interval and under the dispatcher's 20 ms tick.
 */
const SEEN_WARM_SLICE_MS = 5;
const SEEN_WARM_EVERY_MS = 10;
/**
 * A link batch that comes before the seen-set's runs are read waits while they are read in slices
 * of this long, each followed by a turn of the event loop (I/O, timers, heartbeats): one admit
 * would otherwise read them all at once (O(unmerged fingerprints), ~34 s at 20 M).
 */
const SEEN_RUNS_SLICE_MS = 20;

/**
 * The polite frontier of one site partition (Mercator): admitted URLs wait in priority-band front
 * queues until their host holds one of `activeHostSlots`; then in the host's on-disk FIFO. A heap
 * of hosts by next-eligible time hands out leases; a host holds at most one, so one URL per host
 * is in flight, and the next lease's notBefore is the previous fetch's end plus the full gap.
 * After every (re)start each host waits a full gap. Also applies per-IP limits, per-site budgets
 * and operator controls.
 *
 * The processor routes records and punctuations to its parts: `Intake` (URLs into back queues,
 * slots taken and freed), `Dispatcher` (leases), `Completion` (results, lease expiry) and the
 * status views; which state each host is in is owned by `HostSlots` alone.
 */
export class FrontierProcessor implements Processor<string, FrontierInput, string, FetchRequest> {
  private p!: FrontierParts;
  private intake!: Intake;
  private dispatcher!: Dispatcher;
  private completion!: Completion;
  private readonly robots: RobotsCache;

  /**
   * `lookup` finds a new host's address before its first lease, for the per-IP limit
   * (host-addresses.ts); `partitions` frontier tasks share every address's limit (ip-limiter.ts),
   * through one clock when the engine runs them all in this process (address-clock.ts).
   */
  constructor(
    private readonly config: CrawlConfig,
    private readonly lookup?: AddressLookup,
    private readonly partitions = 1,
  ) {
    this.robots = new RobotsCache(config.userAgent);
  }

  init(context: ProcessorContext<string, FetchRequest>): void {
    // one clock for every frontier task of this process when the engine keeps them all here
    const clock = context.coLocated('address-clock', () => new AddressClock(true));
    const share = { partition: context.taskId.partition, partitions: this.partitions, clock };
    const ips = new IpLimiter(this.config.ipConcurrency, this.config.ipGapMs, this.lookup, share);
    const p = (this.p = openFrontierParts(context, this.config, this.robots, ips));
    this.intake = new Intake(p);
    this.dispatcher = new Dispatcher(p, this.intake);
    this.completion = new Completion(p, this.intake);
    context.schedule(20, (now) => this.flushed(() => this.dispatcher.dispatch(now)));
    context.schedule(500, (now) => this.flushed(() => this.completion.expireLeases(now)));
    context.schedule(1_000, (now) => this.flushed(() => this.intake.queueDue(now)));
    context.schedule(1_000, () => reportFrontierGauges(p));
    context.registerQuery(SITE_QUERY, (site) => frontierSiteStatus(p, site));
    context.schedule(DEFERRED_CYCLE_CHECK_MS, (now) => this.flushed(() => this.intake.newCycles(now)));
    // the seen-set opened without reading its fingerprints: fill its filter a slice at a time
    const warming = context.schedule(SEEN_WARM_EVERY_MS, () => {
      if (p.seenSet.warm(SEEN_WARM_SLICE_MS)) warming.cancel();
    });
    this.flushed(() => this.intake.refill());
    reportFrontierGauges(p);
  }

  /**
   * Synchronous except for a link batch that comes before the seen-set's runs are read: that one
   * settles once they are (`admitWhenRunsRead`), and the engine holds the records after it.
   */
  process(record: StreamRecord<string, FrontierInput>): void | Promise<void> {
    const p = this.p;
    if (p.ctx.recordMetadata?.topic === TOPICS.links && !p.seenSet.runsRead)
      return this.admitWhenRunsRead(p, record.value as LinkBatch, record.timestamp);
    this.flushed(() => {
      switch (p.ctx.recordMetadata?.topic) {
        case TOPICS.links:
          return this.intake.admit(record.value as LinkBatch, record.timestamp);
        case TOPICS.fetchResults:
          return this.completion.complete(record.value as FetchResult);
        case TOPICS.control:
          return this.control(record.value as ControlCommand);
        case TOPICS.pageRecords: {
          const page = record.value as PageRecord;
          // a revisit is the same URL again, not a new page of its site
          if (!(page.visit > 0) && p.sites.notePage(page.site, page.duplicateOf !== null))
            p.ctx.metrics.inc(M.sitesDupCut);
          p.revisits.onPageRecord(
            page,
            p.sites.linkingSites(page.site),
            p.hosts.get(page.host)?.gapMs ?? this.config.minDelayMs,
          );
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
      this.intake.releaseDeferred();
    } finally {
      this.intake.endCall();
      this.p.back.flush();
      this.p.front.flush();
      this.p.hosts.flush();
    }
  }

  /**
   * Reads the seen-set's runs a slice at a time, yielding between slices, then admits the batch.
   * The batch has no effect before it is admitted; a task closed meanwhile (its stores with it)
   * reads no further and admits nothing: the engine commits nothing after closing, so the batch
   * is read again by the partition's next opening.
   */
  private async admitWhenRunsRead(p: FrontierParts, batch: LinkBatch, timestamp: number): Promise<void> {
    while (!p.seenSet.runsRead) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.closed || this.p !== p) return;
      p.seenSet.warm(SEEN_RUNS_SLICE_MS);
    }
    this.flushed(() => this.intake.admit(batch, timestamp));
  }

  close(): void {
    this.closed = true;
    // the partition's filter, chains and cache leave the process's plan (the others' caches grow back)
    this.p.seenSet.close();
    reportFrontierGauges(this.p);
  }

  private closed = false;

  /**
   * Idle when nothing is in flight or in the front queues and every queued URL waits on a parked
   * host or a paused site (those resume later; they are not lost). Deferred URLs are not pending
   * work: whatever evidence could release them is released in the call that noted it, so those
   * still waiting wait for evidence that is not coming in this run (an inlink, a new cycle).
   */
  isIdle(): boolean {
    const p = this.p;
    if (p.slots.leaseCount > 0 || p.front.size > 0) return false;
    if (p.revisits.dueWithin(p.ctx.currentTimeMs(), this.config.recrawlMinMs)) return false;
    return p.slots.backQueued === waitingQueued(p);
  }

  /** Held hosts go back to the schedule, where the new control decides (dispatch drops blocked ones). */
  private control(cmd: ControlCommand): void {
    try {
      this.p.sites.apply(cmd);
    } catch (err) {
      // any producer can write the control topic: a bad `set` is reported and changes nothing
      this.p.ctx.log.warn(`control ${cmd.action} refused: ${(err as Error).message}`, { site: cmd.site });
      this.p.ctx.metrics.inc(M.controlCommands, 1, 'REFUSED');
      return;
    }
    this.p.ctx.metrics.inc(M.controlCommands, 1, cmd.action);
    this.p.slots.resume(cmd.site, this.p.ctx.currentTimeMs());
  }
}
