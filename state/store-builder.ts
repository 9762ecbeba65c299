import type { TaskId } from '../core/ids.js';
import type { ChangeloggedStore, KeyValueStore, StateStore } from './state-store.js';
import type { Serde } from '../core/serde.js';
import type { RocksPort } from './rocks.js';
import { RocksKeyValueStore } from './rocks-store.js';

/** What the runtime hands a store when it opens it for one task. */
export interface StoreContext {
  readonly taskId: TaskId;
  /** The task's own RocksDB; shared by the task's stores, each under its own key prefix. */
  readonly db: RocksPort;
  /**
   * A directory private to this task and store, for stores that keep files. It is state, like the
   * RocksDB beside it: it goes with the task directory once that is unused (Kafka's
   * `--state-cleanup-delay`), so a store's products belong elsewhere (the WARC store's `--data`/warc).
   */
  readonly dir: string;
}

/**
 * Declares a store once in the topology; the runtime builds one instance per task. Stores with
 * `changelog` are ChangeloggedStores: the runtime captures their writes into
 * `<app>-<store>-changelog` and restores them from it.
 */
export interface StoreBuilder<S extends StateStore = StateStore> {
  readonly name: string;
  readonly changelog: boolean;
  /**
   * False for a store that keeps nothing in the task's RocksDB (its state is files of its own, as
   * the WARC store's); default true. A task's RocksDB found corrupt is wiped and restored from the
   * changelogs only when every store keeping state in it has a changelog (runtime/task-state.ts).
   */
  readonly inRocks?: boolean;
  build(context: StoreContext): S;
}

export function isChangelogged(store: StateStore): store is ChangeloggedStore {
  return typeof (store as Partial<ChangeloggedStore>).pendingChanges === 'function';
}

export function keyValueStore<K, V>(
  name: string,
  keySerde: Serde<K>,
  valueSerde: Serde<V>,
): StoreBuilder<KeyValueStore<K, V>> {
  return {
    name,
    changelog: true,
    build: (context) => new RocksKeyValueStore(name, context.db, keySerde, valueSerde),
  };
}
