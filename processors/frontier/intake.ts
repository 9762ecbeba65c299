import { M } from '../../core/metric-catalogue.js';
import type { FrontEntry, HostState, LinkBatch } from '../../schemas/types.js';
import { admitLinks } from './admission.js';
import { releaseDeferred } from './deferred-release.js';
import { eligibleAt, type FrontierParts } from './frontier-parts.js';
import { LOWEST_BAND, REVISIT_BAND } from './front-queues.js';
import { newHost } from './host-state.js';
import { hopToFetch } from './robots-origins.js';

/** Due URLs queued per punctuation (every second): the due index drains at most this fast. */
const DUE_BATCH = 1_000;
/** Revisits waiting in the front queues beyond which no more are taken from the due index. */
const DUE_BACKLOG = 10 * DUE_BATCH;

/**
 * How URLs reach a host's back queue and how hosts take and give back their active slots:
 * admitted links, due revisits and released deferred URLs go to an active host's back queue or
 * wait in the front queues by band; freed slots are refilled from the front queues. Every slot
 * change goes through `FrontierParts.slots`. `endCall()` must run at the end of every call.
 */
export class Intake {
  /** The host state `appendBack` last appended to in this call (already active and marked changed). */
  private lastAppended: HostState | undefined;

  constructor(private readonly p: FrontierParts) {}

  /** Forgets what this call cached; the states it changed are already marked for the store. */
  endCall(): void {
    this.lastAppended = undefined;
  }

  /** Admitted links of an active host go straight to its back queue; others wait for a slot by priority. */
  admit(batch: LinkBatch, timestamp: number): void {
    const p = this.p;
    const { entries, bands, deferred, deferredHost } = admitLinks(
      batch,
      timestamp,
      p.config,
      p.seenSet,
      p.sites,
      p.deferred,
      p.ctx.metrics,
      p.scope,
    );
    // a sitemap or feed: its new URLs first, and known ones it says changed are due now
    if (batch.fromFeed === true) {
      bands.fill(0);
      p.revisits.noteLastmods(batch, p.ctx.currentTimeMs());
    }
    // entries of one host share its string (admitLinks), and this loop activates no host
    let host: string | undefined;
    let active = false;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      if (entry.host !== host) {
        host = entry.host;
        active = p.slots.isActive(host);
      }
      // lowest-band URLs (suspect or demoted) wait for a refill even when their host is active
      if (active && bands[i] !== LOWEST_BAND) this.appendBack(entry);
      else p.front.push(bands[i]!, entry);
    }
    // a site's URLs held back while their host has nothing queued are its next work
    if (deferred > 0 && !p.slots.isActive(deferredHost!)) this.noteExhausted(batch.site);
    this.refill();
  }

  /**
   * URLs of the recrawl schedule that fell due go to the front queues: pages to the revisit band
   * (which shares picks with new URLs, --recrawl-share), sitemaps and feeds to the first band.
   */
  queueDue(now: number): void {
    // a backlog stays in the due index, where it costs nothing, rather than in the front queues
    if (this.p.front.sizeOf(REVISIT_BAND) >= DUE_BACKLOG) return;
    const due = this.p.revisits.due(now, DUE_BATCH);
    for (const e of due) this.p.front.push(e.kind === 'PAGE' ? REVISIT_BAND : 0, e);
    if (due.length > 0) this.refill();
  }

  /** Queues the deferred URLs that the evidence noted in this call releases. */
  releaseDeferred(): void {
    const p = this.p;
    for (const [site, evidence] of p.deferred.takePending()) {
      const released = releaseDeferred(site, evidence, p.deferred, p.sites, p.ctx.metrics);
      for (const { entry, band } of released) {
        if (band !== LOWEST_BAND && p.slots.isActive(entry.host)) this.appendBack(entry);
        else p.front.push(band, entry);
      }
      if (released.length > 0) this.refill();
    }
  }

  /** Sites whose budget-deferred URLs waited for a new cycle that has begun are looked at again. */
  newCycles(now: number): void {
    for (const [site, retryAt] of this.p.deferred.sites())
      if (retryAt > 0 && retryAt <= now) this.p.deferred.mark(site, { budget: true });
  }

  /** Takes `state` into an active slot and schedules it unless it holds a lease (the caller puts it). */
  activate(state: HostState): void {
    this.p.slots.activate(state.host);
    if (!state.lease) this.p.slots.schedule(state.host, eligibleAt(this.p, state));
  }

  /** Back to the schedule when the host (already put) has something to fetch, else out of its slot. */
  settle(state: HostState): void {
    if (state.lease) return;
    if (state.tailSeq > state.headSeq || hopToFetch(state))
      this.p.slots.schedule(state.host, eligibleAt(this.p, state));
    else this.deactivate(state);
  }

  /** A host with no queued URL, no lease and no robots.txt hop gives its slot back (keeping its clock) and the slot is refilled. */
  deactivate(state: HostState): void {
    if (state.lease || state.tailSeq > state.headSeq || state.robotsHops.length > 0) return;
    if (this.lastAppended === state) this.lastAppended = undefined;
    this.p.slots.deactivate(state.host);
    this.p.hosts.forget(state.host);
    this.p.back.forget(state.host);
    this.p.ips.forget(state.host);
    this.noteExhausted(state.site);
    this.refill();
  }

  /** Drops the host's queue and robots.txt hops (counted as `reason`) and frees its slot. */
  dropBack(state: HostState, reason: string): void {
    // robots.txt hops go with the queue; a host whose chain waited on this one is dropped at its own turn
    state.robotsHops = [];
    const n = this.p.back.clear(state);
    this.p.slots.dequeued(n);
    this.p.hosts.put(state);
    this.p.ctx.metrics.inc(M.urlsDropped, n, reason);
    this.deactivate(state);
  }

  /** A host of `site` has nothing queued: its template-deferred URLs may go if its yield fell. */
  private noteExhausted(site: string): void {
    if (this.p.deferred.waiting(site, 'url-template') > 0) this.p.deferred.mark(site, { exhausted: true });
  }

  /** Moves URLs from the front queues to back queues while active slots are free. */
  refill(): void {
    const p = this.p;
    let site: string | undefined;
    let blocked = false;
    while (p.slots.freeSlots(p.config.activeHostSlots) > 0) {
      const e = p.front.pop();
      if (!e) return;
      if (e.site !== site) {
        site = e.site;
        blocked = p.sites.control(site)?.blocked === true;
      }
      if (blocked) {
        p.ctx.metrics.inc(M.urlsDropped, 1, 'blocked');
        continue;
      }
      this.appendBack(e);
    }
  }

  private appendBack(e: FrontEntry): void {
    const p = this.p;
    // the links of a batch mostly share a host: its state is looked up and marked changed once a call
    let state = this.lastAppended;
    if (state === undefined || state.host !== e.host) {
      state = p.hosts.get(e.host) ?? newHost(e.host, e.origin, e.site);
      p.slots.activate(e.host);
      p.hosts.put(state);
      this.lastAppended = state;
    }
    const wasEmpty = state.tailSeq === state.headSeq;
    p.back.append(state, e);
    p.slots.queuedMore(1);
    if (wasEmpty && !state.lease && !p.slots.isParked(e.host)) p.slots.schedule(e.host, eligibleAt(p, state));
  }
}
