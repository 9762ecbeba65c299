import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { InvalidOptionError } from '../core/errors.js';
import { KafkaPort } from '../runtime/engines/kafka/kafka-port.js';
import { replayEqual, replayStores, type ReplayReport } from '../runtime/engines/kafka/replay.js';
import { crawlTopology } from '../topology/crawl-topology.js';
import { parseCrawlArgs } from './options.js';
import { kafkaEndpoints } from './run-options.js';
import { securityArgs, securityFromArgs, securityUsage } from './kafka-security-options.js';

export const REPLAY_USAGE = `usage: crawlstream replay --store NAME|all [--partition P] --brokers HOST:PORT[,..] --data DIR [--partitions N]

  rebuilds a store from its changelog (read committed, up to the local copy's checkpoint) and
  verifies it entry by entry against the local copy in DIR, the --data of a stopped 'run'
  instance; exits 1 if any copy differs. A copy whose partition moved to another instance is
  reported as behind (stale), which is not a difference.
${securityUsage(false)}`;

/** `crawlstream replay`: one line per local store copy; exit code 1 when any differs from its changelog. */
export async function runReplay(args: string[], out: (line: string) => void): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        store: { type: 'string' },
        partition: { type: 'string' },
        brokers: { type: 'string' },
        data: { type: 'string' },
        partitions: { type: 'string' },
        ...securityArgs(false),
      },
    });
  } catch (err) {
    throw new InvalidOptionError(`${(err as Error).message}\n${REPLAY_USAGE}`);
  }
  const v = parsed.values;
  if (!v.store) throw new InvalidOptionError(`--store NAME (or all) is required\n${REPLAY_USAGE}`);
  if (!v.data) throw new InvalidOptionError(`--data DIR is required\n${REPLAY_USAGE}`);
  if (v.partition !== undefined && !/^\d+$/.test(v.partition))
    throw new InvalidOptionError(`--partition must be a partition number, got ${JSON.stringify(v.partition)}`);
  const { brokers } = kafkaEndpoints(v.brokers, undefined, REPLAY_USAGE);
  const security = securityFromArgs(v);
  const crawl = parseCrawlArgs([
    '--data',
    v.data,
    ...(v.partitions !== undefined ? ['--partitions', v.partitions] : []),
  ]);
  const topology = crawlTopology({
    config: crawl.config,
    partitions: crawl.partitions,
    warcDir: join(crawl.dataDir, 'warc'),
  });
  const port = new KafkaPort(brokers, `${topology.applicationId}-replay`, undefined, security.kafka);
  let reports: ReplayReport[];
  try {
    reports = await replayStores(
      port,
      topology,
      v.data,
      v.store === 'all' ? [] : [v.store],
      v.partition === undefined ? undefined : Number(v.partition),
    );
  } finally {
    await port.close();
  }
  if (reports.length === 0)
    out(
      `no local copy of ${v.store === 'all' ? 'any store' : v.store}${v.partition !== undefined ? ` partition ${v.partition}` : ''} in ${v.data}`,
    );
  for (const r of reports) out(formatReport(r));
  return reports.every(replayEqual) ? 0 : 1;
}

export function formatReport(r: ReplayReport): string {
  const where = `${r.store} partition ${r.partition}`;
  const state = r.behind === 0 ? 'current' : `behind by ${r.behind} committed records: stale copy`;
  if (replayEqual(r))
    return `ok        ${where}: ${r.entries} entries equal the changelog replayed to offset ${r.checkpoint} (${state})`;
  return `MISMATCH  ${where} at offset ${r.checkpoint}: ${r.missing} missing, ${r.extra} extra, ${r.differing} differing of ${r.entries} entries; first ${r.firstDifference} (${state})`;
}
