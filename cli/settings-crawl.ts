import {
  CRAWL_CONFIG_BOUNDS,
  defaultCrawlConfig,
  RECRAWL_OBJECTIVES,
  RECRAWL_POLICIES,
  type Bounds,
  type CrawlConfig,
} from '../processors/common/crawl-config.js';
import { SCOPE_KINDS } from '../processors/common/url-filters.js';
import type { Setting } from './setting.js';

// a setting that sets a CrawlConfig field takes that field's bounds and default (fromCrawlConfig)
const ms = (name: string, config: keyof CrawlConfig, help: string): Setting => ({
  name,
  kind: 'int',
  unit: 'ms',
  arg: 'MS',
  help,
  config,
});
const count = (name: string, config: keyof CrawlConfig, help: string): Setting => ({
  name,
  kind: 'int',
  unit: 'count',
  arg: 'N',
  help,
  config,
});
const bytes = (name: string, config: keyof CrawlConfig, help: string): Setting => ({
  name,
  kind: 'int',
  unit: 'bytes',
  arg: 'BYTES',
  help,
  config,
});

/**
 * A setting of a CrawlConfig field completed from that field: its bounds (CRAWL_CONFIG_BOUNDS)
 * and its default (defaultCrawlConfig), both in the setting's unit (`scale`), so the CLI refuses
 * exactly what validateCrawlConfig would, with the flag's name and source in the message, and
 * `--help`, `config` and the README show the default the crawl uses. A list's empty default
 * shows as none; `ownDefault` keeps the CLI's own (--threads: the machine's cores).
 */
export function fromCrawlConfig(setting: Setting): Setting {
  const key = setting.config;
  if (key === undefined) return setting;
  const scale = setting.scale ?? 1;
  const b: Bounds | undefined = (CRAWL_CONFIG_BOUNDS as Partial<Record<keyof CrawlConfig, Bounds>>)[key];
  const bounds =
    b === undefined
      ? {}
      : {
          min: b.min / scale,
          ...(b.max !== undefined ? { max: b.max / scale } : {}),
          ...(b.open ? { open: true } : {}),
        };
  const d: unknown = defaultCrawlConfig[key];
  const shown =
    setting.ownDefault === true
      ? undefined
      : typeof d === 'number'
        ? String(d / scale)
        : typeof d === 'string'
          ? d
          : Array.isArray(d) && d.length > 0
            ? d.join(',')
            : undefined;
  return { ...setting, ...bounds, ...(shown !== undefined ? { default: shown } : {}) };
}

/** The crawl's knobs, part of SETTINGS (settings.ts): politeness, limits, traps, budgets, slots, seen-set, sizes. */
export const CRAWL_KNOBS: readonly Setting[] = [
  {
    name: 'user-agent',
    kind: 'string',
    arg: 'UA',
    help: 'User-Agent; its first token is matched against robots.txt groups',
    config: 'userAgent',
  },
  ms('min-delay', 'minDelayMs', 'gap floor between fetches to one host (1000 is also the least allowed)'),
  count('slow-factor', 'slowFactor', 'the gap is at least this many times the last fetch of the host took'),
  ms(
    'max-crawl-delay',
    'maxCrawlDelayMs',
    'robots.txt Crawl-delay is honoured up to this (the host is paced at the cap)',
  ),
  ms('robots-ttl', 'robotsTtlMs', 'how long a robots.txt is trusted before it is fetched again'),
  ms(
    'robots-retry',
    'robotsRetryMs',
    'first wait after robots.txt answered 5xx or nothing (doubling up to --backoff-max)',
  ),
  ms('backoff', 'backoffMs', 'first back-off after 429/503 without Retry-After (doubling)'),
  ms('backoff-max', 'backoffMaxMs', 'longest back-off, and how long a host with repeated connection errors is parked'),
  ms('backoff-quiet', 'backoffQuietMs', "a host's back-off is forgiven after this long without a 429/503"),
  count('backoff-jitter', 'backoffJitterPercent', 'random extra wait on back-offs, in percent'),
  count('max-attempts', 'maxAttempts', 'fetch attempts per URL before a transient failure is final'),
  ms('fetch-timeout', 'fetchTimeoutMs', 'total time one fetch may take (also caps the connect and headers timeouts)'),
  ms('connect-timeout', 'connectTimeoutMs', 'time to connect (capped by --fetch-timeout)'),
  ms('headers-timeout', 'headersTimeoutMs', 'time until the response headers (capped by --fetch-timeout)'),
  ms('lease-window', 'leaseWindowMs', 'a fetcher drops a lease it cannot start within this long of its issue'),
  bytes('max-body', 'maxBodyBytes', 'response bodies are cut at this size'),
  bytes('max-decoded', 'maxDecodedBytes', 'decompressed size beyond which a body is a bomb and refused'),
  count('max-url-length', 'maxUrlLength', 'longer URLs are not admitted'),
  count('max-path-depth', 'maxPathDepth', 'URLs with more path segments are not admitted'),
  count('max-segment-repeats', 'maxSegmentRepeats', 'a path repeating one segment this many times is a trap'),
  count('max-redirect-hops', 'maxRedirectHops', 'redirects followed from one URL'),
  count('max-outlinks', 'maxOutlinksPerPage', 'outlinks taken from one page'),
  count(
    'max-hops',
    'maxHops',
    'links more hops from a seed are not followed; a site linked by k other sites allows k − 1 more, up to twice this',
  ),
  count(
    'template-allowance',
    'templateAllowance',
    "new URLs of one shape (/cal/{n}/{n}/, /s/{id}/page, or hand-named /{w}/{w}) a host may emit on its own pages: past half they wait in the lowest band, past all they are deferred; a host's shapes together get 3 times this",
  ),
  count(
    'template-allowance-per-inlink',
    'templateAllowancePerInlink',
    'allowance a shape earns per distinct new URL of it another site links to (two or more such URLs: at least --site-budget-per-inlink each)',
  ),
  count(
    'site-budget',
    'sitePageBudget',
    'URLs per cycle a site gets that no other site links to (a seed, or only itself)',
  ),
  count(
    'seed-budget',
    'seedPageBudget',
    'budget per cycle of a seeded site, as --site-budget is of others (0: no cap, a seeded site is crawled to its hop limit)',
  ),
  {
    name: 'site',
    kind: 'list',
    arg: "'KEY NAME=VALUE ...'",
    help: "per-site override, e.g. 'example.org min-delay=5000 budget=400 header.X-Team=news' (also max-depth, allow, deny); KEY is a registered domain, host, host glob (*.example.org) or SURT prefix; the most specific key wins; repeatable; in the --config file a sites: map (see README)",
    config: 'sites',
  },
  {
    name: 'accept-type',
    kind: 'list',
    arg: 'TYPE',
    help: 'media types a page response must have to be read (text/html, text/*; comma-separated or repeatable); any other is closed after its headers and recorded as CS_REFUSED_TYPE; robots.txt, sitemaps and feeds are always read',
    config: 'acceptTypes',
  },
  count('site-budget-per-inlink', 'siteBudgetPerInlink', 'budget a site earns per distinct other site linking in'),
  count('site-budget-max', 'siteBudgetMax', 'largest budget a site can earn'),
  count('dup-cut-window', 'dupCutWindow', 'recent page records per site the duplicate cut looks at'),
  count('dup-cut-percent', 'dupCutPercent', 'share of copies among them (percent) that cuts the site'),
  count(
    'host-slots',
    'activeHostSlots',
    'hosts holding queued URLs at once per partition (size it as target pages/s × typical gap s / partitions)',
  ),
  ms(
    'dispatch-lookahead',
    'dispatchLookaheadMs',
    'a lease may leave this long before its host is due (below --min-delay)',
  ),
  count(
    'ip-concurrency',
    'ipConcurrency',
    "per-IP limit, for the whole crawl: requests in flight on one address, a host's first fetch included (on Kafka each frontier partition leases its share, at least 1, and the fetcher holds the address to the limit)",
  ),
  ms(
    'ip-gap',
    'ipGapMs',
    "per-IP limit, for the whole crawl: least time between fetch starts on one address (kept where requests leave, by the fetcher that takes all of the address's leases)",
  ),
  count('conn-errors-to-park', 'connErrorsToPark', 'consecutive connection failures that park a host'),
  count('fetch-concurrency', 'fetchConcurrency', 'fetches in flight per fetcher task'),
  {
    name: 'threads',
    kind: 'int',
    unit: 'count',
    arg: 'N',
    config: 'threads',
    ownDefault: true,
    help: "JavaScript threads of this process: the main one, and N − 1 that parse HTML (default: the machine's cores)",
  },
  count(
    'seen-expected-urls',
    'seenExpectedUrls',
    "URLs one frontier partition expects (sizes its seen-set's Bloom filter)",
  ),
  {
    name: 'seen-fp-rate',
    kind: 'number',
    unit: 'count',
    arg: 'P',
    help: "the Bloom filter's target false-positive rate (0 < P < 1)",
    config: 'seenFalsePositiveRate',
  },
  bytes(
    'seen-block-cache',
    'seenBlockCacheBytes',
    "RAM per frontier partition caching the seen-set's fingerprint blocks (0: none)",
  ),
  {
    name: 'memory-budget',
    kind: 'int',
    unit: 'bytes',
    arg: 'BYTES',
    config: 'memoryBudgetBytes',
    ownDefault: true,
    help: "RAM this process plans within, all together: its RocksDB databases and frontier partitions' seen-set filters are counted, and the seen-sets' block caches shrink to fit beside them (default: the cgroup's memory limit, if any; 0: none)",
  },
  bytes('warc-max-file', 'warcMaxFileBytes', 'a WARC file is closed and a new one started at about this size'),
  bytes(
    'content-text-max',
    'contentTextMaxBytes',
    "a page's main text on page-content is cut at this many bytes (flagged textTruncated); 0: no text",
  ),
];

/** Adaptive recrawl (CrawlConfig's recrawl* fields), part of SETTINGS. */
export const RECRAWL_SETTINGS: readonly Setting[] = [
  {
    name: 'recrawl-min',
    kind: 'int',
    unit: 's',
    arg: 'S',
    scale: 1000,
    config: 'recrawlMinMs',
    help: 'shortest revisit interval of a page (of sitemaps and feeds: half of it)',
  },
  {
    name: 'recrawl-max',
    kind: 'int',
    unit: 's',
    arg: 'S',
    scale: 1000,
    config: 'recrawlMaxMs',
    help: 'longest revisit interval of a page',
  },
  {
    name: 'recrawl-initial',
    kind: 'int',
    unit: 's',
    arg: 'S',
    scale: 1000,
    config: 'recrawlInitialMs',
    help: "a page's first revisit interval (0: the geometric mean of --recrawl-min and --recrawl-max)",
  },
  {
    name: 'recrawl-policy',
    kind: 'string',
    arg: 'NAME',
    values: RECRAWL_POLICIES,
    config: 'recrawlPolicy',
    help: "how revisit intervals are set: optimal (from each page's estimated change rate, within its site's politeness budget) or adaptive (shorten after a change, lengthen otherwise)",
  },
  {
    name: 'recrawl-objective',
    kind: 'string',
    arg: 'NAME',
    values: RECRAWL_OBJECTIVES,
    config: 'recrawlObjective',
    help: 'what --recrawl-policy optimal minimises: staleness (time copies are out of date) or age (how long they have been)',
  },
  {
    name: 'recrawl-shorten',
    kind: 'number',
    arg: 'F',
    config: 'recrawlShorten',
    help: 'a revisit that found a change multiplies the interval by this',
  },
  {
    name: 'recrawl-lengthen',
    kind: 'number',
    arg: 'F',
    config: 'recrawlLengthen',
    help: 'a revisit that found no change (or a 304) multiplies the interval by this',
  },
  {
    name: 'feed-max-interval',
    kind: 'int',
    unit: 's',
    arg: 'S',
    scale: 1000,
    config: 'feedMaxIntervalMs',
    help: 'longest revisit interval of a sitemap or feed (their faster lane)',
  },
  {
    name: 'recrawl-share',
    kind: 'number',
    arg: 'F',
    config: 'recrawlShare',
    help: 'share of host slots revisits get while new URLs wait too',
  },
];

/** What links are followed (scope, rules, depth, suffixes), part of SETTINGS. */
export const SCOPE_SETTINGS: readonly Setting[] = [
  {
    name: 'scope',
    kind: 'string',
    arg: 'KIND',
    values: SCOPE_KINDS,
    config: 'scope',
    help: 'links followed: any site (web), or only the registered domains, hosts or URL prefixes (directories) of the seeds; seeds added later widen it',
  },
  {
    name: 'allow',
    kind: 'list',
    arg: 'RULE',
    config: 'allowRules',
    help: 'follow only links matching one of these rules: host:GLOB (host:*.example.org), surt:PREFIX ((org,example,)/news/ or a URL), re:RE2-REGEX over the URL; repeatable',
  },
  {
    name: 'deny',
    kind: 'list',
    arg: 'RULE',
    config: 'denyRules',
    help: 'never follow links matching this rule (syntax as --allow; deny wins); repeatable',
  },
  count('max-depth', 'maxDepth', 'links more hops from a seed are refused, whoever links in (0: no limit)'),
  {
    name: 'deny-extension',
    kind: 'list',
    arg: 'EXT',
    config: 'denyExtensions',
    help: 'also refuse links whose path ends in .EXT (besides the default list of image, audio, video, archive, executable and font suffixes); repeatable',
  },
  {
    name: 'allow-extension',
    kind: 'list',
    arg: 'EXT',
    config: 'allowExtensions',
    help: 'take .EXT off the default list of refused suffixes; repeatable',
  },
];
