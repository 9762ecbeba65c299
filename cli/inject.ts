import { InvalidOptionError } from '../core/errors.js';
import { TOPICS } from '../topology/crawl-topology.js';
import { resolveSettings, sourceRank } from './config-sources.js';
import { produceToKafka } from './kafka-produce.js';
import { seedsOf } from './options.js';
import { kafkaEndpoints } from './run-options.js';
import { securityFromSettings } from './kafka-security-options.js';
import { seedBatches, writeSeeds } from './seed-inbox.js';
import { commandUsage } from './usage.js';

export const INJECT_USAGE = commandUsage(
  'inject',
  [
    '[URL...] [--seeds FILE] --data DIR',
    '[URL...] [--seeds FILE] --brokers HOST:PORT[,..] --registry URL [--partitions N] [--app-id ID]',
  ],
  `  adds seeds to a crawl. With --data, a running embedded crawl on DIR takes them within a few
  seconds (otherwise the next run on DIR does). With --brokers, they go to 'links' on Kafka
  (Avro, normalized, grouped per site, keyed by site). Seeds already seen are ignored.`,
);

/** Adds seed URLs to a crawl: through an embedded crawl's data dir, or to the links topic on Kafka. */
export async function runInject(
  args: string[],
  out: (line: string) => void,
  err: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const resolved = resolveSettings(args, env, INJECT_USAGE, 'inject');
  const get = (name: string) => resolved.values.get(name)?.value;
  const data = resolved.values.get('data');
  const brokersSetting = resolved.values.get('brokers');
  if (
    data !== undefined &&
    brokersSetting !== undefined &&
    sourceRank(data.source) === sourceRank(brokersSetting.source)
  )
    throw new InvalidOptionError(`give --data DIR (embedded crawl) or --brokers (Kafka), not both\n${INJECT_USAGE}`);
  const onKafka =
    brokersSetting !== undefined && (data === undefined || sourceRank(brokersSetting.source) > sourceRank(data.source));
  const seeds = seedsOf(resolved.positionals, get('seeds') as string | undefined);
  if (!onKafka && data === undefined)
    throw new InvalidOptionError(`--data DIR (embedded crawl) or --brokers HOST:PORT,.. is required\n${INJECT_USAGE}`);
  if (seeds.length === 0) throw new InvalidOptionError(`no seeds given\n${INJECT_USAGE}`);
  const now = Date.now();
  if (!onKafka) {
    const dataDir = data!.value as string;
    // checked here so that a bad seed is reported to whoever typed it, not only in the crawl's log
    const batches = seedBatches(seeds, now, err);
    const good = batches.flatMap((b) => b.links.map((l) => l.url));
    if (good.length === 0) throw new InvalidOptionError('no valid seeds given');
    writeSeeds(dataDir, good, now);
    out(
      `queued ${good.length} seeds for ${batches.length} sites; a running crawl on ${dataDir} takes them within seconds, otherwise the next run does`,
    );
    return 0;
  }
  const registry = get('registry') as string | undefined;
  if (registry === undefined)
    throw new InvalidOptionError(`--registry URL is required with --brokers\n${INJECT_USAGE}`);
  const { brokers, registryUrl } = kafkaEndpoints(brokersSetting.value as string, registry, INJECT_USAGE);
  const security = securityFromSettings(resolved, env);
  const applicationId = get('app-id') as string;
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
