import { parseArgs } from 'node:util';
import { InvalidOptionError } from '../runtime/errors.js';
import { KafkaPort } from '../runtime/engines/kafka/kafka-port.js';
import { topicDefinitions } from '../runtime/engines/kafka/topics.js';
import { crawlTopology } from '../topology/crawl-topology.js';
import { parseCrawlArgs } from './options.js';
import { kafkaEndpoints } from './run-options.js';
import { tmpdir } from 'node:os';

export const TOPICS_USAGE = `usage: crawlstream topics create --brokers HOST:PORT[,..] [--partitions N]
       crawlstream topics list --brokers HOST:PORT[,..] [--partitions N]   (what create would make)

  creates every topic of the topology with its partition count (default 4), compacted changelogs
  and max.message.bytes for 'fetched'; existing topics are left alone`;

/** `topics create|list`: nothing in crawlstream relies on auto-created topics. */
export async function runTopics(args: string[], out: (line: string) => void): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { brokers: { type: 'string' }, partitions: { type: 'string' } } });
  } catch (err) {
    throw new InvalidOptionError(`${(err as Error).message}\n${TOPICS_USAGE}`);
  }
  const action = parsed.positionals[0];
  if (action !== 'create' && action !== 'list') throw new InvalidOptionError(`topics needs 'create' or 'list', got ${JSON.stringify(action ?? '')}\n${TOPICS_USAGE}`);
  const crawl = parseCrawlArgs(['--data', tmpdir(), ...(parsed.values.partitions !== undefined ? ['--partitions', parsed.values.partitions] : [])]);
  const defs = topicDefinitions(crawlTopology({ config: crawl.config, partitions: crawl.partitions, warcDir: tmpdir() }));
  if (action === 'list') {
    for (const d of defs) out(`${d.name}\tpartitions=${d.partitions}\t${Object.entries(d.config).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    return 0;
  }
  const { brokers } = kafkaEndpoints(parsed.values.brokers, undefined, TOPICS_USAGE);
  const port = new KafkaPort(brokers, 'crawlstream-admin');
  const admin = await port.admin();
  try {
    const created = await admin.createTopics(defs);
    for (const d of defs) out(`${created.includes(d.name) ? 'created' : 'exists '}  ${d.name} (${d.partitions} partitions, ${Object.entries(d.config).map(([k, v]) => `${k}=${v}`).join(' ')})`);
  } finally {
    await admin.close();
    await port.close();
  }
  return 0;
}
