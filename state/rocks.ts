import { mkdirSync } from 'node:fs';
import { RocksLevel } from '@nxtedition/rocksdb';
import { CrawlError } from '../core/errors.js';

/** One write in an atomic batch; `value: null` deletes. */
export interface RocksWrite {
  readonly key: Buffer;
  readonly value: Buffer | null;
}

/**
 * The only door to RocksDB: a small synchronous port, so the binding can be swapped in this one
 * file. All calls are synchronous and run on the caller's thread; `write` is atomic, and with
 * `sync` it returns only once the batch is in the fsynced WAL.
 */
export interface RocksPort {
  readonly path: string;
  get(key: Buffer): Buffer | undefined;
  getMany(keys: Buffer[]): (Buffer | undefined)[];
  write(batch: readonly RocksWrite[], options?: { sync?: boolean }): void;
  /** Entries with gte <= key < lt, in key order (or reverse), at most `limit`. Close by finishing or `return()`. */
  /** `limit`: at most this many entries; `batch`: rows read per native call (default 1000). */
  iterate(
    gte: Buffer,
    lt: Buffer,
    options?: { reverse?: boolean; limit?: number; batch?: number },
  ): IterableIterator<[Buffer, Buffer]>;
  deleteRange(gte: Buffer, lt: Buffer): void;
  /** A RocksDB property such as `rocksdb.cur-size-all-mem-tables`; undefined when unknown. */
  property(name: string): string | undefined;
  close(): Promise<void>;
}

type Binding = RocksLevel & {
  detachResource(resource: unknown): void;
  _getManySync(keys: Buffer[], options: object): (Buffer | undefined)[];
  _iterator(options: object): {
    _nextvSync(size: number, options: object): { rows: Buffer[]; finished: boolean };
    _closeSync(): void;
  };
};

const RAW = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;

/**
 * WAL records are not compressed: every write would pay a ZSTD pass (about a tenth of the
 * frontier's admit CPU) to save WAL bytes that live only until the next flush. SST blocks are not
 * compressed either: the binding's ZSTD with dictionaries cost the frontier ~15 % of its admit CPU
 * and ~200 MiB of RSS at 10 M queued URLs, to save 2/3 of a disk footprint (~69 bytes per queued
 * URL uncompressed) that a frontier can better afford (docs/BENCHMARKS-LOG.md).
 */
const OPTIONS = { ...RAW, walCompression: false, compression: false } as const;

export async function openRocks(path: string): Promise<RocksPort> {
  mkdirSync(path, { recursive: true });
  const db = new RocksLevel(path, OPTIONS) as Binding;
  try {
    await db.open();
  } catch (err) {
    throw new CrawlError('CS_STORE', `cannot open RocksDB at ${path}: ${(err as Error).message}`, { cause: err });
  }
  return new NxteditionRocks(path, db);
}

function storeError(op: string, path: string, err: unknown): CrawlError {
  const message = (err as Error).message ?? String(err);
  const code = /no space|ENOSPC/i.test(message) ? 'CS_DISK_FULL' : 'CS_STORE';
  return new CrawlError(code, `RocksDB ${op} failed at ${path}: ${message}`, { cause: err });
}

/** The binding's chained batch, used below abstract-level's checks (the port validates nothing per key). */
interface RawBatch {
  _put(key: Buffer, value: Buffer, options: object): void;
  _del(key: Buffer, options: object): void;
  _writeSync(options: object): void;
  _clear(): void;
}

const NO_OPTIONS = {};

class NxteditionRocks implements RocksPort {
  // one native write batch, cleared after every write: a batch per write costs an allocation and
  // abstract-level's bookkeeping per key
  private readonly batch: RawBatch;

  constructor(
    readonly path: string,
    private readonly db: Binding,
  ) {
    this.batch = db.batch() as unknown as RawBatch;
  }

  get(key: Buffer): Buffer | undefined {
    return this.db._getManySync([key], RAW)[0];
  }

  getMany(keys: Buffer[]): (Buffer | undefined)[] {
    return keys.length === 0 ? [] : this.db._getManySync(keys, RAW);
  }

  write(batch: readonly RocksWrite[], options: { sync?: boolean } = {}): void {
    if (batch.length === 0) return;
    const b = this.batch;
    try {
      for (let i = 0; i < batch.length; i++) {
        const w = batch[i]!;
        if (w.value === null) b._del(w.key, NO_OPTIONS);
        else b._put(w.key, w.value, NO_OPTIONS);
      }
      b._writeSync(options.sync === true ? { sync: true } : NO_OPTIONS);
    } catch (err) {
      throw storeError('write', this.path, err);
    } finally {
      b._clear();
    }
  }

  *iterate(
    gte: Buffer,
    lt: Buffer,
    options: { reverse?: boolean; limit?: number; batch?: number } = {},
  ): IterableIterator<[Buffer, Buffer]> {
    const it = this.db._iterator({
      ...RAW,
      gte,
      lt,
      reverse: options.reverse === true,
      limit: options.limit ?? -1,
      keys: true,
      values: true,
    });
    try {
      for (;;) {
        const { rows, finished } = it._nextvSync(Math.max(1, Math.min(1000, options.batch ?? 1000)), {});
        for (let i = 0; i < rows.length; i += 2) yield [rows[i]!, rows[i + 1]!];
        if (finished) return;
      }
    } finally {
      it._closeSync();
      this.db.detachResource(it);
    }
  }

  deleteRange(gte: Buffer, lt: Buffer): void {
    // keys only, deleted in batches: synchronous and every failure surfaces here
    const it = this.db._iterator({ ...RAW, gte, lt, keys: true, values: false });
    try {
      for (;;) {
        const { rows, finished } = it._nextvSync(1000, {});
        const batch: RocksWrite[] = [];
        for (let i = 0; i < rows.length; i += 2) batch.push({ key: rows[i]!, value: null });
        this.write(batch);
        if (finished) return;
      }
    } catch (err) {
      throw err instanceof CrawlError ? err : storeError('deleteRange', this.path, err);
    } finally {
      it._closeSync();
      this.db.detachResource(it);
    }
  }

  property(name: string): string | undefined {
    try {
      return String((this.db as unknown as { getProperty(n: string): unknown }).getProperty(name));
    } catch {
      return undefined;
    }
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
