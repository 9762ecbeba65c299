import { InvalidOptionError } from '../core/errors.js';
import { TOPICS } from '../topology/crawl-topology.js';
import { resolveSettings, requireSettings } from './config-sources.js';
import { seedBatches } from './crawl.js';
import { produceToKafka } from './kafka-produce.js';
import { seedsOf } from './options.js';
import { kafkaEndpoints } from './run-options.js';
import { securityFromSettings } from './kafka-security-options.js';
import { commandUsage } from './usage.js';

export const INJECT_USAGE = commandUsage(
  'inject',
  ['[URL...] [--seeds FILE] --brokers HOST:PORT[,..] --registry URL [--partitions N] [--app-id ID]'],
  "  writes the seeds, normalized and grouped per site, to 'links' (Avro, keyed by site)",
);

/** Produces seed URLs to the links topic; the frontier admits them like discovered links. */
export async function runInject(
  args: string[],
  out: (line: string) => void,
  err: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const resolved = resolveSettings(args, env, INJECT_USAGE, 'inject');
  const get = (name: string) => resolved.values.get(name)?.value;
  requireSettings(resolved, 'inject', INJECT_USAGE);
  const { brokers, registryUrl } = kafkaEndpoints(get('brokers') as string, get('registry') as string, INJECT_USAGE);
  const security = securityFromSettings(resolved, env);
  const applicationId = get('app-id') as string;
  const seeds = seedsOf(resolved.positionals, get('seeds') as string | undefined);
  if (seeds.length === 0) throw new InvalidOptionError(`no seeds given\n${INJECT_USAGE}`);
  const now = Date.now();
  const batches = seedBatches(seeds, now, err);
  await produceToKafka(
    brokers,
    registryUrl,
    get('partitions') as number,
    TOPICS.links,
    batches.map((b) => ({ key: b.site, value: b, timestamp: now })),
    security,
    applicationId,
  );
  out(
    `injected ${batches.reduce((n, b) => n + b.links.length, 0)} seeds for ${batches.length} sites into ${TOPICS.links} of ${applicationId}`,
  );
  return 0;
}
