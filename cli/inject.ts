import { parseArgs } from 'node:util';
import { tmpdir } from 'node:os';
import { InvalidOptionError } from '../core/errors.js';
import { TOPICS } from '../topology/crawl-topology.js';
import { seedBatches } from './crawl.js';
import { produceToKafka } from './kafka-produce.js';
import { parseCrawlArgs } from './options.js';
import { kafkaEndpoints } from './run-options.js';
import { securityArgs, securityFromArgs, securityUsage } from './kafka-security-options.js';
import { APP_ID_ARG, APP_ID_USAGE, appIdOf } from './app-id.js';

export const INJECT_USAGE = `usage: crawlstream inject [URL...] --seeds FILE --brokers HOST:PORT[,..] --registry URL [--partitions N] [--app-id ID]

  writes the seeds, normalized and grouped per site, to 'links' (Avro, keyed by site)
${APP_ID_USAGE}
${securityUsage(true)}`;

/** Produces seed URLs to the links topic; the frontier admits them like discovered links. */
export async function runInject(
  args: string[],
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        seeds: { type: 'string' },
        brokers: { type: 'string' },
        registry: { type: 'string' },
        partitions: { type: 'string' },
        ...APP_ID_ARG,
        ...securityArgs(true),
      },
    });
  } catch (e) {
    throw new InvalidOptionError(`${(e as Error).message}\n${INJECT_USAGE}`);
  }
  const v = parsed.values;
  const { brokers, registryUrl } = kafkaEndpoints(v.brokers, v.registry, INJECT_USAGE);
  if (!registryUrl) throw new InvalidOptionError(`--registry URL is required\n${INJECT_USAGE}`);
  const security = securityFromArgs(v);
  const applicationId = appIdOf(v['app-id']);
  const crawl = parseCrawlArgs(['--data', tmpdir(), ...parsed.positionals, ...(v.seeds ? ['--seeds', v.seeds] : [])]);
  if (crawl.seeds.length === 0) throw new InvalidOptionError(`no seeds given\n${INJECT_USAGE}`);
  const now = Date.now();
  const batches = seedBatches(crawl.seeds, now, err);
  await produceToKafka(
    brokers,
    registryUrl,
    v.partitions,
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
