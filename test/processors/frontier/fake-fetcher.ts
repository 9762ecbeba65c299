import { TOPICS } from '../../../topology/crawl-topology.js';
import type { ControlAction, FetchRequest, FetchResult, LinkBatch } from '../../../schemas/types.js';
import type { FrontierHarness } from './frontier-harness.js';

/** What the fake web answers to one request; anything left out is a 404 robots.txt or a 200 page. */
export type Reply = Partial<Pick<FetchResult, 'status' | 'errorCode' | 'retryAfterMs' | 'robotsBody'>>;

/** One request as the fake web saw it: the judge's view, not the lease's. */
export interface Fetch {
  readonly request: FetchRequest;
  readonly start: number;
  readonly end: number;
  readonly reply: Reply;
  answered: boolean;
}

const FETCH_MS = 10;

/**
 * Plays the fetchers and the web for a frontier on the harness's clock: every lease starts at its
 * notBefore (or at its issue, if later), takes 10 ms, and its result is fed back once the clock has
 * passed its end. `reply` decides each answer; `log` is what the web saw, in start order per host.
 */
export class FakeFetcher {
  readonly log: Fetch[] = [];
  private seen = 0;

  constructor(
    private readonly h: FrontierHarness,
    private readonly reply: (request: FetchRequest, start: number) => Reply = () => ({}),
  ) {}

  /** Runs `ms` of frontier time in steps of `step` ms (punctuators run once a step). */
  async run(ms: number, step = 100): Promise<void> {
    for (let t = 0; t < ms; t += step) {
      await this.h.advance(step, step);
      for (const r of this.h.requests.slice(this.seen)) {
        const start = Math.max(r.notBefore, r.issuedAt);
        this.log.push({ request: r, start, end: start + FETCH_MS, reply: this.reply(r, start), answered: false });
      }
      this.seen = this.h.requests.length;
      for (const f of this.log) {
        if (f.answered || f.end > this.h.clock) continue;
        f.answered = true;
        this.h.feed(TOPICS.fetchResults, f.request.site, resultOf(f));
      }
    }
  }

  /** Fetches of `host` (robots.txt included) in order. */
  of(host: string): Fetch[] {
    return this.log.filter((f) => f.request.host === host);
  }

  pages(host?: string): Fetch[] {
    return this.log.filter((f) => f.request.kind === 'PAGE' && (host === undefined || f.request.host === host));
  }
}

function resultOf(f: Fetch): FetchResult {
  const r = f.request;
  return fetchResultFor(r, f.start, {
    status: f.reply.status ?? (f.reply.errorCode ? 0 : r.kind === 'ROBOTS' ? 404 : 200),
    errorCode: f.reply.errorCode ?? null,
    errorMessage: f.reply.errorCode ? 'fake' : null,
    retryAfterMs: f.reply.retryAfterMs ?? null,
    robotsBody: f.reply.robotsBody ?? null,
  });
}

/**
 * The result a fetcher reports for `request`, started at `startedAt` and taking FETCH_MS: a 404
 * robots.txt or a 200 page, no error, no redirect, no body kept, unless `over` says otherwise.
 */
export function fetchResultFor(request: FetchRequest, startedAt: number, over: Partial<FetchResult> = {}): FetchResult {
  return {
    leaseId: request.leaseId,
    ownerEpoch: request.ownerEpoch,
    url: request.url,
    host: request.host,
    site: request.site,
    kind: request.kind,
    status: request.kind === 'ROBOTS' ? 404 : 200,
    startedAt,
    durationMs: FETCH_MS,
    errorCode: null,
    errorMessage: null,
    retryAfterMs: null,
    redirectTarget: null,
    robotsBody: null,
    remoteAddress: null,
    ...over,
  };
}

/** Links to `urls` as a seed batch of `site` would bring them. */
export function seedLinks(h: FrontierHarness, site: string, urls: string[]): void {
  const batch: LinkBatch = {
    site,
    sourceUrl: null,
    discoveredAt: h.clock,
    links: urls.map((url) => ({ url, depth: 0, redirectHops: 0 })),
  };
  h.feed(TOPICS.links, site, batch);
}

/** An operator command for `site`, as `crawlstream control` sends it. */
export function controlSite(h: FrontierHarness, site: string, action: ControlAction, minGapMs: number | null = null) {
  h.feed(TOPICS.control, site, { site, action, minGapMs, issuedAt: h.clock, issuedBy: 'test' });
}

/** Gaps from the end of each fetch to the start of the next one, in order. */
export function gapsOf(fetches: readonly Fetch[]): number[] {
  return fetches.slice(1).map((f, i) => f.start - fetches[i]!.end);
}
