import type { Topology } from '../topology.js';
import type { ChangelogSource } from '../changelog-source.js';
import { openChangelogged, planStores, planTasks, type TaskPlan } from './store-plan.js';

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
 * Rebuilds changelogged stores of `dataDir` in memory from their changelogs (from offset 0 up to
 * each local copy's checkpoint) and compares the rebuild with the local RocksDB copy, entry by
 * entry. Read-only on both sides. The instance owning `dataDir` must be stopped (RocksDB allows
 * one process). `stores` empty = every changelogged store; `partition` undefined = every
 * partition with a local copy.
 */
export async function verifyStores(
  source: ChangelogSource,
  topology: Topology,
  dataDir: string,
  stores: readonly string[],
  partition?: number,
): Promise<ReplayReport[]> {
  const tasks = planTasks(
    dataDir,
    planStores(topology, stores),
    partition === undefined ? 'local' : { partition },
  ).filter((t) => t.dir.hasLive());
  const reports: ReplayReport[] = [];
  for (const task of tasks) reports.push(...(await verifyTask(source, topology, task)));
  return reports;
}

async function verifyTask(source: ChangelogSource, topology: Topology, task: TaskPlan): Promise<ReplayReport[]> {
  const db = await task.dir.openLive();
  try {
    const local = task.chosen.map((builder) => ({
      name: builder.name,
      topic: topology.changelogTopic(builder.name),
      store: openChangelogged(builder, db, task),
    }));
    // one pass over each changelog partition: records below the checkpoint rebuild, the rest count as `behind`
    const replayed = new Map(
      local.map((l) => [l.topic, { rebuilt: new Map<string, Buffer>(), behind: 0, checkpoint: l.store.checkpoint() }]),
    );
    const ranges = [];
    for (const l of local) {
      const to = (await source.endOffsets(l.topic, task.sub.partitions))[task.partition]!;
      ranges.push({ topic: l.topic, partition: task.partition, from: 0, to });
    }
    await source.read(ranges, (topic, _p, records) => {
      const r = replayed.get(topic)!;
      for (const rec of records) {
        if (rec.offset >= r.checkpoint) {
          r.behind++;
          continue;
        }
        const key = rec.key.toString('hex');
        if (rec.value === null) r.rebuilt.delete(key);
        else r.rebuilt.set(key, rec.value);
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
        partition: task.partition,
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
