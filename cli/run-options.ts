import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidOptionError } from '../core/errors.js';
import { brokerText, parseBrokerList } from '../runtime/engines/kafka/broker-list.js';
import { resolveSettings } from './config-sources.js';
import { commandUsage } from './usage.js';
import { crawlCommandOf, type CrawlCommand } from './options.js';
import { securityFromSettings } from './kafka-security-options.js';
import type { ClusterSecurity } from '../runtime/engines/kafka/kafka-security.js';
import type { KafkaCompression } from '../runtime/engines/kafka/kafka-codecs.js';

export const ROLES = ['frontier', 'fetcher', 'parser', 'all'] as const;
export type Role = (typeof ROLES)[number];

/** `crawlstream run`: one instance of a role on Kafka, with the crawl's fetch options. */
export interface RunCommand {
  readonly role: Role;
  readonly brokers: string[];
  readonly registryUrl: string;
  readonly commitIntervalMs: number | undefined;
  readonly sessionTimeoutMs: number | undefined;
  readonly stateCleanupDelayMs: number | undefined;
  /** `--standby-replicas`: standby copies of each task on other instances. */
  readonly standbyReplicas: number | undefined;
  /** `--kafka-compression`: the codec of every batch this instance produces. */
  readonly compression: KafkaCompression;
  /** `--app-id`: the topology's application id (default APPLICATION_ID). */
  readonly applicationId: string;
  /** TLS/SASL to the brokers, the registry's credentials (--kafka-*, --registry-username…). */
  readonly security: ClusterSecurity;
  /** `crawl`'s parsed options: --data, --resolve, --allow-ip, --min-delay, --user-agent, --partitions, --until-idle… */
  readonly crawl: CrawlCommand;
}

export const RUN_USAGE = commandUsage(
  'run',
  ['--role frontier|fetcher|parser|all --brokers HOST:PORT[,..] --registry URL --data DIR [options]'],
  `  runs one instance of a role on Kafka until SIGTERM; prints '[status] idle|busy' on change.
  Takes crawl's options besides its own; --partitions must match the topics.`,
);

/**
 * Parses `run` arguments with the settings schema, as crawl's (defaults < --config file <
 * environment < flags), so both validate alike.
 */
export function parseRunArgs(args: readonly string[], env: NodeJS.ProcessEnv = process.env): RunCommand {
  const resolved = resolveSettings(args, env, RUN_USAGE, 'run');
  const get = (name: string) => resolved.values.get(name)?.value;
  const role = get('role') as string | undefined;
  if (!role || !(ROLES as readonly string[]).includes(role))
    throw new InvalidOptionError(
      `--role must be one of ${ROLES.join(', ')}, got ${JSON.stringify(role ?? '')}\n${RUN_USAGE}`,
    );
  return {
    role: role as Role,
    ...kafkaEndpoints(get('brokers') as string | undefined, get('registry') as string | undefined, RUN_USAGE),
    commitIntervalMs: get('commit-interval') as number,
    sessionTimeoutMs: get('session-timeout') as number,
    stateCleanupDelayMs: get('state-cleanup-delay') as number,
    standbyReplicas: get('standby-replicas') as number,
    compression: get('kafka-compression') as KafkaCompression,
    applicationId: get('app-id') as string,
    security: securityFromSettings(resolved, env),
    crawl: crawlCommandOf(resolved),
  };
}

/**
 * Validates --brokers (parseBrokerList, the parser KafkaPort applies too) and --registry (http
 * URL); the registry is optional when `usage` says so. The brokers come back one entry each.
 */
export function kafkaEndpoints(
  brokers: string | undefined,
  registry: string | undefined,
  usage: string,
): { brokers: string[]; registryUrl: string } {
  if (!brokers) throw new InvalidOptionError(`--brokers HOST:PORT is required\n${usage}`);
  const list = parseBrokerList(brokers).map(brokerText);
  if (registry !== undefined && !/^https?:\/\/\S+$/.test(registry))
    throw new InvalidOptionError(`--registry must be an http(s) URL, got ${JSON.stringify(registry)}`);
  return { brokers: list, registryUrl: registry ?? '' };
}

/**
 * Whether a command serving both engines (replay, replay reparse) works on Kafka: one of `names`
 * (--brokers, --registry) given as a flag, or set in the environment or a --config file while
 * DIR holds no embedded crawl (no DIR/log). So a shell or pod that exports CRAWLSTREAM_BROKERS
 * for `run` still replays an embedded crawl's dir on the embedded engine.
 */
export function kafkaSelected(
  values: ReadonlyMap<string, { readonly source: string }>,
  names: readonly string[],
  dataDir: string,
): boolean {
  const given = names.flatMap((n) => values.get(n) ?? []);
  if (given.some((r) => r.source.startsWith('flag'))) return true;
  return given.length > 0 && !existsSync(join(dataDir, 'log'));
}
