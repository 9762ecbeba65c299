import { rmSync } from 'node:fs';
import { CrawlError } from '../../core/errors.js';
import { checkpointKeyOf, storeKeyRange } from '../../state/rocks-store.js';
import { type RocksPort, type RocksWrite } from '../../state/rocks.js';
import type { StoreBuilder } from '../../state/store-builder.js';
import type { Topology } from '../topology.js';
import { rangeKey, type ChangelogSource } from '../changelog-source.js';
import { closeStores, restoreStores, type RestoreTarget } from '../task-state.js';
import { Progress } from './progress.js';
import { planStores, planTasks, replayStores, type PartitionChoice, type TaskPlan } from './store-plan.js';

/** What a rebuild did to one store partition. */
export interface StoreRebuild {
  readonly store: string;
  readonly partition: number;
  /** 'changelog': rebuilt from it; 'copied': another store of the task, copied from the live copy. */
  readonly how: 'changelog' | 'copied';
  /** Changelog records applied (rebuilt) or entries copied. */
  readonly records: number;
  /** The changelog's end offset captured before the rebuild started (rebuilt stores). */
  readonly end?: number;
  /** The checkpoint the new copy records. */
  readonly checkpoint: number;
}

export interface RebuildOptions {
  /** Store names; empty = every changelogged store. */
  readonly stores: readonly string[];
  readonly partitions: PartitionChoice;
  readonly out: (line: string) => void;
  /** For tests and the bench: the clock of progress lines. */
  readonly now?: () => number;
}

const COPY_BATCH = 10_000;
/** The key the changelog compactor also writes to fsync a task's WAL. */
const DURABLE_KEY = Buffer.from('\u0000durable');

/**
 * Rebuilds changelogged stores of the tasks in `dataDir` from their changelogs. All stores of a
 * task share one RocksDB: per task, a fresh `rocksdb.rebuild-<pid>` is written — the chosen stores
 * from their changelogs (offset 0 to the end captured before any task starts), the task's other
 * stores copied (entries and checkpoint) from the live copy — and swapped in only when complete
 * (`swapIn`; leftovers of an earlier crash are recovered first, `recoverTaskDir`). A task without
 * a live copy gets every changelogged store rebuilt. A changelog with no record gives an empty
 * store with checkpoint 0. Files beside the RocksDB (a WARC store's directory) are not touched.
 * Refuses (CS_STORE) when an instance holds a task's RocksDB: every live copy is opened before
 * any is written.
 */
export async function rebuildStores(
  source: ChangelogSource,
  topology: Topology,
  dataDir: string,
  options: RebuildOptions,
): Promise<StoreRebuild[]> {
  const { out } = options;
  const tasks = planTasks(dataDir, planStores(topology, options.stores), options.partitions);
  for (const task of tasks) if (task.dir.hasLive()) await (await task.dir.openLive()).close();
  // the ends are captured once, before any task is written: the final check is against them
  const ends = new Map<string, number>();
  const byTopic = new Map<string, number[]>();
  let total = 0;
  for (const task of tasks) {
    for (const builder of storesToRebuild(task)) {
      const topic = topology.changelogTopic(builder.name);
      if (!byTopic.has(topic)) byTopic.set(topic, await source.endOffsets(topic, task.sub.partitions));
      const end = byTopic.get(topic)![task.partition]!;
      ends.set(rangeKey(topic, task.partition), end);
      total += end;
    }
  }
  const progress = new Progress('rebuilding', total, out, options.now);
  const results: StoreRebuild[] = [];
  for (const task of tasks) results.push(...(await rebuildTask(source, topology, task, ends, progress, out)));
  return results;
}

/** The chosen stores, or every changelogged store when the task has no live copy to copy the others from. */
function storesToRebuild(task: TaskPlan): readonly StoreBuilder[] {
  return task.dir.hasLive() ? task.chosen : task.changelogged;
}

async function rebuildTask(
  source: ChangelogSource,
  topology: Topology,
  task: TaskPlan,
  ends: ReadonlyMap<string, number>,
  progress: Progress,
  out: (line: string) => void,
): Promise<StoreRebuild[]> {
  const name = `task ${task.dir.name}`;
  for (const line of task.dir.recover()) out(`${name}: ${line}`);
  const livePath = task.dir.live;
  const builders = storesToRebuild(task);
  if (builders !== task.chosen && builders.length > task.chosen.length)
    out(
      `${name}: no live copy at ${livePath}: rebuilding every store of it (${builders.map((b) => b.name).join(', ')})`,
    );
  const path = task.dir.rebuildPath();
  const fresh = await task.dir.open(path);
  let live: RocksPort | undefined;
  const results: StoreRebuild[] = [];
  try {
    if (builders === task.chosen && task.dir.hasLive()) {
      live = await task.dir.openLive();
      for (const other of task.changelogged.filter((b) => !builders.includes(b)))
        results.push({
          store: other.name,
          partition: task.partition,
          how: 'copied',
          ...copyStore(live, fresh, other.name),
        });
    }
    // fresh stores (checkpoint 0): the restore reads each changelog from its start
    const built = replayStores(topology, task, fresh, builders);
    const targets: RestoreTarget[] = built.changelogged.map((entry) => ({
      ...entry,
      to: ends.get(rangeKey(entry.topic, task.partition))!,
    }));
    const restored = await restoreStores(source, task.partition, targets, { onBatch: (n) => progress.add(n) });
    for (const [i, s] of restored.entries()) {
      const { to } = targets[i]!;
      // the final check: every record read lies below the end captured at the start, and no more
      // records than offsets were read (fewer: offsets without a record, see docs/REPLAY.md)
      if (s.last >= to || s.records > to || s.checkpoint > to)
        throw new CrawlError(
          'CS_INTERNAL',
          `${s.store} partition ${task.partition}: read ${s.records} records up to offset ${s.last}, past the end offset ${to} captured at the start`,
        );
      results.push({
        store: s.store,
        partition: task.partition,
        how: 'changelog',
        records: s.records,
        end: to,
        checkpoint: s.checkpoint,
      });
    }
    closeStores(built);
  } catch (err) {
    await fresh.close().catch(() => undefined);
    await live?.close().catch(() => undefined);
    rmSync(path, { recursive: true, force: true });
    throw err;
  }
  await live?.close();
  // fsyncs the WAL (with everything above in it) before the swap makes the new copy the live one
  fresh.write([{ key: DURABLE_KEY, value: Buffer.alloc(0) }], { sync: true });
  await fresh.close();
  task.dir.swapIn(path);
  return results;
}

/** Copies store `name`'s committed entries and checkpoint key from `from` to `to`. */
function copyStore(from: RocksPort, to: RocksPort, name: string): { records: number; checkpoint: number } {
  const { gte, lt } = storeKeyRange(name);
  let batch: RocksWrite[] = [];
  let records = 0;
  for (const [key, value] of from.iterate(gte, lt)) {
    batch.push({ key, value });
    records++;
    if (batch.length >= COPY_BATCH) {
      to.write(batch);
      batch = [];
    }
  }
  const checkpointKey = checkpointKeyOf(name);
  const checkpoint = from.get(checkpointKey);
  if (checkpoint !== undefined) batch.push({ key: checkpointKey, value: checkpoint });
  to.write(batch);
  return { records, checkpoint: checkpoint === undefined ? 0 : Number(checkpoint.readBigUInt64BE(0)) };
}
