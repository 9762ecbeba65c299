import { CRAWL_CONFIG_BOUNDS } from '../processors/common/config-bounds.js';
import { KAFKA_ENGINE_SETTINGS } from '../runtime/engines/kafka/engine-settings.js';
import { APPLICATION_ID_PATTERN } from '../runtime/topology.js';
import { APPLICATION_ID } from '../topology/application-id.js';
import { APP_ID_FORM } from './app-id.js';
import { SETTING_COMMANDS, type Setting, type SettingCommand } from './setting.js';
import { CRAWL_KNOBS, fromCrawlConfig, RECRAWL_SETTINGS, SCOPE_SETTINGS } from './settings-crawl.js';
import { KAFKA_COMMANDS, REGISTRY_COMMANDS, SECURITY_SETTINGS } from './settings-security.js';

export type { Setting, SettingCommand, SettingKind } from './setting.js';
export { SETTING_COMMANDS } from './setting.js';

/** Every setting as defined here, in the order `--help` lists them. */
const DEFINED: readonly Setting[] = [
  {
    name: 'config',
    kind: 'string',
    arg: 'FILE',
    help: "YAML file of settings (keys as the flags, without --); keys of other commands' settings are ignored",
    commands: SETTING_COMMANDS,
  },
  {
    name: 'data',
    kind: 'string',
    arg: 'DIR',
    help: "the crawl's data directory: topics, state stores, schemas and WARC files; run again on the same dir to resume",
    commands: ['crawl', 'run', 'demo', 'export', 'control', 'inject', 'replay', 'reparse'],
    requiredBy: ['crawl', 'run', 'export', 'replay', 'reparse'],
  },
  {
    name: 'seeds',
    kind: 'string',
    arg: 'FILE',
    help: 'seed URLs, one per line, # comments allowed; invalid seeds are reported and skipped',
    commands: ['crawl', 'run', 'inject'],
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
    help: "partitions per topic: of a new data dir or of the topics 'topics create' makes; elsewhere the crawl's own",
    commands: ['crawl', 'run', 'inject', 'control', 'topics', 'replay', 'reparse'],
  },
  ...CRAWL_KNOBS,
  {
    name: 'warc-store',
    kind: 'string',
    arg: 'URL',
    help: 's3://BUCKET/PREFIX: upload each closed WARC file and its index to PREFIX/NAME, verified, then delete it locally (credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials)',
  },
  {
    name: 's3-endpoint',
    kind: 'string',
    arg: 'URL',
    help: "the S3 API's URL for --warc-store (default: AWS's for --s3-region), e.g. http://127.0.0.1:8333",
  },
  { name: 's3-region', kind: 'string', arg: 'NAME', default: 'us-east-1', help: "--warc-store's region" },
  {
    name: 's3-path-style',
    kind: 'bool',
    default: 'false',
    help: '--warc-store: address objects as ENDPOINT/BUCKET/KEY (most S3-compatible stores) rather than BUCKET.ENDPOINT/KEY',
  },
  {
    name: 'warc-keep-local',
    kind: 'bool',
    default: 'false',
    help: '--warc-store: keep each WARC file in the data dir after it is uploaded',
  },
  ...RECRAWL_SETTINGS,
  { name: 'no-sitemaps', kind: 'bool', default: 'false', help: "don't read robots.txt Sitemap: lines or feed links" },
  ...SCOPE_SETTINGS,
  {
    name: 'metrics-port',
    kind: 'int',
    unit: 'count',
    arg: 'N',
    min: 0,
    max: 65_535,
    help: 'serve /metrics, /healthz and /readyz on this port (0: any free port)',
  },
  {
    name: 'metrics-host',
    kind: 'string',
    arg: 'ADDR',
    default: '127.0.0.1',
    help: 'address those endpoints bind to',
  },
  {
    name: 'stall-timeout',
    kind: 'int',
    unit: 'ms',
    arg: 'MS',
    default: '300000',
    min: 10_000,
    max: 86_400_000,
    help: '/healthz fails once input, records in flight or tasks not yet running wait this long with no progress (URLs waiting out a politeness gap or back-off do not count); longer than --fetch-timeout',
  },
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
  {
    name: 'quiet',
    kind: 'bool',
    default: 'false',
    help: 'no progress lines',
    commands: ['crawl', 'run', 'demo'],
  },
  // one instance of a role on Kafka, and the commands that talk to the cluster
  {
    name: 'role',
    kind: 'string',
    arg: 'R',
    values: ['frontier', 'fetcher', 'parser', 'all'],
    help: 'which sub-topology this instance runs; any number of instances per role',
    commands: ['run'],
    requiredBy: ['run'],
  },
  {
    name: 'brokers',
    kind: 'string',
    arg: 'HOST:PORT,..',
    help: 'Kafka bootstrap servers, comma-separated host:port or [IPv6]:port (e.g. kafka-0.kafka:9092,[fd00::7]:9092)',
    commands: KAFKA_COMMANDS,
    requiredBy: ['run'],
  },
  {
    name: 'app-id',
    kind: 'string',
    arg: 'ID',
    default: APPLICATION_ID,
    pattern: { test: APPLICATION_ID_PATTERN, what: APP_ID_FORM },
    help: "the crawl's application id; another than the default prefixes the data topics (ID.links) and names changelogs, groups and transactional ids, so crawls with different ids share a cluster and nothing else",
    commands: KAFKA_COMMANDS,
  },
  {
    name: 'registry',
    kind: 'string',
    arg: 'URL',
    help: 'Confluent-compatible schema registry (Apicurio: http://host:port/apis/ccompat/v7)',
    commands: REGISTRY_COMMANDS,
    requiredBy: ['run'],
  },
  {
    name: 'commit-interval',
    kind: 'int',
    unit: 'ms',
    arg: 'MS',
    default: String(KAFKA_ENGINE_SETTINGS.commitIntervalMs.default),
    min: KAFKA_ENGINE_SETTINGS.commitIntervalMs.min,
    help: 'how often each task commits its transaction',
    commands: ['run'],
  },
  {
    name: 'session-timeout',
    kind: 'int',
    unit: 'ms',
    arg: 'MS',
    default: String(KAFKA_ENGINE_SETTINGS.sessionTimeoutMs.default),
    min: KAFKA_ENGINE_SETTINGS.sessionTimeoutMs.min,
    help: 'consumer-group session timeout',
    commands: ['run'],
  },
  {
    name: 'state-cleanup-delay',
    kind: 'int',
    unit: 'ms',
    arg: 'MS',
    default: String(KAFKA_ENGINE_SETTINGS.stateCleanupDelayMs.default),
    min: KAFKA_ENGINE_SETTINGS.stateCleanupDelayMs.min,
    help: "how long a task's local state stays once no partition of this instance uses it (Kafka Streams' state.cleanup.delay.ms)",
    commands: ['run'],
  },
  {
    name: 'standby-replicas',
    kind: 'int',
    unit: 'count',
    arg: 'N',
    default: String(KAFKA_ENGINE_SETTINGS.standbyReplicas.default),
    min: KAFKA_ENGINE_SETTINGS.standbyReplicas.min,
    help: "standby copies of each task kept by other instances of the role, following its changelogs, so a failover restores seconds of changes instead of the whole state (Kafka Streams' num.standby.replicas)",
    commands: ['run'],
  },
  {
    name: 'kafka-compression',
    kind: 'string',
    arg: 'C',
    default: 'lz4',
    values: ['none', 'gzip', 'lz4', 'zstd'],
    help: 'how record batches are compressed on the way to the brokers (every codec is read whatever this says)',
    commands: ['run'],
  },
  ...SECURITY_SETTINGS,
  // the options of single commands
  {
    name: 'min-gap',
    kind: 'int',
    unit: 'ms',
    arg: 'MS',
    min: CRAWL_CONFIG_BOUNDS.minDelayMs.min, // the politeness floor
    help: "control slow: the least time from the end of one fetch to each of the site's hosts to the next",
    commands: ['control'],
  },
  {
    name: 'replication-factor',
    kind: 'int',
    unit: 'count',
    arg: 'N',
    min: 1,
    help: 'topics create: replicas of every topic created (default: 3 on a cluster of 3 or more brokers, else one per broker)',
    commands: ['topics'],
  },
  {
    name: 'min-insync-replicas',
    kind: 'int',
    unit: 'count',
    arg: 'N',
    min: 1,
    help: "topics create: min.insync.replicas of every topic created, at most --replication-factor (default: 2 with 3 replicas, else the broker's own)",
    commands: ['topics'],
  },
  {
    name: 'keep-retention-ms',
    kind: 'int',
    unit: 'ms',
    arg: 'MS',
    min: -1,
    help: 'topics create: how long page-records and control keep records (default -1: forever; write --keep-retention-ms=-1)',
    commands: ['topics'],
  },
  {
    name: 'store',
    kind: 'string',
    arg: 'NAME|all',
    help: "replay: the state store (or all; 'dump' takes one)",
    commands: ['replay'],
    requiredBy: ['replay'],
  },
  {
    name: 'partition',
    kind: 'int',
    unit: 'count',
    arg: 'P',
    min: 0,
    help: 'replay: only this partition of the store',
    commands: ['replay'],
  },
  {
    name: 'all-partitions',
    kind: 'bool',
    help: 'replay rebuild on Kafka: every partition, not only those with a local task directory',
    commands: ['replay'],
  },
  {
    name: 'warc',
    kind: 'list',
    arg: 'DIR|FILE',
    help: 'replay reparse: WARC files, or directories of them, to re-derive from (default DIR/warc); repeatable',
    commands: ['reparse'],
  },
  {
    name: 'emit-links',
    kind: 'bool',
    help: "replay reparse: also send the re-derived outlinks to 'links' (the frontier admits them)",
    commands: ['reparse'],
  },
  {
    name: 'markdown',
    kind: 'bool',
    help: "config: print the README's option table instead",
    commands: ['config'],
  },
  {
    name: 'ops',
    kind: 'string',
    arg: 'URL',
    help: 'status: the operations endpoint of a running crawl or run instance (its --metrics-port), e.g. http://127.0.0.1:9464',
    commands: ['status'],
    requiredBy: ['status'],
  },
  {
    name: 'json',
    kind: 'bool',
    help: "status: print the endpoint's JSON answer instead of tables",
    commands: ['status'],
  },
];

/** Every setting, in the order `--help` lists them, with the bounds and defaults of the config fields they set. */
export const SETTINGS: readonly Setting[] = DEFINED.map(fromCrawlConfig);

/** The commands a setting is taken by (`config` shows every setting and is left out). */
export function commandsOf(setting: Setting): readonly SettingCommand[] {
  return setting.commands ?? ['crawl', 'run'];
}

/** The settings a command takes, in `--help` order; `config` takes them all. */
export function settingsOf(command: SettingCommand): readonly Setting[] {
  if (command === 'config') return SETTINGS;
  return SETTINGS.filter((s) => commandsOf(s).includes(command));
}

/** `CRAWLSTREAM_MIN_DELAY` for `min-delay`. */
export function envName(setting: Pick<Setting, 'name'>): string {
  return `CRAWLSTREAM_${setting.name.toUpperCase().replace(/-/g, '_')}`;
}
