import type { RequestLogEntry } from '../request-log.js';

/** One rule of the judge each; the doc comment of `checkPoliteness` states them. */
export type ViolationKind =
  | 'overlap'
  | 'gap'
  | 'robots-not-first'
  | 'robots-expired'
  | 'robots-refetched'
  | 'disallowed-fetched'
  | 'robots-unavailable-fetched'
  | 'robots-retry'
  | 'retry-after'
  | 'backoff'
  | 'ip-concurrency'
  | 'ip-gap'
  | 'control-blocked'
  | 'control-paused'
  | 'control-slow';

export interface Violation {
  kind: ViolationKind;
  host: string;
  /** The offending request's `seq`. */
  seq: number;
  detail: string;
}

export interface PolitenessReport {
  requests: number;
  hosts: number;
  violations: Violation[];
  /** minGapMs: smallest `start − end of the previous request` seen, negative on overlap; null below 2 requests. */
  perHost: Record<string, { requests: number; minGapMs: number | null }>;
}

/** An operator command as `crawlstream control` issues it, at `at` (epoch ms), for a site (registered domain). */
export interface ControlEvent {
  at: number;
  site: string;
  action: 'BLOCK' | 'PAUSE' | 'SLOW' | 'RESUME';
  /** SLOW: every later fetch to a host of the site starts at least this long after the previous one to it ended. */
  minGapMs?: number;
}

/** Every limit defaults to the crawler's default setting of the same name (README, settings table). */
export interface PolitenessOptions {
  /** Floor of the gap between two requests to a host, in ms (`--min-delay`); default 1000. */
  minGapMs?: number;
  /** The gap must also be ≥ this × the previous request's duration (`--slow-factor`); default 10. */
  slowFactor?: number;
  /** Crawl-delay is required up to this (`--max-crawl-delay`); default 60000. */
  maxCrawlDelayMs?: number;
  /** Product token matched against robots.txt groups; default `*`. */
  userAgent?: string;
  /** A robots.txt answer is good for this long after it ended (`--robots-ttl`); default 86400000. */
  robotsTtlMs?: number;
  /** First wait after robots.txt answered 429/5xx or nothing, doubling per failure (`--robots-retry`); default 60000. */
  robotsRetryMs?: number;
  /** First back-off after a 429/503 without Retry-After, doubling (`--backoff`); default 60000. */
  backoffMs?: number;
  /** Longest back-off, and the cap on Retry-After (`--backoff-max`); default 3600000. */
  backoffMaxMs?: number;
  /** A host's back-off is forgiven after this long without a 429/503 (`--backoff-quiet`); default 600000. */
  backoffQuietMs?: number;
  /** The address each host name resolves to; without it the per-IP rules are not judged. */
  ipOf?: Readonly<Record<string, string>> | ((host: string) => string | undefined);
  /** Requests in flight at once on one address (`--ip-concurrency`, across all partitions); default 8. */
  ipConcurrency?: number;
  /** Least time between two request starts on one address (`--ip-gap`); default 100. */
  ipGapMs?: number;
  /** Operator commands, judged on the hosts of their site; none by default. */
  controls?: readonly ControlEvent[];
  /**
   * A BLOCK, PAUSE or SLOW binds requests that start at or after its `at` plus this; default 10000
   * (the lease window: a lease issued just before the command may still start that much later).
   */
  controlGraceMs?: number;
  /**
   * Epoch ms of each time the crawler was killed (SIGKILL) in the logged crawl; none by default. A
   * robots.txt answer whose request started before a kill and ended less than `crashGraceMs`
   * before it may never have been committed, so asking again after that kill is not
   * robots-refetched (a kill loses what was not committed; fetching it again is the crawler
   * keeping its promise, not forgetting).
   */
  crashes?: readonly number[];
  /** How long after an answer ended a commit may still not carry it; default 5000. */
  crashGraceMs?: number;
}

export type JudgeOptions = Required<Omit<PolitenessOptions, 'ipOf'>> & {
  ipOf: ((host: string) => string | undefined) | undefined;
};

export function judgeOptions(options: PolitenessOptions): JudgeOptions {
  const ipOf = options.ipOf;
  return {
    minGapMs: options.minGapMs ?? 1000,
    slowFactor: options.slowFactor ?? 10,
    maxCrawlDelayMs: options.maxCrawlDelayMs ?? 60_000,
    userAgent: options.userAgent ?? '*',
    robotsTtlMs: options.robotsTtlMs ?? 86_400_000,
    robotsRetryMs: options.robotsRetryMs ?? 60_000,
    backoffMs: options.backoffMs ?? 60_000,
    backoffMaxMs: options.backoffMaxMs ?? 3_600_000,
    backoffQuietMs: options.backoffQuietMs ?? 600_000,
    ipOf: ipOf === undefined ? undefined : typeof ipOf === 'function' ? ipOf : (host) => ipOf[host],
    ipConcurrency: options.ipConcurrency ?? 8,
    ipGapMs: options.ipGapMs ?? 100,
    controls: options.controls ?? [],
    controlGraceMs: options.controlGraceMs ?? 10_000,
    crashes: options.crashes ?? [],
    crashGraceMs: options.crashGraceMs ?? 5_000,
  };
}

/** Collects violations. */
export type Flag = (kind: ViolationKind, e: RequestLogEntry, detail: string) => void;

/** Milliseconds to a tenth: a gap 0.4 ms short must not print as the limit itself. */
export function ms(value: number): string {
  return `${Math.round(value * 10) / 10} ms`;
}

/** The scheme of a log entry: logs written before the https origin have none (http). */
export function schemeOf(e: RequestLogEntry): 'http' | 'https' {
  return e.scheme ?? 'http';
}

/** Requests in start order, ties by arrival. */
export function byStart(a: RequestLogEntry, b: RequestLogEntry): number {
  return a.start - b.start || a.seq - b.seq;
}
