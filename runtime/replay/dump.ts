import { CrawlError } from '../../core/errors.js';
import type { Topology } from '../topology.js';
import { closeStores } from '../task-state.js';
import { planStores, planTasks, replayStores, type PartitionChoice } from './store-plan.js';

/**
 * Writes every committed entry of store `store`'s local copies in `dataDir` through `out`: per
 * task, a line `# store NAME partition P`, then one line `hexkey<TAB>hexvalue` per entry in key
 * order, then `checkpoint N`. Pending writes do not exist on a stopped instance, so this is the
 * whole copy; two dumps are equal exactly when the copies are. Writes nothing (the RocksDB is
 * opened, so a running instance makes it fail with CS_STORE). Returns the copies dumped.
 */
export async function dumpStore(
  topology: Topology,
  dataDir: string,
  store: string,
  partitions: PartitionChoice,
  out: (line: string) => void,
): Promise<number> {
  const tasks = planTasks(dataDir, planStores(topology, [store]), partitions);
  let dumped = 0;
  for (const task of tasks) {
    if (!task.dir.hasLive()) {
      if (typeof partitions === 'object')
        throw new CrawlError(
          'CS_STORE',
          `no local copy of ${store} partition ${task.partition}: ${task.dir.live} does not exist`,
        );
      continue;
    }
    const db = await task.dir.openLive();
    try {
      const state = replayStores(topology, task, db, task.chosen);
      const copy = state.changelogged[0]!.store;
      out(`# store ${store} partition ${task.partition}`);
      for (const [k, v] of copy.entries()) out(`${k.toString('hex')}\t${v.toString('hex')}`);
      out(`checkpoint ${copy.checkpoint()}`);
      closeStores(state);
      dumped++;
    } finally {
      await db.close();
    }
  }
  return dumped;
}
