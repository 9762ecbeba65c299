import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import type { FetchedPage, FetchRequest, FetchResult } from '../../schemas/types.js';
import type { CrawlConfig } from '../crawl-config.js';
import { AddressGuard, parseCidr } from './address-guard.js';
import { decodeBody } from './decode.js';
import { CachingDnsResolver, parseResolveRule } from './dns-resolver.js';
import { HttpClient, type FetchOutcome } from './http-client.js';

export const FETCH_RESULTS_SINK = 'fetch-results-sink';
export const FETCHED_SINK = 'fetched-sink';
const ROBOTS_MAX_BYTES = 500 * 1024;

/**
 * Stateless fetcher: turns each lease into exactly one fetch result (and, for pages, one fetched
 * record). A lease whose not-after deadline has passed is dropped unfetched — reported as
 * CS_LEASE_EXPIRED — so a backlog of requests can never burst a host.
 */
export class FetcherProcessor implements Processor<string, FetchRequest, string, FetchResult | FetchedPage> {
  private ctx!: ProcessorContext<string, FetchResult | FetchedPage>;
  private client!: HttpClient;

  constructor(private readonly config: CrawlConfig) {}

  init(context: ProcessorContext<string, FetchResult | FetchedPage>): void {
    this.ctx = context;
    const resolver = new CachingDnsResolver({ rules: this.config.resolve.map(parseResolveRule), systemDns: this.config.systemDns });
    const guard = new AddressGuard(this.config.allowIps.map(parseCidr));
    this.client = new HttpClient({
      userAgent: this.config.userAgent,
      resolver,
      guard,
      connectTimeoutMs: this.config.connectTimeoutMs,
      headersTimeoutMs: this.config.headersTimeoutMs,
      totalTimeoutMs: this.config.fetchTimeoutMs,
      maxBodyBytes: this.config.maxBodyBytes,
    });
  }

  async process(record: StreamRecord<string, FetchRequest>): Promise<void> {
    const req = record.value;
    const now = Date.now();
    if (now > req.notAfter) {
      this.ctx.metrics.inc('leases_dropped_late');
      this.emitResult(req, { status: 0, startedAt: now, durationMs: 0, errorCode: 'CS_LEASE_EXPIRED', errorMessage: `lease started ${now - req.notAfter} ms after its not-after deadline` });
      return;
    }
    const outcome = await this.client.fetch(req.url);
    this.ctx.metrics.inc('fetches', 1, req.kind);
    if (outcome.errorCode) this.ctx.metrics.inc('fetch_outcome_errors', 1, outcome.errorCode);
    let robotsBody: string | null = null;
    if (req.kind === 'ROBOTS' && outcome.status >= 200 && outcome.status < 300) {
      const decoded = decodeBody(outcome.body, outcome.headers['content-encoding'], ROBOTS_MAX_BYTES * 4);
      robotsBody = decoded.body.subarray(0, ROBOTS_MAX_BYTES).toString('utf8');
    }
    this.emitResult(req, {
      status: outcome.status,
      startedAt: outcome.startedAt,
      durationMs: outcome.durationMs,
      errorCode: outcome.errorCode ?? null,
      errorMessage: outcome.errorMessage ?? null,
      retryAfterMs: outcome.retryAfterMs ?? null,
      redirectTarget: outcome.redirectTarget ?? null,
      robotsBody,
    });
    if (req.kind === 'PAGE') this.emitFetched(req, outcome);
  }

  private emitResult(req: FetchRequest, r: Partial<FetchResult> & Pick<FetchResult, 'status' | 'startedAt' | 'durationMs' | 'errorCode'>): void {
    const result: FetchResult = {
      leaseId: req.leaseId, ownerEpoch: req.ownerEpoch, url: req.url, host: req.host, site: req.site, kind: req.kind,
      errorMessage: null, retryAfterMs: null, redirectTarget: null, robotsBody: null, ...r,
    };
    this.ctx.forward({ key: req.site, value: result, timestamp: Date.now() }, FETCH_RESULTS_SINK);
  }

  private emitFetched(req: FetchRequest, o: FetchOutcome): void {
    const page: FetchedPage = {
      leaseId: req.leaseId, url: req.url, host: req.host, site: req.site, depth: req.depth, redirectHops: req.redirectHops, attempt: req.attempt,
      fetchedAt: o.startedAt, durationMs: o.durationMs, status: o.status, httpVersion: o.httpVersion ?? null,
      requestHead: requestHead(req.url, this.config.userAgent),
      headers: Object.entries(o.headers).map(([name, value]) => ({ name, value })),
      body: o.body, truncated: o.truncated, remoteAddress: o.remoteAddress ?? null,
      errorCode: o.errorCode ?? null, errorMessage: o.errorMessage ?? null, redirectTarget: o.redirectTarget ?? null,
    };
    this.ctx.forward({ key: req.site, value: page, timestamp: Date.now() }, FETCHED_SINK);
  }

  async close(): Promise<void> {
    await this.client?.close();
  }
}

/** The request head the client sends, rebuilt for the WARC request record. */
function requestHead(url: string, userAgent: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `GET ${url} HTTP/1.1\r\n\r\n`;
  }
  return [
    `GET ${u.pathname}${u.search} HTTP/1.1`,
    `host: ${u.host}`,
    `user-agent: ${userAgent}`,
    'accept: text/html,application/xhtml+xml,*/*;q=0.8',
    'accept-encoding: gzip, deflate, br',
    '',
    '',
  ].join('\r\n');
}
