import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidOptionError } from '../core/errors.js';
import type { Engine } from '../runtime/engine.js';
import type { ControlAction, ControlCommand } from '../schemas/types.js';
import { siteOf } from '../processors/common/normalize.js';
import { CRAWL_CONFIG_BOUNDS } from '../processors/common/config-bounds.js';
import { parseLiveSettings } from '../processors/common/site-overrides.js';
import { kafkaEndpoints } from './run-options.js';
import { securityFromSettings } from './kafka-security-options.js';
import type { ClusterSecurity } from '../runtime/engines/kafka/kafka-security.js';
import { TOPICS } from '../processors/common/topics.js';
import { resolveSettings, sourceRank, type ResolvedSettings } from './config-sources.js';
import { SECURITY_SETTINGS } from './settings-security.js';
import { commandUsage } from './usage.js';
import { produceToKafka } from './kafka-produce.js';

/** The politeness floor: the least --min-gap and `set min-delay` (CRAWL_CONFIG_BOUNDS). */
const FLOOR_MS = CRAWL_CONFIG_BOUNDS.minDelayMs.min;

export const CONTROL_USAGE = commandUsage(
  'control',
  [
    'block|slow|pause|resume SITE --data DIR [--min-gap MS]',
    'block|slow|pause|resume SITE --brokers HOST:PORT[,..] --registry URL [--min-gap MS] [--app-id ID]',
    'set SITE KEY=VALUE... (--data DIR | --brokers ... --registry URL)',
  ],
  `  block   drop the site's queued URLs and admit no more
  slow    at least --min-gap MS from the end of one fetch to each of its hosts to the next,
          for every fetch until resume or another slow
  pause   fetch nothing from it until resume
  resume  lift block, slow and pause
  set     change the site's overrides live: min-delay=MS (at least ${FLOOR_MS}), budget=N (URLs per
          cycle), max-depth=N; VALUE 'default' goes back to the config file's sites: entry or
          the option; kept in the frontier's state, so it survives restarts
With --data, a running embedded crawl on DIR applies the command within a few seconds, otherwise
the next run does. With --brokers, the command goes to the 'control' topic on Kafka, where the
frontier instance owning the site's partition applies it.`,
);

const ACTIONS: Record<string, ControlAction> = {
  block: 'BLOCK',
  slow: 'SLOW',
  pause: 'PAUSE',
  resume: 'RESUME',
  set: 'SET',
};

/** The inbox a running embedded crawl polls for operator commands. */
export function controlInbox(dataDir: string): string {
  return join(dataDir, 'control-inbox');
}

/** Where a control command goes: an embedded crawl's data directory, or the control topic on Kafka. */
export type ControlTarget =
  | { readonly dataDir: string }
  | {
      readonly brokers: string[];
      readonly registryUrl: string;
      readonly partitions: number;
      readonly security: ClusterSecurity;
      /** The crawl's application id (`--app-id`): whose control topic. */
      readonly applicationId: string;
    };

/**
 * Validates a control command line into the record it produces and where it goes. Its settings
 * resolve as every command's (default < file < environment < flag); when both --data and
 * --brokers are set the one from the stronger source wins (a flag over CRAWLSTREAM_DATA), and
 * from sources of one rank they are refused.
 */
export function parseControlArgs(
  args: string[],
  now = Date.now(),
  env: NodeJS.ProcessEnv = process.env,
): { target: ControlTarget; command: ControlCommand } {
  const resolved = resolveSettings(args, env, CONTROL_USAGE, 'control');
  const { values, positionals } = resolved;
  const [verb, rawSite, ...rest] = positionals;
  const action = verb === undefined ? undefined : ACTIONS[verb];
  if (!action)
    throw new InvalidOptionError(
      `control needs one of ${Object.keys(ACTIONS).join(', ')}, got ${JSON.stringify(verb ?? '')}\n${CONTROL_USAGE}`,
    );
  if (!rawSite)
    throw new InvalidOptionError(
      `control ${verb} needs a SITE (a registered domain like example.com)\n${CONTROL_USAGE}`,
    );
  let settings: Record<string, string> | null = null;
  if (action === 'SET') {
    settings = {};
    for (const pair of rest) {
      const eq = pair.indexOf('=');
      if (eq <= 0)
        throw new InvalidOptionError(`control set takes KEY=VALUE, got ${JSON.stringify(pair)}\n${CONTROL_USAGE}`);
      settings[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    parseLiveSettings(settings);
  } else if (rest.length > 0)
    throw new InvalidOptionError(
      `control ${verb} takes one SITE, got also ${JSON.stringify(rest[0])}\n${CONTROL_USAGE}`,
    );
  const data = values.get('data');
  const brokers = values.get('brokers');
  if (data !== undefined && brokers !== undefined && sourceRank(data.source) === sourceRank(brokers.source))
    throw new InvalidOptionError(`give --data DIR (embedded crawl) or --brokers (Kafka), not both\n${CONTROL_USAGE}`);
  const onKafka = brokers !== undefined && (data === undefined || sourceRank(brokers.source) > sourceRank(data.source));
  let target: ControlTarget;
  if (onKafka) {
    const { brokers: list, registryUrl } = kafkaEndpoints(
      brokers.value as string,
      values.get('registry')?.value as string | undefined,
      CONTROL_USAGE,
    );
    if (!registryUrl) throw new InvalidOptionError(`--registry URL is required with --brokers\n${CONTROL_USAGE}`);
    target = {
      brokers: list,
      registryUrl,
      partitions: values.get('partitions')!.value as number,
      security: securityFromSettings(resolved, env),
      applicationId: values.get('app-id')!.value as string,
    };
  } else if (data !== undefined) {
    refuseKafkaFlags(resolved);
    target = { dataDir: data.value as string };
  } else {
    throw new InvalidOptionError(`--data DIR or --brokers HOST:PORT is required\n${CONTROL_USAGE}`);
  }
  let site: string;
  try {
    site = siteOf(rawSite.includes('://') ? rawSite : `http://${rawSite}/`);
  } catch {
    throw new InvalidOptionError(`SITE ${JSON.stringify(rawSite)} is not a host name`);
  }
  let minGapMs: number | null = null;
  const minGap = values.get('min-gap')?.value as number | undefined;
  if (action === 'SLOW') {
    if (minGap === undefined) throw new InvalidOptionError(`control slow needs --min-gap MS of at least ${FLOOR_MS}`);
    minGapMs = minGap;
  }
  return { target, command: { site, action, minGapMs, issuedAt: now, issuedBy: env.USER ?? null, settings } };
}

/** An embedded crawl is named by its --data DIR and needs no credentials: Kafka flags with --data are a mistake. */
function refuseKafkaFlags({ values }: ResolvedSettings): void {
  const flagged = (name: string): boolean => values.get(name)?.source === `flag --${name}`;
  const security = SECURITY_SETTINGS.find((s) => flagged(s.name));
  if (security !== undefined)
    throw new InvalidOptionError(
      `--${security.name} is for --brokers (Kafka); --data needs no credentials\n${CONTROL_USAGE}`,
    );
  if (flagged('app-id'))
    throw new InvalidOptionError(
      `--app-id is for --brokers (Kafka); an embedded crawl is named by its --data DIR\n${CONTROL_USAGE}`,
    );
}

/**
 * `crawlstream control`: queues the command for the embedded crawl on --data, or sends it to the
 * control topic with --brokers; returns the exit code.
 */
export async function runControl(args: string[], out: (line: string) => void): Promise<number> {
  const { target, command } = parseControlArgs(args);
  const what = `${command.action} ${command.site}${command.minGapMs ? ` (min gap ${command.minGapMs} ms)` : ''}${
    command.settings
      ? ` ${Object.entries(command.settings)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`
      : ''
  }`;
  if ('dataDir' in target) {
    writeControl(target.dataDir, command);
    out(`queued ${what}; a running crawl on ${target.dataDir} applies it within seconds, otherwise the next run does`);
    return 0;
  }
  await produceToKafka(
    target.brokers,
    target.registryUrl,
    target.partitions,
    TOPICS.control,
    [{ key: command.site, value: command, timestamp: command.issuedAt }],
    target.security,
    target.applicationId,
  );
  out(`sent ${what} to the control topic; the frontier owning ${command.site} applies it within seconds`);
  return 0;
}

/** Queues a command for the crawl on `dataDir` (atomically: write, then rename into the inbox). */
export function writeControl(dataDir: string, command: ControlCommand): string {
  if (!existsSync(dataDir)) throw new InvalidOptionError(`--data ${dataDir} does not exist`);
  const inbox = controlInbox(dataDir);
  mkdirSync(inbox, { recursive: true });
  const name = `${command.issuedAt}-${process.pid}-${Math.random().toString(36).slice(2, 8)}.json`;
  const tmp = join(inbox, `.${name}.tmp`);
  writeFileSync(tmp, JSON.stringify(command));
  renameSync(tmp, join(inbox, name));
  return join(inbox, name);
}

/**
 * Moves queued commands from the inbox into the control topic, oldest first; a file is deleted
 * only after its record is committed. Unreadable files are renamed `.bad` and reported.
 */
export async function drainControlInbox(
  dataDir: string,
  engine: Engine,
  warn: (line: string) => void,
): Promise<number> {
  const inbox = controlInbox(dataDir);
  if (!existsSync(inbox)) return 0;
  let n = 0;
  for (const name of readdirSync(inbox)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const file = join(inbox, name);
    let command: ControlCommand;
    try {
      command = JSON.parse(readFileSync(file, 'utf8')) as ControlCommand;
      if (typeof command.site !== 'string' || !Object.values(ACTIONS).includes(command.action))
        throw new Error('not a control command');
    } catch (err) {
      warn(`control inbox: ${name} is not a control command (${(err as Error).message}); kept as ${name}.bad`);
      renameSync(file, `${file}.bad`);
      continue;
    }
    await engine.produce(TOPICS.control, [{ key: command.site, value: command, timestamp: command.issuedAt }]);
    unlinkSync(file);
    n++;
  }
  return n;
}
