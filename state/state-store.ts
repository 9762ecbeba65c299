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

/** Turns keys or values into bytes and back. Key codecs must preserve the order callers rely on. */
export interface Codec<T> {
  encode(value: T): Buffer;
  decode(bytes: Buffer): T;
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
  /** Entries with gte <= key < lt in key order (encoded-byte order), uncommitted writes included. */
  range(gte: K, lt: K): IterableIterator<[K, V]>;
  /** Number of committed + pending entries is not tracked; use your own counters. */
}

export const stringCodec: Codec<string> = {
  encode: (v) => Buffer.from(v, 'utf8'),
  decode: (b) => b.toString('utf8'),
};

export const bufferCodec: Codec<Buffer> = {
  encode: (v) => v,
  decode: (b) => b,
};
