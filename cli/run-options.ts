import { InvalidOptionError } from '../core/errors.js';
import { parseCrawlArgs, type CrawlCommand } from './options.js';

export const ROLES = ['frontier', 'fetcher', 'parser', 'all'] as const;
export type Role = (typeof ROLES)[number];

/** `crawlstream run`: one instance of a role on Kafka, with the crawl's fetch options. */
export interface RunCommand {
  readonly role: Role;
  readonly brokers: string[];
  readonly registryUrl: string;
  readonly commitIntervalMs: number | undefined;
  readonly sessionTimeoutMs: number | undefined;
  /** `crawl`'s parsed options: --data, --resolve, --allow-ip, --min-delay, --user-agent, --partitions, --until-idle… */
  readonly crawl: CrawlCommand;
}

export const RUN_USAGE = `usage: crawlstream run --role frontier|fetcher|parser|all --brokers HOST:PORT[,..] --registry URL --data DIR [crawl options]

  --role R               which sub-topology this instance runs; any number of instances per role
  --brokers LIST         Kafka bootstrap servers, comma-separated
  --registry URL         Confluent-compatible schema registry (Apicurio: http://host:port/apis/ccompat/v7)
  --data DIR             local state of this instance (RocksDB per task, WARC files)
  --commit-interval MS   how often each task commits its transaction (default 200)
  --session-timeout MS   consumer-group session timeout (default 10000)
  --until-idle           exit once this instance has had nothing to do for a while
  plus crawl's --resolve, --allow-ip, --min-delay, --user-agent, --fetch-timeout, --robots-retry,
  --partitions (must match the topics), --no-system-dns, --quiet; prints '[status] idle|busy' on change`;

const OWN = new Set(['--role', '--brokers', '--registry', '--commit-interval', '--session-timeout']);

/** Splits off the options of `run` and hands the rest to crawl's parser, so both validate alike. */
export function parseRunArgs(args: readonly string[]): RunCommand {
  const own = new Map<string, string>();
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    if (!OWN.has(flag)) {
      rest.push(a);
      continue;
    }
    const value = inline ?? args[++i];
    if (value === undefined || value.startsWith('--'))
      throw new InvalidOptionError(`${flag} needs a value\n${RUN_USAGE}`);
    own.set(flag, value);
  }
  const role = own.get('--role');
  if (!role || !(ROLES as readonly string[]).includes(role))
    throw new InvalidOptionError(
      `--role must be one of ${ROLES.join(', ')}, got ${JSON.stringify(role ?? '')}\n${RUN_USAGE}`,
    );
  return {
    role: role as Role,
    ...kafkaEndpoints(own.get('--brokers'), own.get('--registry'), RUN_USAGE),
    commitIntervalMs: millis('--commit-interval', own.get('--commit-interval'), 10),
    sessionTimeoutMs: millis('--session-timeout', own.get('--session-timeout'), 2000),
    crawl: parseCrawlArgs(rest),
  };
}

/** Validates --brokers (host:port list) and --registry (http URL); the registry is optional when `usage` says so. */
export function kafkaEndpoints(
  brokers: string | undefined,
  registry: string | undefined,
  usage: string,
): { brokers: string[]; registryUrl: string } {
  if (!brokers) throw new InvalidOptionError(`--brokers HOST:PORT is required\n${usage}`);
  const list = brokers
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b !== '');
  for (const b of list)
    if (!/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/.test(b))
      throw new InvalidOptionError(`--brokers needs host:port entries, got ${JSON.stringify(b)}`);
  if (registry !== undefined && !/^https?:\/\/\S+$/.test(registry))
    throw new InvalidOptionError(`--registry must be an http(s) URL, got ${JSON.stringify(registry)}`);
  return { brokers: list, registryUrl: registry ?? '' };
}

function millis(name: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min)
    throw new InvalidOptionError(
      `${name} must be a whole number of milliseconds, at least ${min}, got ${JSON.stringify(raw)}`,
    );
  return n;
}
