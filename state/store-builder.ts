import type { TaskId } from '../runtime/processor.js';
import type { Codec, KeyValueStore, StateStore } from './state-store.js';
import type { RocksPort } from './rocks.js';
import { RocksKeyValueStore } from './rocks-store.js';

/** What the runtime hands a store when it opens it for one task. */
export interface StoreContext {
  readonly taskId: TaskId;
  /** The task's own RocksDB; shared by the task's stores, each under its own key prefix. */
  readonly db: RocksPort;
  /** A directory private to this task and store, for stores that keep files (WARC). */
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
  build(context: StoreContext): S;
}

/** A store whose writes the runtime commits through a changelog. */
export interface ChangeloggedStore extends StateStore {
  /** Writes since the last commit, last write per key; `value: null` is a delete. */
  pendingChanges(): { key: Buffer; value: Buffer | null }[];
  /** How many keys have pending writes; cheap. */
  pendingCount(): number;
  /** Makes the pending writes durable locally, recording that the changelog is applied up to `nextOffset`. */
  applyCommitted(nextOffset: number): void;
  /** Drops the pending writes (the commit failed or the task is abandoned). */
  discardPending(): void;
  /** The changelog offset local state reflects (0 for a fresh store). */
  checkpoint(): number;
  /** Applies changelog records (restore), then records `nextOffset` as the checkpoint. */
  restore(records: { key: Buffer; value: Buffer | null }[], nextOffset: number): void;
  /** Every committed entry, raw; for verifying a store against a replay of its changelog. */
  entries(): IterableIterator<[Buffer, Buffer]>;
  /** The committed raw value of a raw key (pending writes ignored); for changelog compaction. */
  committedRaw(key: Buffer): Buffer | undefined;
}

export function isChangelogged(store: StateStore): store is ChangeloggedStore {
  return typeof (store as Partial<ChangeloggedStore>).pendingChanges === 'function';
}

export function keyValueStore<K, V>(name: string, keyCodec: Codec<K>, valueCodec: Codec<V>): StoreBuilder<KeyValueStore<K, V>> {
  return {
    name,
    changelog: true,
    build: (context) => new RocksKeyValueStore(name, context.db, keyCodec, valueCodec),
  };
}
