import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CrawlError, InvalidOptionError } from '../../../core/errors.js';
import type { Subtopology, Topology } from '../../topology.js';
import { openRocks } from '../../../state/rocks.js';
import { isChangelogged, type StoreBuilder } from '../../../state/store-builder.js';
import { readChangelogs, type ChangelogRange } from './changelog-reader.js';
import type { KafkaPort } from './kafka-port.js';

/** The verdict on one local copy of one store partition. */
export interface ReplayReport {
  readonly store: string;
  readonly partition: number;
  /** The changelog offset the local copy says it reflects. */
  readonly checkpoint: number;
  /** Entries of the local copy. */
  readonly entries: number;
  /** Keys the replay has and the copy lacks, keys only the copy has, keys whose values differ. */
  readonly missing: number;
  readonly extra: number;
  readonly differing: number;
  /** Committed changelog records after the checkpoint: 0 = current; more = a stale copy (another instance owns the partition now). */
  readonly behind: number;
  /** The first differing key, printable; undefined when equal. */
  readonly firstDifference?: string;
}

export function replayEqual(r: ReplayReport): boolean {
  return r.missing === 0 && r.extra === 0 && r.differing === 0;
}

/**
 * Rebuilds changelogged stores of one instance's `dataDir` from `<app>-<store>-changelog`
 * (read committed, from offset 0 up to each local copy's checkpoint) and compares the rebuild
 * with the local RocksDB copy, entry by entry. Read-only on both sides. The instance owning
 * `dataDir` must be stopped (RocksDB allows one process). `stores` empty = every changelogged
 * store; `partition` undefined = every partition with a local copy.
 */
export async function replayStores(
  port: KafkaPort,
  topology: Topology,
  dataDir: string,
  stores: readonly string[],
  partition?: number,
): Promise<ReplayReport[]> {
  const subs = topology.build();
  const all = subs.flatMap((sub) => sub.stores.filter((b) => b.changelog).map((builder) => ({ sub, builder })));
  for (const name of stores) {
    if (!all.some((s) => s.builder.name === name))
      throw new InvalidOptionError(
        `--store: no changelogged store ${JSON.stringify(name)}; stores are ${all.map((s) => s.builder.name).join(', ')}`,
      );
  }
  const wanted = stores.length === 0 ? all : all.filter((s) => stores.includes(s.builder.name));
  const bySub = new Map<Subtopology, StoreBuilder[]>();
  for (const { sub, builder } of wanted) bySub.set(sub, [...(bySub.get(sub) ?? []), builder]);
  const reports: ReplayReport[] = [];
  for (const [sub, builders] of bySub) {
    if (partition !== undefined && (partition < 0 || partition >= sub.partitions))
      throw new InvalidOptionError(`--partition must be 0..${sub.partitions - 1}, got ${partition}`);
    for (let p = 0; p < sub.partitions; p++) {
      if (partition !== undefined && p !== partition) continue;
      const path = join(dataDir, 'state', `${sub.id}_${p}`, 'rocksdb');
      if (!existsSync(path)) continue;
      reports.push(...(await replayTask(port, topology, sub, p, path, builders)));
    }
  }
  return reports;
}

async function replayTask(
  port: KafkaPort,
  topology: Topology,
  sub: Subtopology,
  partition: number,
  path: string,
  builders: readonly StoreBuilder[],
): Promise<ReplayReport[]> {
  let db;
  try {
    db = await openRocks(path);
  } catch (err) {
    throw new CrawlError(
      'CS_STORE',
      `${(err as Error).message} (is an instance still running on this --data directory? stop it first)`,
      { cause: err },
    );
  }
  try {
    const local = builders.map((builder) => {
      const store = builder.build({
        taskId: { subtopology: sub.id, partition },
        db,
        dir: join(path, '..', builder.name),
      });
      if (!isChangelogged(store))
        throw new CrawlError(
          'CS_TOPOLOGY',
          `store ${builder.name} declares a changelog but is not a changelogged store`,
        );
      return { name: builder.name, topic: topology.changelogTopic(builder.name), store };
    });
    // one pass over each changelog partition: records below the checkpoint rebuild, the rest count as `behind`
    const replayed = new Map(
      local.map((l) => [l.topic, { rebuilt: new Map<string, Buffer>(), behind: 0, checkpoint: l.store.checkpoint() }]),
    );
    const ranges: ChangelogRange[] = local.map((l) => ({ topic: l.topic, partition, from: 0 }));
    await readChangelogs(port, ranges, (topic, _p, records) => {
      const r = replayed.get(topic)!;
      for (const rec of records) {
        if (rec.offset >= r.checkpoint) {
          r.behind++;
          continue;
        }
        const key = Buffer.from(rec.key).toString('hex');
        if (rec.value === null) r.rebuilt.delete(key);
        else r.rebuilt.set(key, Buffer.from(rec.value));
      }
    });
    return local.map((l) => {
      const { rebuilt, behind, checkpoint } = replayed.get(l.topic)!;
      let entries = 0;
      let extra = 0;
      let differing = 0;
      let firstDifference: string | undefined;
      const seen = new Set<string>();
      for (const [k, v] of l.store.entries()) {
        entries++;
        const key = k.toString('hex');
        seen.add(key);
        const expected = rebuilt.get(key);
        if (expected === undefined) extra++;
        else if (!expected.equals(v)) differing++;
        else continue;
        firstDifference ??= printable(k);
      }
      let missing = 0;
      for (const key of rebuilt.keys()) {
        if (seen.has(key)) continue;
        missing++;
        firstDifference ??= printable(Buffer.from(key, 'hex'));
      }
      l.store.close();
      return {
        store: l.name,
        partition,
        checkpoint,
        entries,
        missing,
        extra,
        differing,
        behind,
        ...(firstDifference !== undefined ? { firstDifference } : {}),
      };
    });
  } finally {
    await db.close();
  }
}

function printable(key: Buffer): string {
  const text = key.toString('utf8');
  return /^[\x20-\x7e]*$/.test(text) ? JSON.stringify(text) : `0x${key.toString('hex')}`;
}
