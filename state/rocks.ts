import { mkdirSync } from 'node:fs';
import { RocksLevel } from '@nxtedition/rocksdb';
import { CrawlError } from '../runtime/errors.js';

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
  iterate(gte: Buffer, lt: Buffer, options?: { reverse?: boolean; limit?: number }): IterableIterator<[Buffer, Buffer]>;
  deleteRange(gte: Buffer, lt: Buffer): void;
  /** A RocksDB property such as `rocksdb.cur-size-all-mem-tables`; undefined when unknown. */
  property(name: string): string | undefined;
  close(): Promise<void>;
}

type Binding = RocksLevel & {
  detachResource(resource: unknown): void;
  _getManySync(keys: Buffer[], options: object): (Buffer | undefined)[];
  _iterator(options: object): { _nextvSync(size: number, options: object): { rows: Buffer[]; finished: boolean }; _closeSync(): void };
};

const RAW = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;

export async function openRocks(path: string): Promise<RocksPort> {
  mkdirSync(path, { recursive: true });
  const db = new RocksLevel(path, RAW) as Binding;
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

class NxteditionRocks implements RocksPort {
  constructor(readonly path: string, private readonly db: Binding) {}

  get(key: Buffer): Buffer | undefined {
    return this.db._getManySync([key], RAW)[0];
  }

  getMany(keys: Buffer[]): (Buffer | undefined)[] {
    return keys.length === 0 ? [] : this.db._getManySync(keys, RAW);
  }

  write(batch: readonly RocksWrite[], options: { sync?: boolean } = {}): void {
    if (batch.length === 0) return;
    const b = this.db.batch() as unknown as { put(k: Buffer, v: Buffer): void; del(k: Buffer): void; _writeSync(o: object): void; _closeSync?(): void };
    try {
      for (const w of batch) {
        if (w.value === null) b.del(w.key);
        else b.put(w.key, w.value);
      }
      b._writeSync({ sync: options.sync === true });
    } catch (err) {
      throw storeError('write', this.path, err);
    } finally {
      b._closeSync?.();
      // the binding's private close skips abstract-level's bookkeeping: without this every batch
      // (and the buffers it references) stays reachable from the db for ever
      this.db.detachResource(b);
    }
  }

  *iterate(gte: Buffer, lt: Buffer, options: { reverse?: boolean; limit?: number } = {}): IterableIterator<[Buffer, Buffer]> {
    const it = this.db._iterator({ ...RAW, gte, lt, reverse: options.reverse === true, limit: options.limit ?? -1, keys: true, values: true });
    try {
      for (;;) {
        const { rows, finished } = it._nextvSync(1000, {});
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
