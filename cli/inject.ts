import { parseArgs } from 'node:util';
import { tmpdir } from 'node:os';
import { InvalidOptionError } from '../runtime/errors.js';
import { ConfluentSchemaRegistry } from '../runtime/engines/kafka/confluent-registry.js';
import { KafkaPort } from '../runtime/engines/kafka/kafka-port.js';
import { partitionFor } from '../runtime/partitioner.js';
import { buildSerdes } from '../runtime/serdes.js';
import { crawlTopology, TOPICS } from '../topology/crawl-topology.js';
import { seedBatches } from './crawl.js';
import { parseCrawlArgs } from './options.js';
import { kafkaEndpoints } from './run-options.js';

export const INJECT_USAGE = `usage: crawlstream inject [URL...] --seeds FILE --brokers HOST:PORT[,..] --registry URL [--partitions N]

  writes the seeds, normalized and grouped per site, to 'links' (Avro, keyed by site)`;

/** Produces seed URLs to the links topic; the frontier admits them like discovered links. */
export async function runInject(args: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { seeds: { type: 'string' }, brokers: { type: 'string' }, registry: { type: 'string' }, partitions: { type: 'string' } } });
  } catch (e) {
    throw new InvalidOptionError(`${(e as Error).message}\n${INJECT_USAGE}`);
  }
  const v = parsed.values;
  const { brokers, registryUrl } = kafkaEndpoints(v.brokers, v.registry, INJECT_USAGE);
  if (!registryUrl) throw new InvalidOptionError(`--registry URL is required\n${INJECT_USAGE}`);
  const crawl = parseCrawlArgs(['--data', tmpdir(), ...parsed.positionals, ...(v.seeds ? ['--seeds', v.seeds] : []), ...(v.partitions ? ['--partitions', v.partitions] : [])]);
  if (crawl.seeds.length === 0) throw new InvalidOptionError(`no seeds given\n${INJECT_USAGE}`);
  const topology = crawlTopology({ config: crawl.config, partitions: crawl.partitions, warcDir: tmpdir() });
  topology.build();
  const serdes = await buildSerdes(topology, new ConfluentSchemaRegistry(registryUrl));
  const now = Date.now();
  const batches = seedBatches(crawl.seeds, now, err);
  const spec = topology.topic(TOPICS.links);
  const port = new KafkaPort(brokers, 'crawlstream-inject');
  const producer = await port.producer();
  try {
    await producer.send(batches.map((b) => {
      const key = serdes.key(TOPICS.links).serialize(b.site);
      return { topic: TOPICS.links, partition: partitionFor(key, spec.partitions), key, value: serdes.value(TOPICS.links).serialize(b), timestamp: now };
    }));
  } finally {
    await producer.close();
    await port.close();
  }
  out(`injected ${batches.reduce((n, b) => n + b.links.length, 0)} seeds for ${batches.length} sites into ${TOPICS.links}`);
  return 0;
}
