import type { CrawlConfig } from '../processors/common/crawl-config.js';
import { APPLICATION_ID_PATTERN } from '../runtime/topology.js';
import { APPLICATION_ID } from '../topology/crawl-topology.js';
import { APP_ID_FORM } from './app-id.js';

/** How a setting's text becomes a value. */
export type SettingKind = 'int' | 'number' | 'string' | 'bool' | 'list';

/**
 * One setting of `crawl` (and of `run`, which takes crawl's settings): its flag, file key and
 * environment variable all come from `name`; `--help`, the README's option table and
 * `crawlstream config` are generated from this list, so a setting is described in one place.
 */
export interface Setting {
  /** `--name` on the command line, `name:` in the --config file, CRAWLSTREAM_NAME in the environment. */
  readonly name: string;
  readonly kind: SettingKind;
  /** The unit of a number: ms, s, bytes, or a plain count. */
  readonly unit?: 'ms' | 's' | 'bytes' | 'count' | '%';
  /** Value placeholder in the help text (`N`, `MS`, `FILE`). */
  readonly arg?: string;
  /** The default as shown; undefined: none (absent unless given). */
  readonly default?: string;
  readonly help: string;
  /** The CrawlConfig field it sets, when it is one. */
  readonly config?: keyof CrawlConfig;
  /** Smallest and largest value of a number. */
  readonly min?: number;
  readonly max?: number;
  /** The values an enumerated string may take. */
  readonly values?: readonly string[];
  /** The form a free string must have, and how a refusal describes it ("lower-case letters, …"). */
  readonly pattern?: { readonly test: RegExp; readonly what: string };
  /** The commands that take it; undefined: both `crawl` and `run`. */
  readonly commands?: readonly SettingCommand[];
  /** The config field holds the value times this (seconds given, milliseconds kept: 1000). */
  readonly scale?: number;
}

export type SettingCommand = 'crawl' | 'run';

const ms = (name: string, config: keyof CrawlConfig, dflt: number, help: string, min = 0): Setting => ({
  name,
  kind: 'int',
  unit: 'ms',
  arg: 'MS',
  default: String(dflt),
  help,
  config,
  min,
});
const count = (name: string, config: keyof CrawlConfig, dflt: number, help: string, min = 0): Setting => ({
  name,
  kind: 'int',
  unit: 'count',
  arg: 'N',
  default: String(dflt),
  help,
  config,
  min,
});
const bytes = (name: string, config: keyof CrawlConfig, dflt: number, help: string, min = 1): Setting => ({
  name,
  kind: 'int',
  unit: 'bytes',
  arg: 'BYTES',
  default: String(dflt),
  help,
  config,
  min,
});

/** Every setting, in the order `--help` lists them. */
export const SETTINGS: readonly Setting[] = [
  { name: 'config', kind: 'string', arg: 'FILE', help: 'YAML file of settings (keys as the flags, without --)' },
  {
    name: 'data',
    kind: 'string',
    arg: 'DIR',
    help: 'topics, state stores, schemas and WARC files; run again on the same dir to resume',
  },
  {
    name: 'seeds',
    kind: 'string',
    arg: 'FILE',
    help: 'seed URLs, one per line, # comments allowed; invalid seeds are reported and skipped',
  },
  {
    name: 'resolve',
    kind: 'list',
    arg: 'PATTERN=IP',
    help: "map host names to an address like curl's --resolve ('*.test=127.0.0.1'); repeatable",
    config: 'resolve',
  },
  {
    name: 'allow-ip',
    kind: 'list',
    arg: 'CIDR',
    help: 'let the fetcher connect to an otherwise refused range; repeatable',
    config: 'allowIps',
  },
  { name: 'no-system-dns', kind: 'bool', default: 'false', help: 'resolve only names matched by --resolve' },
  {
    name: 'ca-file',
    kind: 'string',
    arg: 'FILE',
    help: 'also trust these PEM CA certificates for https (besides the built-in roots)',
  },
  {
    name: 'until-idle',
    kind: 'bool',
    default: 'false',
    help: 'exit 0 once nothing is queued, due or in flight (URLs of hosts whose robots.txt is unavailable stay parked for a later run)',
  },
  { name: 'max-pages', kind: 'int', unit: 'count', arg: 'N', min: 1, help: 'stop after about N pages' },
  { name: 'duration', kind: 'int', unit: 's', arg: 'SECONDS', min: 1, help: 'stop after this long' },
  {
    name: 'partitions',
    kind: 'int',
    unit: 'count',
    arg: 'N',
    default: '4',
    min: 1,
    help: 'partitions per topic for a new data dir',
  },
  {
    name: 'user-agent',
    kind: 'string',
    arg: 'UA',
    default: 'crawlstream/0.1 (+https://crawlstream.invalid/bot)',
    help: 'User-Agent; its first token is matched against robots.txt groups',
    config: 'userAgent',
  },
  ms('min-delay', 'minDelayMs', 1_000, 'gap floor between fetches to one host (1000 is also the least allowed)', 1_000),
  count('slow-factor', 'slowFactor', 10, 'the gap is at least this many times the last fetch of the host took', 1),
  ms(
    'max-crawl-delay',
    'maxCrawlDelayMs',
    60_000,
    'robots.txt Crawl-delay is honoured up to this (the host is paced at the cap)',
  ),
  ms('robots-ttl', 'robotsTtlMs', 24 * 3_600_000, 'how long a robots.txt is trusted before it is fetched again', 1_000),
  ms(
    'robots-retry',
    'robotsRetryMs',
    60_000,
    'first wait after robots.txt answered 5xx or nothing (doubling up to --backoff-max)',
    100,
  ),
  ms('backoff', 'backoffMs', 60_000, 'first back-off after 429/503 without Retry-After (doubling)', 1),
  ms(
    'backoff-max',
    'backoffMaxMs',
    3_600_000,
    'longest back-off, and how long a host with repeated connection errors is parked',
    1,
  ),
  ms('backoff-quiet', 'backoffQuietMs', 600_000, "a host's back-off is forgiven after this long without a 429/503"),
  count('backoff-jitter', 'backoffJitterPercent', 20, 'random extra wait on back-offs, in percent'),
  count('max-attempts', 'maxAttempts', 5, 'fetch attempts per URL before a transient failure is final', 1),
  ms(
    'fetch-timeout',
    'fetchTimeoutMs',
    30_000,
    'total time one fetch may take (also caps the connect and headers timeouts)',
    100,
  ),
  ms('connect-timeout', 'connectTimeoutMs', 5_000, 'time to connect (capped by --fetch-timeout)', 100),
  ms('headers-timeout', 'headersTimeoutMs', 15_000, 'time until the response headers (capped by --fetch-timeout)', 100),
  ms(
    'lease-window',
    'leaseWindowMs',
    10_000,
    'a fetcher drops a lease it cannot start within this long of its issue',
    100,
  ),
  bytes('max-body', 'maxBodyBytes', 10 * 1024 * 1024, 'response bodies are cut at this size'),
  bytes(
    'max-decoded',
    'maxDecodedBytes',
    50 * 1024 * 1024,
    'decompressed size beyond which a body is a bomb and refused',
  ),
  count('max-url-length', 'maxUrlLength', 2_000, 'longer URLs are not admitted', 16),
  count('max-path-depth', 'maxPathDepth', 15, 'URLs with more path segments are not admitted', 1),
  count('max-segment-repeats', 'maxSegmentRepeats', 3, 'a path repeating one segment this many times is a trap', 2),
  count('max-redirect-hops', 'maxRedirectHops', 5, 'redirects followed from one URL', 0),
  count('max-outlinks', 'maxOutlinksPerPage', 1_000, 'outlinks taken from one page', 1),
  count(
    'max-hops',
    'maxHops',
    15,
    'links more hops from a seed are not followed; a site linked by k other sites allows k − 1 more, up to twice this',
    1,
  ),
  count(
    'template-allowance',
    'templateAllowance',
    12,
    "new URLs of one generated shape (/cal/{n}/{n}/, /s/{id}/page) a host may emit on its own pages: past half they wait in the lowest band, past all they are dropped; a host's shapes together get 3 times this",
    1,
  ),
  count(
    'template-allowance-per-inlink',
    'templateAllowancePerInlink',
    12,
    'allowance a shape earns per link into it from another site',
  ),
  count(
    'site-budget',
    'sitePageBudget',
    200,
    'URLs per cycle a site gets that no other site links to (a seed, or only itself)',
    1,
  ),
  count(
    'seed-budget',
    'seedPageBudget',
    0,
    'base budget of a seeded site instead of --site-budget, for seeds you mean to crawl deeper (0: --site-budget)',
  ),
  count('site-budget-per-inlink', 'siteBudgetPerInlink', 100, 'budget a site earns per distinct other site linking in'),
  count('site-budget-max', 'siteBudgetMax', 1_000_000, 'largest budget a site can earn', 1),
  count('dup-cut-window', 'dupCutWindow', 50, 'recent page records per site the duplicate cut looks at', 1),
  count('dup-cut-percent', 'dupCutPercent', 80, 'share of copies among them (percent) that cuts the site'),
  count(
    'host-slots',
    'activeHostSlots',
    1_000,
    'hosts holding queued URLs at once per partition (size it as target pages/s × typical gap s / partitions)',
    1,
  ),
  ms(
    'dispatch-lookahead',
    'dispatchLookaheadMs',
    250,
    'a lease may leave this long before its host is due (below --min-delay)',
  ),
  count(
    'ip-concurrency',
    'ipConcurrency',
    8,
    "per-IP limit, per frontier partition: leases in flight on one address, a host's first fetch included",
    1,
  ),
  ms('ip-gap', 'ipGapMs', 100, 'per-IP limit: least time between fetch starts on one address'),
  count('conn-errors-to-park', 'connErrorsToPark', 5, 'consecutive connection failures that park a host', 1),
  count('fetch-concurrency', 'fetchConcurrency', 64, 'fetches in flight per fetcher task', 1),
  {
    name: 'threads',
    kind: 'int',
    unit: 'count',
    arg: 'N',
    min: 1,
    config: 'threads',
    help: "JavaScript threads of this process: the main one, and N − 1 that parse HTML (default: the machine's cores)",
  },
  count(
    'seen-expected-urls',
    'seenExpectedUrls',
    1_000_000,
    "URLs one frontier partition expects (sizes its seen-set's Bloom filter)",
    1,
  ),
  {
    name: 'seen-fp-rate',
    kind: 'number',
    unit: 'count',
    arg: 'P',
    default: '0.01',
    help: "the Bloom filter's target false-positive rate (0 < P < 1)",
    config: 'seenFalsePositiveRate',
  },
  bytes(
    'seen-block-cache',
    'seenBlockCacheBytes',
    128 * 1024 * 1024,
    "RAM per frontier partition caching the seen-set's fingerprint blocks (0: none)",
    0,
  ),
  bytes(
    'warc-max-file',
    'warcMaxFileBytes',
    1024 * 1024 * 1024,
    'a WARC file is closed and a new one started at about this size',
    1024 * 1024,
  ),
  {
    name: 'recrawl-min',
    kind: 'int',
    unit: 's',
    arg: 'S',
    default: '3600',
    min: 1,
    scale: 1000,
    config: 'recrawlMinMs',
    help: 'shortest revisit interval of a page (of sitemaps and feeds: half of it)',
  },
  {
    name: 'recrawl-max',
    kind: 'int',
    unit: 's',
    arg: 'S',
    default: String(30 * 24 * 3600),
    min: 1,
    scale: 1000,
    config: 'recrawlMaxMs',
    help: 'longest revisit interval of a page',
  },
  {
    name: 'recrawl-initial',
    kind: 'int',
    unit: 's',
    arg: 'S',
    default: '0',
    scale: 1000,
    config: 'recrawlInitialMs',
    help: "a page's first revisit interval (0: the geometric mean of --recrawl-min and --recrawl-max)",
  },
  {
    name: 'recrawl-shorten',
    kind: 'number',
    arg: 'F',
    default: '0.5',
    min: 0.01,
    max: 1,
    config: 'recrawlShorten',
    help: 'a revisit that found a change multiplies the interval by this',
  },
  {
    name: 'recrawl-lengthen',
    kind: 'number',
    arg: 'F',
    default: '1.5',
    min: 1,
    max: 100,
    config: 'recrawlLengthen',
    help: 'a revisit that found no change (or a 304) multiplies the interval by this',
  },
  {
    name: 'feed-max-interval',
    kind: 'int',
    unit: 's',
    arg: 'S',
    default: String(24 * 3600),
    min: 1,
    scale: 1000,
    config: 'feedMaxIntervalMs',
    help: 'longest revisit interval of a sitemap or feed (their faster lane)',
  },
  {
    name: 'recrawl-share',
    kind: 'number',
    arg: 'F',
    default: '0.5',
    min: 0,
    max: 1,
    config: 'recrawlShare',
    help: 'share of host slots revisits get while new URLs wait too',
  },
  { name: 'no-sitemaps', kind: 'bool', default: 'false', help: "don't read robots.txt Sitemap: lines or feed links" },
  {
    name: 'metrics-port',
    kind: 'int',
    unit: 'count',
    arg: 'N',
    min: 0,
    max: 65_535,
    help: 'serve /metrics, /healthz and /readyz on this port (0: any free port)',
  },
  { name: 'metrics-host', kind: 'string', arg: 'ADDR', default: '127.0.0.1', help: 'address those endpoints bind to' },
  {
    name: 'log-level',
    kind: 'string',
    arg: 'LEVEL',
    default: 'info',
    values: ['debug', 'info', 'warn', 'error'],
    help: 'least level of log lines',
  },
  {
    name: 'log-format',
    kind: 'string',
    arg: 'FORMAT',
    default: 'text',
    values: ['text', 'json'],
    help: 'text, or json: one JSON object per line, for log pipelines',
  },
  { name: 'quiet', kind: 'bool', default: 'false', help: 'no progress lines' },
  // run only: one instance of a role on Kafka
  {
    name: 'role',
    kind: 'string',
    arg: 'R',
    values: ['frontier', 'fetcher', 'parser', 'all'],
    help: 'run: which sub-topology this instance runs; any number of instances per role',
    commands: ['run'],
  },
  {
    name: 'brokers',
    kind: 'string',
    arg: 'HOST:PORT,..',
    help: 'run: Kafka bootstrap servers, comma-separated',
    commands: ['run'],
  },
  {
    name: 'app-id',
    kind: 'string',
    arg: 'ID',
    default: APPLICATION_ID,
    pattern: { test: APPLICATION_ID_PATTERN, what: APP_ID_FORM },
    help: "run: the crawl's application id; another than the default prefixes the data topics (ID.links) and names changelogs, groups and transactional ids, so crawls with different ids share a cluster and nothing else",
    commands: ['run'],
  },
  {
    name: 'registry',
    kind: 'string',
    arg: 'URL',
    help: 'run: Confluent-compatible schema registry (Apicurio: http://host:port/apis/ccompat/v7)',
    commands: ['run'],
  },
  {
    name: 'commit-interval',
    kind: 'int',
    unit: 'ms',
    arg: 'MS',
    default: '200',
    min: 10,
    help: 'run: how often each task commits its transaction',
    commands: ['run'],
  },
  {
    name: 'session-timeout',
    kind: 'int',
    unit: 'ms',
    arg: 'MS',
    default: '10000',
    min: 2000,
    help: 'run: consumer-group session timeout',
    commands: ['run'],
  },
  {
    name: 'kafka-compression',
    kind: 'string',
    arg: 'C',
    default: 'lz4',
    values: ['none', 'gzip', 'lz4', 'zstd'],
    help: 'run: how record batches are compressed on the way to the brokers (every codec is read whatever this says)',
    commands: ['run'],
  },
  { name: 'kafka-tls', kind: 'bool', help: 'run: connect to the brokers over TLS', commands: ['run'] },
  {
    name: 'kafka-ca',
    kind: 'string',
    arg: 'FILE',
    help: "run: PEM CA certificate(s) that sign the brokers' certificates (with --kafka-tls; default: system CAs)",
    commands: ['run'],
  },
  {
    name: 'kafka-cert',
    kind: 'string',
    arg: 'FILE',
    help: 'run: PEM client certificate for mutual TLS (with --kafka-tls and --kafka-key)',
    commands: ['run'],
  },
  {
    name: 'kafka-key',
    kind: 'string',
    arg: 'FILE',
    help: 'run: PEM private key of --kafka-cert',
    commands: ['run'],
  },
  {
    name: 'kafka-sasl-mechanism',
    kind: 'string',
    arg: 'M',
    values: ['plain', 'scram-sha-256', 'scram-sha-512'],
    help: 'run: SASL authentication to the brokers: plain, scram-sha-256 or scram-sha-512',
    commands: ['run'],
  },
  {
    name: 'kafka-sasl-username',
    kind: 'string',
    arg: 'USER',
    help: 'run: SASL username (with --kafka-sasl-mechanism)',
    commands: ['run'],
  },
  {
    name: 'kafka-sasl-password-file',
    kind: 'string',
    arg: 'FILE',
    help: 'run: file holding the SASL password (or the password itself in CRAWLSTREAM_KAFKA_SASL_PASSWORD; never a flag)',
    commands: ['run'],
  },
  {
    name: 'registry-username',
    kind: 'string',
    arg: 'USER',
    help: 'run: HTTP basic username of the schema registry',
    commands: ['run'],
  },
  {
    name: 'registry-password-file',
    kind: 'string',
    arg: 'FILE',
    help: 'run: file holding the registry password (or the password itself in CRAWLSTREAM_REGISTRY_PASSWORD)',
    commands: ['run'],
  },
];

/** The settings a command takes. */
export function settingsOf(command: SettingCommand): readonly Setting[] {
  return SETTINGS.filter((s) => s.commands === undefined || s.commands.includes(command));
}

/** `CRAWLSTREAM_MIN_DELAY` for `min-delay`. */
export function envName(setting: Pick<Setting, 'name'>): string {
  return `CRAWLSTREAM_${setting.name.toUpperCase().replace(/-/g, '_')}`;
}
