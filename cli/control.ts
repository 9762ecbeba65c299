import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { InvalidOptionError } from '../core/errors.js';
import type { Engine } from '../runtime/engine.js';
import type { ControlAction, ControlCommand } from '../schemas/types.js';
import { siteOf } from '../processors/common/normalize.js';
import { kafkaEndpoints } from './run-options.js';
import { securityArgs, securityFromArgs, securityUsage } from './kafka-security-options.js';
import type { ClusterSecurity } from '../runtime/engines/kafka/kafka-security.js';
import { TOPICS } from '../processors/common/topics.js';
import { APP_ID_ARG, APP_ID_USAGE, appIdOf } from './app-id.js';

export const CONTROL_USAGE = `usage: crawlstream control block|slow|pause|resume SITE --data DIR [--min-gap MS]
       crawlstream control block|slow|pause|resume SITE --brokers HOST:PORT[,..] --registry URL [--min-gap MS] [--app-id ID]

  block   drop the site's queued URLs and admit no more
  slow    at least --min-gap MS from the end of one fetch to each of its hosts to the next,
          for every fetch until resume or another slow
  pause   fetch nothing from it until resume
  resume  lift block, slow and pause
With --data, a running embedded crawl on DIR applies the command within a few seconds, otherwise
the next run does. With --brokers, the command goes to the 'control' topic on Kafka, where the
frontier instance owning the site's partition applies it.
${APP_ID_USAGE}
${securityUsage(true)}`;

const ACTIONS: Record<string, ControlAction> = { block: 'BLOCK', slow: 'SLOW', pause: 'PAUSE', resume: 'RESUME' };

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
      readonly partitions: string | undefined;
      readonly security: ClusterSecurity;
      /** The crawl's application id (`--app-id`): whose control topic. */
      readonly applicationId: string;
    };

/** Validates a control command line into the record it produces and where it goes. */
export function parseControlArgs(args: string[], now = Date.now()): { target: ControlTarget; command: ControlCommand } {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        data: { type: 'string' },
        'min-gap': { type: 'string' },
        brokers: { type: 'string' },
        registry: { type: 'string' },
        partitions: { type: 'string' },
        ...APP_ID_ARG,
        ...securityArgs(true),
      },
    });
  } catch (err) {
    throw new InvalidOptionError(`${(err as Error).message}\n${CONTROL_USAGE}`);
  }
  const { values, positionals } = parsed;
  const [verb, rawSite] = positionals;
  const action = verb === undefined ? undefined : ACTIONS[verb];
  if (!action)
    throw new InvalidOptionError(
      `control needs one of ${Object.keys(ACTIONS).join(', ')}, got ${JSON.stringify(verb ?? '')}\n${CONTROL_USAGE}`,
    );
  if (!rawSite)
    throw new InvalidOptionError(
      `control ${verb} needs a SITE (a registered domain like example.com)\n${CONTROL_USAGE}`,
    );
  if (values.data !== undefined && values.brokers !== undefined)
    throw new InvalidOptionError(`give --data DIR (embedded crawl) or --brokers (Kafka), not both\n${CONTROL_USAGE}`);
  let target: ControlTarget;
  if (values.brokers !== undefined) {
    const { brokers, registryUrl } = kafkaEndpoints(values.brokers, values.registry, CONTROL_USAGE);
    if (!registryUrl) throw new InvalidOptionError(`--registry URL is required with --brokers\n${CONTROL_USAGE}`);
    target = {
      brokers,
      registryUrl,
      partitions: values.partitions,
      security: securityFromArgs(values),
      applicationId: appIdOf(values['app-id']),
    };
  } else if (values.data !== undefined) {
    const security = Object.keys(securityArgs(true)).find((f) => values[f as keyof typeof values] !== undefined);
    if (security !== undefined)
      throw new InvalidOptionError(
        `--${security} is for --brokers (Kafka); --data needs no credentials\n${CONTROL_USAGE}`,
      );
    if (values['app-id'] !== undefined)
      throw new InvalidOptionError(
        `--app-id is for --brokers (Kafka); an embedded crawl is named by its --data DIR\n${CONTROL_USAGE}`,
      );
    target = { dataDir: values.data };
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
  if (action === 'SLOW') {
    const raw = values['min-gap'];
    if (raw === undefined || !/^\d+$/.test(raw) || Number(raw) < 1000)
      throw new InvalidOptionError(
        `control slow needs --min-gap MS of at least 1000, got ${JSON.stringify(raw ?? '')}`,
      );
    minGapMs = Number(raw);
  }
  return { target, command: { site, action, minGapMs, issuedAt: now, issuedBy: process.env.USER ?? null } };
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
