import { InvalidOptionError } from '../../core/errors.js';
import type { WarcStoreTarget } from './warc-store-target.js';
import { SCOPE_KINDS, UrlFilter, type ScopeKind } from './url-filters.js';
import { DEFAULT_ACCEPT_TYPES, parseAcceptTypes } from './accept-types.js';
import type { SiteRule } from './site-overrides.js';
import { CRAWL_CONFIG_BOUNDS, describeBounds, withinBounds, type Bounds } from './config-bounds.js';

/** How revisit intervals are chosen: see CrawlConfig.recrawlPolicy. */
export const RECRAWL_POLICIES = ['optimal', 'adaptive'] as const;
export type RecrawlPolicy = (typeof RECRAWL_POLICIES)[number];
/** What the optimal policy minimises (frontier/refetch-policy.ts). */
export const RECRAWL_OBJECTIVES = ['staleness', 'age'] as const;
export type RefetchObjective = (typeof RECRAWL_OBJECTIVES)[number];

/**
 * Every knob of a crawl, validated once at the edge (`validateCrawlConfig`); processors trust it.
 * Times are milliseconds.
 */
export interface CrawlConfig {
  /** Full User-Agent header; its first product token is matched against robots.txt groups. */
  readonly userAgent: string;
  /** Floor of the gap between two fetches to one host. */
  readonly minDelayMs: number;
  /** The gap is at least this many times the last fetch's duration. */
  readonly slowFactor: number;
  /** robots.txt Crawl-delay is honoured up to this cap (pace at the cap, don't skip the host). */
  readonly maxCrawlDelayMs: number;
  readonly robotsTtlMs: number;
  /** First wait after robots.txt answered 5xx or was unreachable; doubles per failure up to backoffMaxMs. The host is parked meanwhile. */
  readonly robotsRetryMs: number;
  /** 429/503 without Retry-After: first back-off, doubling up to backoffMaxMs. */
  readonly backoffMs: number;
  readonly backoffMaxMs: number;
  /** Fetch attempts per URL before a transient failure becomes final. */
  readonly maxAttempts: number;
  /** A fetcher must start a lease within this window of its issue, or drop it. */
  readonly leaseWindowMs: number;
  /** Connect / headers / total limits of one fetch. */
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly fetchTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly maxDecodedBytes: number;
  readonly maxUrlLength: number;
  readonly maxPathDepth: number;
  /** A URL whose path repeats one segment this many times is a trap. */
  readonly maxSegmentRepeats: number;
  readonly maxRedirectHops: number;
  /**
   * Links more than this many hops from a seed are not followed (Heritrix's max-hops), on sites
   * that other sites barely link to; a site linked by k distinct other sites allows k − 1 hops
   * more, up to twice this.
   */
  readonly maxHops: number;
  /**
   * URLs a site may have admitted per cycle on its own — linked by nobody but a seed or itself.
   * Every distinct other site seen linking in earns it `siteBudgetPerInlink` more.
   */
  readonly sitePageBudget: number;
  /**
   * The base budget of a seeded site instead of sitePageBudget (an operator's cap); 0, the
   * default: no cap, a seeded site is crawled to its hop limit.
   */
  readonly seedPageBudget: number;
  /** Budget added per distinct other site seen linking in. */
  readonly siteBudgetPerInlink: number;
  /**
   * New URLs of one templated URL shape (url-templates.ts) a host may emit on its own pages:
   * the first half are queued as usual, the second half in the lowest band, the rest dropped.
   * Each link into the template from another site adds `templateAllowancePerInlink`; all of a
   * host's templated URLs together get three times the allowance.
   */
  readonly templateAllowance: number;
  readonly templateAllowancePerInlink: number;
  readonly siteBudgetMax: number;
  /** Recent page records per site looked at for the duplicate cut, and the duplicate share (%) that cuts. */
  readonly dupCutWindow: number;
  readonly dupCutPercent: number;
  /** Hosts with URLs in their back queue at once, per frontier task (Mercator back queues). */
  readonly activeHostSlots: number;
  /** A lease may be handed out this long before its host is due; it carries notBefore. */
  readonly dispatchLookaheadMs: number;
  /** Leases in flight per resolved address, and the least time between two lease starts there. */
  readonly ipConcurrency: number;
  readonly ipGapMs: number;
  /** Consecutive connection failures that park a host (it waits backoffMaxMs). */
  readonly connErrorsToPark: number;
  /** A host's 429/503 back-off is forgiven after this long without one. */
  readonly backoffQuietMs: number;
  /** Random extra wait on back-offs, in percent. */
  readonly backoffJitterPercent: number;
  readonly maxOutlinksPerPage: number;
  /** URLs one frontier partition is expected to see (sizes its Bloom filter), and the filter's target false-positive rate. */
  readonly seenExpectedUrls: number;
  readonly seenFalsePositiveRate: number;
  /** RAM per frontier partition for the seen-set's fingerprint blocks (a cache: a hit needs no store read). */
  readonly seenBlockCacheBytes: number;
  /**
   * RAM the process plans its frontier partitions' seen-sets within, all of them together
   * (state/memory-budget.ts): their filters and unmerged fingerprints are counted and their block
   * caches share what the budget leaves. 0 here (none: each cache its `seenBlockCacheBytes`); the
   * CLI's default is the cgroup's memory limit when there is one.
   */
  readonly memoryBudgetBytes: number;
  /** `--resolve` rules (PATTERN=IP) and `--allow-ip` CIDRs for the fetcher. */
  readonly resolve: readonly string[];
  readonly allowIps: readonly string[];
  /** Whether names without a --resolve rule go to the system resolver. */
  readonly systemDns: boolean;
  /** `--ca-file`: PEM certificates the fetcher trusts for TLS besides the built-in roots; null for none. */
  readonly extraCaPem: string | null;
  /** Fetches in flight per fetcher task. */
  readonly fetchConcurrency: number;
  /**
   * JavaScript threads the process may use: with N > 1 the parser analyses HTML on N − 1 worker
   * threads shared by its tasks (parse-pool.ts). 1 here (everything on the calling thread); the
   * CLI's default is the machine's cores.
   */
  readonly threads: number;
  readonly warcMaxFileBytes: number;
  /** Cap on a page's main text on `page-content`, in bytes of UTF-8; 0 sends titles, links and headers without text. */
  readonly contentTextMaxBytes: number;
  /**
   * Adaptive recrawl: a fetched URL is due again after its interval, kept within
   * [recrawlMinMs, recrawlMaxMs]; the first interval is recrawlInitialMs (0: the geometric mean of
   * the two). `optimal` (the default) sets it from the page's estimated change rate and its site's
   * politeness budget (frontier/refetch-policy.ts); `adaptive` multiplies it by recrawlShorten after
   * a revisit that found a change and by recrawlLengthen after one that did not. Sitemaps and feeds
   * keep to their faster lane, [recrawlMinMs / 2, feedMaxIntervalMs].
   */
  readonly recrawlPolicy: RecrawlPolicy;
  /** What the optimal policy minimises: `staleness` or `age` (frontier/refetch-policy.ts). */
  readonly recrawlObjective: RefetchObjective;
  readonly recrawlMinMs: number;
  readonly recrawlMaxMs: number;
  readonly recrawlInitialMs: number;
  readonly recrawlShorten: number;
  readonly recrawlLengthen: number;
  readonly feedMaxIntervalMs: number;
  /** The share of picks revisits get when they and new URLs both wait for a host slot, in [0, 1]. */
  readonly recrawlShare: number;
  /** Whether robots.txt `Sitemap:` lines (and feed links in pages) are followed. */
  readonly sitemaps: boolean;
  /** `--warc-store`: where closed WARC files are uploaded; null: they stay in the data dir. */
  readonly warcStore: WarcStoreTarget | null;
  /** What links may be followed besides the rules below (url-filters.ts, frontier/scope.ts). */
  readonly scope: ScopeKind;
  /** `--allow` / `--deny` rules (url-filters.ts `compileRule`): a link must match an allow rule when any is given, and no deny rule. */
  readonly allowRules: readonly string[];
  readonly denyRules: readonly string[];
  /** Links more than this many hops from a seed are refused, whatever links in; 0: no limit. */
  readonly maxDepth: number;
  /** Path suffixes refused besides DEFAULT_DENIED_EXTENSIONS, and suffixes taken off that list. */
  readonly denyExtensions: readonly string[];
  readonly allowExtensions: readonly string[];
  /**
   * Media type patterns (`text/html`, `text/*`) a page response must match to be read; another
   * type is closed after its headers (CS_REFUSED_TYPE). robots.txt, sitemaps and feeds are exempt.
   */
  readonly acceptTypes: readonly string[];
  /** Per-site overrides (`sites:` in the config file, `--site`), validated by parseSiteOverride; see SiteOverrides. */
  readonly sites: readonly SiteRule[];
}

export const DEFAULT_USER_AGENT = 'crawlstream/0.1 (+https://crawlstream.invalid/bot)';

export const defaultCrawlConfig: CrawlConfig = {
  userAgent: DEFAULT_USER_AGENT,
  minDelayMs: 1_000,
  slowFactor: 10,
  maxCrawlDelayMs: 60_000,
  robotsTtlMs: 24 * 3_600_000,
  robotsRetryMs: 60_000,
  backoffMs: 60_000,
  backoffMaxMs: 3_600_000,
  maxAttempts: 5,
  leaseWindowMs: 10_000,
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 15_000,
  fetchTimeoutMs: 30_000,
  maxBodyBytes: 10 * 1024 * 1024,
  maxDecodedBytes: 50 * 1024 * 1024,
  maxUrlLength: 2_000,
  maxPathDepth: 15,
  maxSegmentRepeats: 3,
  maxRedirectHops: 5,
  maxHops: 15,
  sitePageBudget: 200,
  seedPageBudget: 0,
  siteBudgetPerInlink: 100,
  templateAllowance: 12,
  templateAllowancePerInlink: 12,
  siteBudgetMax: 1_000_000,
  dupCutWindow: 50,
  dupCutPercent: 80,
  activeHostSlots: 1_000,
  dispatchLookaheadMs: 250,
  ipConcurrency: 8,
  ipGapMs: 100,
  connErrorsToPark: 5,
  backoffQuietMs: 600_000,
  backoffJitterPercent: 20,
  maxOutlinksPerPage: 1_000,
  seenExpectedUrls: 1_000_000,
  seenFalsePositiveRate: 0.01,
  seenBlockCacheBytes: 128 * 1024 * 1024,
  memoryBudgetBytes: 0,
  resolve: [],
  allowIps: [],
  systemDns: true,
  extraCaPem: null,
  fetchConcurrency: 64,
  threads: 1,
  warcMaxFileBytes: 1024 * 1024 * 1024,
  contentTextMaxBytes: 256 * 1024,
  recrawlPolicy: 'optimal',
  recrawlObjective: 'staleness',
  recrawlMinMs: 3_600_000,
  recrawlMaxMs: 30 * 24 * 3_600_000,
  recrawlInitialMs: 0,
  recrawlShorten: 0.5,
  recrawlLengthen: 1.5,
  feedMaxIntervalMs: 24 * 3_600_000,
  recrawlShare: 0.5,
  sitemaps: true,
  warcStore: null,
  scope: 'web',
  allowRules: [],
  denyRules: [],
  maxDepth: 0,
  denyExtensions: [],
  allowExtensions: [],
  acceptTypes: DEFAULT_ACCEPT_TYPES,
  sites: [],
};

export { CRAWL_CONFIG_BOUNDS, type Bounds } from './config-bounds.js';

/** `bounds` as given; compiles only while each of its keys names a numeric CrawlConfig field. */
function ofNumericFields<
  T extends { [K in keyof T]: K extends keyof CrawlConfig ? (CrawlConfig[K] extends number ? Bounds : never) : never },
>(bounds: T): T {
  return bounds;
}
const FIELD_BOUNDS = ofNumericFields(CRAWL_CONFIG_BOUNDS);
type BoundedKey = keyof typeof FIELD_BOUNDS;

/** Fills defaults and checks every field; throws InvalidOptionError naming the option and the value. */
export function validateCrawlConfig(partial: Partial<CrawlConfig>): CrawlConfig {
  const c: { -readonly [K in keyof CrawlConfig]: CrawlConfig[K] } = { ...defaultCrawlConfig, ...partial };
  for (const [key, b] of Object.entries(FIELD_BOUNDS) as [BoundedKey, Bounds][])
    if (!withinBounds(c[key], b))
      throw new InvalidOptionError(`${key} must be ${describeBounds(b)}, got ${String(c[key])}`);
  if (c.dispatchLookaheadMs >= c.minDelayMs)
    throw new InvalidOptionError(
      `dispatch look-ahead (${c.dispatchLookaheadMs} ms) must be below the min delay (${c.minDelayMs} ms)`,
    );
  if (c.recrawlMaxMs < c.recrawlMinMs)
    throw new InvalidOptionError(
      `recrawl max (${c.recrawlMaxMs} ms) must not be below recrawl min (${c.recrawlMinMs} ms)`,
    );
  c.acceptTypes = parseAcceptTypes(c.acceptTypes);
  for (const { key, override } of c.sites)
    if (override.minDelayMs !== undefined && c.dispatchLookaheadMs >= override.minDelayMs)
      throw new InvalidOptionError(
        `sites.${key}.min-delay (${override.minDelayMs} ms) must be above the dispatch look-ahead (${c.dispatchLookaheadMs} ms)`,
      );
  if (!/^[A-Za-z0-9._-]+/.test(c.userAgent))
    throw new InvalidOptionError(
      `user agent must start with a product token (letters, digits, . _ -), got ${JSON.stringify(c.userAgent)}`,
    );
  if (!(SCOPE_KINDS as readonly string[]).includes(c.scope))
    throw new InvalidOptionError(`scope must be one of ${SCOPE_KINDS.join(', ')}, got ${JSON.stringify(c.scope)}`);
  if (!(RECRAWL_POLICIES as readonly string[]).includes(c.recrawlPolicy))
    throw new InvalidOptionError(
      `recrawl policy must be one of ${RECRAWL_POLICIES.join(', ')}, got ${JSON.stringify(c.recrawlPolicy)}`,
    );
  if (!(RECRAWL_OBJECTIVES as readonly string[]).includes(c.recrawlObjective))
    throw new InvalidOptionError(
      `recrawl objective must be one of ${RECRAWL_OBJECTIVES.join(', ')}, got ${JSON.stringify(c.recrawlObjective)}`,
    );
  new UrlFilter(c); // compiles every rule and suffix: a bad one is refused here, not mid-crawl
  return c;
}

/** The product token robots.txt groups are matched against: `crawlstream` in `crawlstream/0.1 (...)`. */
export function productToken(userAgent: string): string {
  return /^[A-Za-z0-9._-]+/.exec(userAgent)?.[0] ?? userAgent;
}
