import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CrawlError, InvalidOptionError } from '../../core/errors.js';
import { openRocks, type RocksPort } from '../../state/rocks.js';
import { isChangelogged, type StoreBuilder } from '../../state/store-builder.js';
import type { ChangeloggedStore } from '../../state/state-store.js';
import type { Subtopology, Topology } from '../topology.js';

/** The stores a replay works on in one sub-topology, and every changelogged store of it. */
export interface SubPlan {
  readonly sub: Subtopology;
  readonly chosen: readonly StoreBuilder[];
  readonly changelogged: readonly StoreBuilder[];
}

/** One task (sub-topology × partition) of a replay, with its directory `<data>/state/<sub>_<p>`. */
export interface TaskPlan extends SubPlan {
  readonly partition: number;
  readonly dir: string;
}

/** Which partitions: all of the sub-topology, or only those with a local task directory. */
export type PartitionChoice = { readonly partition: number } | 'all' | 'local';

/**
 * The changelogged stores named by `stores` (empty = all), grouped by sub-topology. Refuses a
 * name that is not a changelogged store, listing the valid ones.
 */
export function planStores(topology: Topology, stores: readonly string[]): SubPlan[] {
  const subs = topology.build();
  const valid = subs.flatMap((sub) => sub.stores.filter((b) => b.changelog).map((b) => b.name));
  for (const name of stores) {
    if (!valid.includes(name))
      throw new InvalidOptionError(
        `--store: no changelogged store ${JSON.stringify(name)}; stores are all, ${valid.join(', ')}`,
      );
  }
  const plans: SubPlan[] = [];
  for (const sub of subs) {
    const changelogged = sub.stores.filter((b) => b.changelog);
    const chosen = stores.length === 0 ? changelogged : changelogged.filter((b) => stores.includes(b.name));
    if (chosen.length > 0) plans.push({ sub, chosen, changelogged });
  }
  return plans;
}

/** The task directory of one task of `dataDir`. */
export function taskDir(dataDir: string, sub: Subtopology, partition: number): string {
  return join(dataDir, 'state', `${sub.id}_${partition}`);
}

/**
 * The tasks of `plans` a replay visits. Refuses a partition outside a chosen sub-topology's range
 * (before any work is done).
 */
export function planTasks(dataDir: string, plans: readonly SubPlan[], choice: PartitionChoice): TaskPlan[] {
  const tasks: TaskPlan[] = [];
  for (const plan of plans) {
    const { sub } = plan;
    if (typeof choice === 'object' && (choice.partition < 0 || choice.partition >= sub.partitions))
      throw new InvalidOptionError(
        `--partition must be 0..${sub.partitions - 1} (the stores' partitions), got ${choice.partition}`,
      );
    for (let p = 0; p < sub.partitions; p++) {
      if (typeof choice === 'object' && p !== choice.partition) continue;
      const dir = taskDir(dataDir, sub, p);
      if (choice === 'local' && !existsSync(dir)) continue;
      tasks.push({ ...plan, partition: p, dir });
    }
  }
  return tasks;
}

/**
 * Opens a task's RocksDB, turning RocksDB's lock failure into the reason: one process owns a
 * data directory, so a locked store means an instance is running on it.
 */
export async function openTaskRocks(path: string, dataDir: string): Promise<RocksPort> {
  try {
    return await openRocks(path);
  } catch (err) {
    throw lockedOr(err, path, dataDir);
  }
}

/** `err` as a CS_STORE error naming the running instance when it is RocksDB's lock failure. */
export function lockedOr(err: unknown, path: string, dataDir: string): CrawlError {
  const message = (err as Error).message ?? String(err);
  // the binding says "Database is not open"; the reason is a few causes down
  const reasons: string[] = [];
  for (let e: unknown = err; e instanceof Error && reasons.length < 5; e = e.cause) reasons.push(e.message);
  if (/While lock file|\/LOCK\b/.test(reasons.join('\n')))
    return new CrawlError(
      'CS_STORE',
      `${path} is locked by another process: an instance (crawl, run or replay) is running on --data ${dataDir}; stop it first`,
      { cause: err },
    );
  return err instanceof CrawlError ? err : new CrawlError('CS_STORE', message, { cause: err });
}

/** The store `builder` declares, on `db`, as the changelogged store a replay needs. */
export function openChangelogged(builder: StoreBuilder, db: RocksPort, task: TaskPlan): ChangeloggedStore {
  const store = builder.build({
    taskId: { subtopology: task.sub.id, partition: task.partition },
    db,
    dir: join(task.dir, builder.name),
  });
  if (!isChangelogged(store))
    throw new CrawlError('CS_TOPOLOGY', `store ${builder.name} declares a changelog but is not a changelogged store`);
  return store;
}
