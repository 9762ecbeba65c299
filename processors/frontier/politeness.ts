import { createRequire } from 'node:module';
import type { CrawlConfig } from '../common/crawl-config.js';
import { productToken } from '../common/crawl-config.js';

/**
 * Slack added to every gap: the gap is measured on the fetcher's clock, and the host sees it on
 * its own; a few milliseconds of timer and clock disagreement must never make it short.
 */
export const GAP_SAFETY_MS = 30;

/** Gap before the next fetch to a host: max(min delay, slowFactor × last duration, capped Crawl-delay), plus the safety slack. */
export function requiredGap(config: CrawlConfig, lastDurationMs: number, crawlDelayMs: number): number {
  return (
    Math.max(
      config.minDelayMs,
      config.slowFactor * Math.max(0, lastDurationMs),
      Math.min(crawlDelayMs, config.maxCrawlDelayMs),
    ) + GAP_SAFETY_MS
  );
}

/** Wait after 429/503: Retry-After when given, else backoffMs doubling per consecutive time, capped. */
export function backoffAfter(config: CrawlConfig, retryAfterMs: number | null, previousBackoffMs: number): number {
  if (retryAfterMs !== null && retryAfterMs >= 0) return Math.min(retryAfterMs, config.backoffMaxMs);
  return previousBackoffMs <= 0 ? config.backoffMs : Math.min(previousBackoffMs * 2, config.backoffMaxMs);
}

export type RobotsVerdict = 'ALLOW_ALL' | 'READY' | 'UNAVAILABLE';

/**
 * RFC 9309 §2.3.1: 2xx parse; 4xx (but 429) allow all; 429, 5xx and no answer disallow all. A 3xx
 * reaching this verdict is one that is not followed (no usable Location, or past the redirect
 * limit): §2.3.1.2 makes that unavailable too.
 */
export function robotsVerdict(status: number, errorCode: string | null): RobotsVerdict {
  if (errorCode !== null || status === 0) return 'UNAVAILABLE';
  if (status >= 200 && status < 300) return 'READY';
  if (status >= 300 && status < 400) return 'UNAVAILABLE';
  if (status === 429 || status >= 500) return 'UNAVAILABLE';
  return 'ALLOW_ALL';
}

interface Robot {
  isAllowed(url: string, ua?: string): boolean | undefined;
  getCrawlDelay(ua?: string): number | undefined;
  getSitemaps(): string[];
}

// robots-parser is CommonJS whose typings declare an ES default export; load it as what it is
const robotsParser = createRequire(import.meta.url)('robots-parser') as (url: string, contents: string) => Robot;

/** Where robots.txt bodies are kept between fetches, by origin (the frontier's `frontier-robots` store). */
export interface RobotsBodies {
  get(origin: string): string | undefined;
  put(origin: string, body: string): void;
}

/** What a parsed robots.txt holds, about: its body (UTF-16) and the rules parsed from it, about as much again. */
const robotsBytes = (origin: string, body: string): number => 256 + 2 * origin.length + 4 * body.length;

/**
 * Parsed robots.txt per origin, rebuilt lazily from the body. Bounded; evicts everything when
 * full. With a body store attached, `remember` keeps each origin's body there and `allows` reads
 * it back when the parse was evicted: the host state, rewritten after every fetch of its host,
 * carries no body. The cache follows its own `remember` calls only, so it must be dropped with the
 * store's uncommitted writes (the runtime builds new processors then).
 */
export class RobotsCache {
  private readonly parsed = new Map<string, { body: string; robot: Robot }>();
  private bodies: RobotsBodies | undefined;
  private held = 0;

  constructor(
    private readonly userAgent: string,
    private readonly maxEntries = 10_000,
    /** A bound in bytes too: a robots.txt may be 500 KiB, so 10,000 of them could fill a machine. */
    private readonly maxBytes = 16 * 2 ** 20,
  ) {}

  /** About what the parsed entries hold (robotsBytes each). */
  get bytes(): number {
    return this.held;
  }

  /** Keeps bodies in `store` from now on. */
  attach(store: RobotsBodies): void {
    this.bodies = store;
  }

  /** `origin`'s new robots.txt body: stored (with the task's next commit, when a store is attached) and parsed. */
  remember(origin: string, body: string): void {
    this.bodies?.put(origin, body);
    this.robot(origin, body);
  }

  /**
   * Whether `url` may be fetched under the body last remembered for `origin`; undefined when no
   * body is known (neither parsed nor stored): its robots.txt must be fetched again.
   */
  allows(origin: string, url: string): boolean | undefined {
    const hit = this.parsed.get(origin);
    const body = hit?.body ?? this.bodies?.get(origin);
    return body === undefined ? undefined : this.isAllowed(origin, body, url);
  }

  private robot(origin: string, body: string): Robot {
    const hit = this.parsed.get(origin);
    if (hit && hit.body === body) return hit.robot;
    const bytes = robotsBytes(origin, body);
    if (hit) this.held -= robotsBytes(origin, hit.body);
    if (this.parsed.size >= this.maxEntries || this.held + bytes > this.maxBytes) {
      this.parsed.clear();
      this.held = 0;
    }
    const robot = robotsParser(`${origin}/robots.txt`, body);
    this.parsed.set(origin, { body, robot });
    this.held += bytes;
    return robot;
  }

  isAllowed(origin: string, body: string, url: string): boolean {
    // robots-parser answers undefined for a URL of another origin; callers pass the URL's own origin
    return this.robot(origin, body).isAllowed(url, productToken(this.userAgent)) !== false;
  }

  crawlDelayMs(origin: string, body: string): number {
    const seconds = this.robot(origin, body).getCrawlDelay(productToken(this.userAgent));
    return typeof seconds === 'number' && seconds > 0 ? Math.round(seconds * 1000) : 0;
  }

  /** The `Sitemap:` URLs of the body, in order, as the parser resolved them. */
  sitemaps(origin: string, body: string): string[] {
    return this.robot(origin, body).getSitemaps();
  }
}
