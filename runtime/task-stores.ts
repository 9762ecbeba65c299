import { join } from 'node:path';
import type { TaskId } from '../core/ids.js';
import { openRocks, type RocksPort } from '../state/rocks.js';
import type { ChangeloggedStore, StateStore } from '../state/state-store.js';
import { isChangelogged } from '../state/store-builder.js';
import type { Subtopology, Topology } from './topology.js';

/** A task's local state, open: its RocksDB, its stores by name, and the changelogged ones with their topics. */
export interface TaskStores {
  readonly db: RocksPort;
  readonly stores: Map<string, StateStore>;
  /** Each changelogged store with its changelog topic (logical name), in the sub-topology's order. */
  readonly changelogged: { store: ChangeloggedStore; topic: string }[];
}

/**
 * Opens a task's RocksDB (`taskDir/rocksdb`) and builds the stores of `sub` on it, each with its
 * own directory `taskDir/<store>`; both engines and nothing else open task state. The stores are
 * as the disk left them: restoring them from their changelogs is the engine's part. The caller
 * owns the result and closes it with `closeTaskStores`; if a store fails to build, what was
 * opened is closed before the error propagates.
 */
export async function openTaskStores(
  id: TaskId,
  sub: Subtopology,
  topology: Topology,
  taskDir: string,
): Promise<TaskStores> {
  const db = await openRocks(join(taskDir, 'rocksdb'));
  const stores = new Map<string, StateStore>();
  const changelogged: { store: ChangeloggedStore; topic: string }[] = [];
  try {
    for (const builder of sub.stores) {
      const store = builder.build({ taskId: id, db, dir: join(taskDir, builder.name) });
      stores.set(builder.name, store);
      if (builder.changelog && isChangelogged(store))
        changelogged.push({ store, topic: topology.changelogTopic(builder.name) });
    }
  } catch (err) {
    await closeTaskStores({ db, stores, changelogged });
    throw err;
  }
  return { db, stores, changelogged };
}

/** Closes the stores, then their RocksDB (whose close failure, with nothing left to lose, is ignored). */
export async function closeTaskStores(state: TaskStores): Promise<void> {
  for (const store of state.stores.values()) store.close();
  await state.db.close().catch(() => undefined);
}
