/**
 * A store owned by the runtime and handed to processors through `getStateStore`. The runtime
 * calls `flush` before every commit (after it returns, everything the store promised is durable)
 * and `close` once at shutdown.
 */
export interface StateStore {
  readonly name: string;
  flush(): void;
  close(): void;
}

/**
 * A sorted key-value store on RocksDB whose every write is also recorded in its changelog topic.
 * Reads see this task's own uncommitted writes. Writes become durable at the task's next commit,
 * together with its outputs and input positions; after a crash the store equals its changelog.
 */
export interface KeyValueStore<K, V> extends StateStore {
  get(key: K): V | undefined;
  /**
   * The values of `keys`, in order, as `get` would return them one by one (this task's
   * uncommitted writes included), but looked up in one batched read of the committed state.
   */
  getMany(keys: readonly K[]): (V | undefined)[];
  put(key: K, value: V): void;
  delete(key: K): void;
  /**
   * Entries with gte <= key < lt in key order (encoded-byte order), uncommitted writes included.
   * `limit` (optional) is a hint: the committed state is read in batches of at most that many.
   */
  range(gte: K, lt: K, limit?: number): IterableIterator<[K, V]>;
  /** Number of committed + pending entries is not tracked; use your own counters. */
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
  /** The committed raw values of raw keys, in order (pending writes ignored); for changelog compaction. */
  committedRawMany(keys: readonly Buffer[]): (Buffer | undefined)[];
}
