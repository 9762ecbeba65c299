import { InvalidOptionError } from '../../core/errors.js';
import type { RocksPort } from '../../state/rocks.js';
import type { StoreBuilder } from '../../state/store-builder.js';
import type { Subtopology, Topology } from '../topology.js';
import { TaskDirectory, type TaskDir } from '../task-directory.js';
import { buildStores, type TaskStores } from '../task-state.js';

/** The stores a replay works on in one sub-topology, and every changelogged store of it. */
export interface SubPlan {
  readonly sub: Subtopology;
  readonly chosen: readonly StoreBuilder[];
  readonly changelogged: readonly StoreBuilder[];
}

/** One task (sub-topology × partition) of a replay, with its directory. */
export interface TaskPlan extends SubPlan {
  readonly partition: number;
  readonly dir: TaskDir;
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

/**
 * The tasks of `plans` a replay visits. Refuses a partition outside a chosen sub-topology's range
 * (before any work is done).
 */
export function planTasks(dataDir: string, plans: readonly SubPlan[], choice: PartitionChoice): TaskPlan[] {
  const tasks: TaskPlan[] = [];
  const directory = new TaskDirectory(dataDir);
  for (const plan of plans) {
    const { sub } = plan;
    if (typeof choice === 'object' && (choice.partition < 0 || choice.partition >= sub.partitions))
      throw new InvalidOptionError(
        `--partition must be 0..${sub.partitions - 1} (the stores' partitions), got ${choice.partition}`,
      );
    const local = choice === 'local' ? directory.localPartitions(sub.id) : undefined;
    for (let p = 0; p < sub.partitions; p++) {
      if (typeof choice === 'object' && p !== choice.partition) continue;
      const dir = directory.task({ subtopology: sub.id, partition: p });
      if (local && !local.includes(p)) continue;
      tasks.push({ ...plan, partition: p, dir });
    }
  }
  return tasks;
}

/**
 * `builders` of the task, built on `db` (its live copy, a rebuild's or a scratch one) through the
 * engines' `buildStores`, each listed with its changelog topic in the order given. The caller
 * closes the stores (`closeStores`) and the RocksDB.
 */
export function replayStores(
  topology: Topology,
  task: TaskPlan,
  db: RocksPort,
  builders: readonly StoreBuilder[],
): TaskStores {
  const home = { db, storeDir: (name: string) => task.dir.storeDir(name) };
  const id = { subtopology: task.sub.id, partition: task.partition };
  return buildStores(id, builders, home, (name) => topology.changelogTopic(name));
}
