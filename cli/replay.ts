import { join } from 'node:path';
import { CrawlError, InvalidOptionError } from '../core/errors.js';
import { EmbeddedChangelogSource } from '../runtime/engines/embedded/embedded-changelog-source.js';
import { KafkaChangelogSource } from '../runtime/engines/kafka/kafka-changelog-source.js';
import { KafkaPort } from '../runtime/engines/kafka/kafka-port.js';
import type { ChangelogSource } from '../runtime/changelog-source.js';
import { dumpStore } from '../runtime/replay/dump.js';
import { rebuildStores, type StoreRebuild } from '../runtime/replay/rebuild.js';
import { planStores, planTasks, type PartitionChoice } from '../runtime/replay/store-plan.js';
import { replayEqual, verifyStores, type ReplayReport } from '../runtime/replay/verify.js';
import type { Topology } from '../runtime/topology.js';
import { crawlTopology } from '../topology/crawl-topology.js';
import { validateCrawlConfig } from '../processors/common/crawl-config.js';
import { resolveSettings } from './config-sources.js';
import { kafkaEndpoints, kafkaSelected } from './run-options.js';
import { securityFromSettings } from './kafka-security-options.js';
import { runReparse } from './replay-reparse.js';
import { kafkaAppIdOf } from './app-id.js';
import { SECURITY_SETTINGS } from './settings-security.js';
import { commandUsage } from './usage.js';
import type { ClusterSecurity } from '../runtime/engines/kafka/kafka-security.js';

export const REPLAY_USAGE = commandUsage(
  'replay',
  ['verify|rebuild|dump|reparse [options]'],
  `  crawlstream replay verify --store NAME|all [--partition P] --data DIR [--brokers HOST:PORT[,..] [--app-id ID]]
    rebuilds each store copy from its changelog (read committed, up to the copy's checkpoint) in a
    scratch RocksDB under the temporary directory and compares it entry by entry with the copy in
    DIR; exits 1 if any differs. A
    copy whose partition moved to another instance is reported as behind (stale), not as a
    difference. 'crawlstream replay --store ...' without a subcommand is verify.
  crawlstream replay rebuild --store NAME|all [--partition P | --all-partitions] --data DIR [--brokers ...]
    writes the stores of each task from their changelogs (offset 0 to the end offsets read at
    the start) into a fresh rocksdb.rebuild-<pid> beside the task's rocksdb, and swaps it in only
    when complete; the task's other stores are copied from the live copy (all are rebuilt when
    there is none). Partitions: every partition on the embedded engine; on Kafka only those with
    a local task directory in DIR, unless --partition P or --all-partitions.
  crawlstream replay dump --store NAME [--partition P] --data DIR
    prints each local copy: '# store NAME partition P', one 'hexkey<TAB>hexvalue' line per entry
    in key order, then 'checkpoint N'. Read-only.
  crawlstream replay reparse ...    see 'crawlstream replay reparse --help'

  The engine: with --brokers, changelogs are the <app>-<store>-changelog topics on Kafka and DIR
  is the --data of a 'run' instance; without, they are in DIR's embedded log ('crawl --data DIR').
  A --brokers from the environment or a --config file (not a flag) is passed over when DIR holds
  an embedded crawl (DIR/log).
  Every subcommand needs the instance on DIR stopped (it refuses while one runs), and
  --partitions N when the crawl used another partition count than the default, and with
  --brokers the --app-id of the 'run' instance.`,
);

const SUBCOMMANDS = ['verify', 'rebuild', 'dump', 'reparse'] as const;

/** `crawlstream replay SUBCOMMAND`: routes to verify (also without a subcommand), rebuild, dump or reparse. */
export async function runReplay(args: string[], out: (line: string) => void): Promise<number> {
  const [first, ...rest] = args;
  if (first === 'reparse') return runReparse(rest, out);
  if (first === undefined || first.startsWith('-')) return runVerify(parseReplayArgs('verify', args), out);
  if (first === 'verify' || first === 'rebuild' || first === 'dump') {
    const options = parseReplayArgs(first, rest);
    if (first === 'verify') return runVerify(options, out);
    if (first === 'rebuild') return runRebuild(options, out);
    return runDump(options, out);
  }
  throw new InvalidOptionError(
    `unknown replay subcommand ${JSON.stringify(first)}; subcommands are ${SUBCOMMANDS.join(', ')}\n${REPLAY_USAGE}`,
  );
}

interface ReplayOptions {
  readonly dataDir: string;
  /** Empty = all. */
  readonly stores: string[];
  readonly partitions: PartitionChoice;
  readonly topology: Topology;
  /** undefined = the embedded engine. */
  readonly kafka?: { brokers: string[]; security: ClusterSecurity };
}

/**
 * Every option of a replay subcommand, validated before anything is opened; they resolve as
 * every command's (default < file < environment < flag).
 */
export function parseReplayArgs(
  sub: 'verify' | 'rebuild' | 'dump',
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): ReplayOptions {
  const resolved = resolveSettings(args, env, REPLAY_USAGE, 'replay');
  const v = resolved.values;
  const str = (name: string): string | undefined => v.get(name)?.value as string | undefined;
  const what = `replay ${sub}`;
  if (resolved.positionals.length > 0)
    throw new InvalidOptionError(`${what} takes no argument ${JSON.stringify(resolved.positionals[0])}`);
  const store = str('store');
  const data = str('data');
  const partition = v.get('partition')?.value as number | undefined;
  if (!store) throw new InvalidOptionError(`${what}: --store NAME${sub === 'dump' ? '' : ' (or all)'} is required`);
  if (sub === 'dump' && store === 'all')
    throw new InvalidOptionError(`replay dump: --store takes one store name, not all`);
  if (!data) throw new InvalidOptionError(`${what}: --data DIR is required`);
  const brokers = kafkaSelected(v, ['brokers'], data) ? str('brokers') : undefined;
  const allPartitions = v.get('all-partitions')?.value === true;
  if (allPartitions && (sub !== 'rebuild' || partition !== undefined))
    throw new InvalidOptionError(
      sub !== 'rebuild'
        ? `--all-partitions is an option of replay rebuild, not of ${what}`
        : '--all-partitions and --partition exclude each other',
    );
  // flags only: the environment is shared, and may hold them for another command
  if (brokers === undefined && SECURITY_SETTINGS.some((s) => v.get(s.name)?.source === `flag --${s.name}`))
    throw new InvalidOptionError(`${what}: the Kafka security options need --brokers`);
  const applicationId = kafkaAppIdOf(v.get('app-id'), brokers !== undefined, what);
  const topology = crawlTopology({
    config: validateCrawlConfig({}),
    partitions: v.get('partitions')!.value as number,
    warcDir: join(data, 'warc'),
    applicationId,
  });
  const partitions: PartitionChoice =
    partition !== undefined ? { partition } : allPartitions || brokers === undefined ? 'all' : 'local';
  const stores = store === 'all' ? [] : [store];
  // refuses an unknown store or a partition out of range before anything is opened
  planTasks(data, planStores(topology, stores), partitions);
  return {
    dataDir: data,
    stores,
    partitions,
    topology,
    ...(brokers !== undefined
      ? {
          kafka: {
            brokers: kafkaEndpoints(brokers, undefined, REPLAY_USAGE).brokers,
            security: securityFromSettings(resolved, env),
          },
        }
      : {}),
  };
}

async function openSource(o: ReplayOptions, role: string): Promise<ChangelogSource> {
  if (!o.kafka) return EmbeddedChangelogSource.open(o.dataDir);
  return new KafkaChangelogSource(
    new KafkaPort(
      o.kafka.brokers,
      `${o.topology.applicationId}-${role}`,
      undefined,
      o.kafka.security.kafka,
      o.topology,
    ),
  );
}

/** `replay verify`: one line per local store copy; exit code 1 when any differs from its changelog. */
async function runVerify(o: ReplayOptions, out: (line: string) => void): Promise<number> {
  const source = await openSource(o, 'replay');
  let reports: ReplayReport[];
  try {
    const partition = typeof o.partitions === 'object' ? o.partitions.partition : undefined;
    reports = await verifyStores(source, o.topology, o.dataDir, o.stores, partition);
  } finally {
    await source.close();
  }
  if (reports.length === 0)
    out(
      `no local copy of ${o.stores[0] ?? 'any store'}${typeof o.partitions === 'object' ? ` partition ${o.partitions.partition}` : ''} in ${o.dataDir}`,
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

/** `replay rebuild`: progress lines, then one line per store partition written. */
async function runRebuild(o: ReplayOptions, out: (line: string) => void): Promise<number> {
  const source = await openSource(o, 'rebuild');
  const started = Date.now();
  let results: StoreRebuild[];
  try {
    out(`rebuilding ${o.stores[0] ?? 'every store'} of ${o.dataDir} from ${source.description}`);
    results = await rebuildStores(source, o.topology, o.dataDir, { stores: o.stores, partitions: o.partitions, out });
  } finally {
    await source.close();
  }
  if (results.length === 0)
    out(`no task to rebuild in ${o.dataDir} (on Kafka: pass --partition P or --all-partitions)`);
  for (const r of results) out(formatRebuild(r));
  const records = results.filter((r) => r.how === 'changelog').reduce((n, r) => n + r.records, 0);
  out(
    `rebuilt ${results.length} store partitions from ${records} changelog records in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return 0;
}

export function formatRebuild(r: StoreRebuild): string {
  const where = `${r.store} partition ${r.partition}`;
  if (r.how === 'copied')
    return `copied    ${where}: ${r.records} entries and checkpoint ${r.checkpoint} from the live copy`;
  const gaps = r.end! - r.records;
  return `rebuilt   ${where}: ${r.records} records read up to the end offset ${r.end}${gaps > 0 ? ` (${gaps} offsets without a record: compacted or transaction markers)` : ''}; checkpoint ${r.checkpoint}${r.end === 0 ? ' (empty changelog: empty store)' : ''}`;
}

/** `replay dump`: the copies of one store, for a byte-for-byte comparison. */
async function runDump(o: ReplayOptions, out: (line: string) => void): Promise<number> {
  const dumped = await dumpStore(
    o.topology,
    o.dataDir,
    o.stores[0]!,
    o.partitions === 'all' ? 'local' : o.partitions,
    out,
  );
  if (dumped === 0) throw new CrawlError('CS_STORE', `replay dump: no local copy of ${o.stores[0]} in ${o.dataDir}`);
  return 0;
}
