/** The range a numeric setting may take. */
export interface Bounds {
  readonly min: number;
  /** None: no upper bound. */
  readonly max?: number;
  /** A whole number (every count, size and time). */
  readonly whole: boolean;
  /** min and max themselves are refused (an open interval: a rate strictly between 0 and 1). */
  readonly open?: boolean;
}

const whole = (min: number, max?: number): Bounds => ({ min, ...(max !== undefined ? { max } : {}), whole: true });
const fraction = (min: number, max: number): Bounds => ({ min, max, whole: false });
const openFraction = (min: number, max: number): Bounds => ({ min, max, whole: false, open: true });

/**
 * The bounds of every numeric CrawlConfig field, the one place they are written. Everything that
 * takes such a number reads them from here: `validateCrawlConfig` (a library caller), the CLI's
 * settings schema (cli/settings.ts: a flag, a --config file, the environment, `--help`, the
 * README table), a `sites:` entry and `control set` (site-overrides.ts: min-delay, budget,
 * max-depth) and `control slow --min-gap`.
 *
 * Why here and not in cli/: the layering lets the CLI read processors/common but not the
 * reverse, and a library caller of validateCrawlConfig needs the bounds without the CLI. This
 * file imports nothing, so site-overrides.ts (which crawl-config.ts imports) can read it too;
 * crawl-config.ts checks at compile time that every key here is a CrawlConfig field.
 * Rules between fields (the look-ahead below the min delay, recrawl max not below recrawl min)
 * are validateCrawlConfig's, not bounds.
 */
export const CRAWL_CONFIG_BOUNDS = {
  minDelayMs: whole(1_000), // the politeness floor
  slowFactor: whole(1),
  maxCrawlDelayMs: whole(0),
  robotsTtlMs: whole(1_000),
  robotsRetryMs: whole(100),
  backoffMs: whole(1),
  backoffMaxMs: whole(1),
  backoffQuietMs: whole(0),
  backoffJitterPercent: whole(0),
  maxAttempts: whole(1),
  fetchTimeoutMs: whole(100),
  connectTimeoutMs: whole(100),
  headersTimeoutMs: whole(100),
  leaseWindowMs: whole(100),
  maxBodyBytes: whole(1),
  maxDecodedBytes: whole(1),
  maxUrlLength: whole(16),
  maxPathDepth: whole(1),
  maxSegmentRepeats: whole(2), // one repeat is no trap: /a/a/ is common
  maxRedirectHops: whole(0),
  maxOutlinksPerPage: whole(1),
  maxHops: whole(1),
  maxDepth: whole(0),
  templateAllowance: whole(1),
  templateAllowancePerInlink: whole(0),
  sitePageBudget: whole(1),
  seedPageBudget: whole(0),
  siteBudgetPerInlink: whole(0),
  siteBudgetMax: whole(1),
  dupCutWindow: whole(1),
  dupCutPercent: whole(0, 100),
  activeHostSlots: whole(1),
  dispatchLookaheadMs: whole(0),
  ipConcurrency: whole(1),
  ipGapMs: whole(0),
  connErrorsToPark: whole(1),
  fetchConcurrency: whole(1),
  threads: whole(1),
  seenExpectedUrls: whole(1),
  seenFalsePositiveRate: openFraction(0, 1), // 0 sizes an infinite filter, 1 a filter that keeps nothing
  seenBlockCacheBytes: whole(0),
  memoryBudgetBytes: whole(0),
  warcMaxFileBytes: whole(1024 * 1024),
  // the topic's max.message.bytes grows with it; 64 MiB keeps a record within what brokers accept
  contentTextMaxBytes: whole(0, 64 * 1024 * 1024),
  recrawlMinMs: whole(1_000),
  recrawlMaxMs: whole(1_000),
  recrawlInitialMs: whole(0),
  feedMaxIntervalMs: whole(1_000),
  recrawlShorten: fraction(0.01, 1),
  recrawlLengthen: fraction(1, 100),
  recrawlShare: fraction(0, 1),
} as const satisfies Record<string, Bounds>;

/** How `b` reads in a refusal: "a whole number of at least 1000", "a number between 0 and 1 (exclusive)". */
export function describeBounds(b: Bounds): string {
  const kind = b.whole ? 'a whole number' : 'a number';
  if (b.max === undefined) return `${kind} of at least ${b.min}`;
  return b.open ? `${kind} between ${b.min} and ${b.max} (exclusive)` : `${kind} from ${b.min} to ${b.max}`;
}

/** Whether `v` is a number within `b` (finite, whole when `b` says so). */
export function withinBounds(v: unknown, b: Bounds): v is number {
  if (typeof v !== 'number' || !Number.isFinite(v) || (b.whole && !Number.isSafeInteger(v))) return false;
  if (b.open) return v > b.min && (b.max === undefined || v < b.max);
  return v >= b.min && (b.max === undefined || v <= b.max);
}
