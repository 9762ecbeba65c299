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
 * `sync` it returns only once the batch is in the fsynced WAL. A call fails with a CrawlError:
 * CS_DISK_FULL, CS_STORE_CORRUPT when RocksDB finds its files corrupt (a bad block checksum met
 * by a read), CS_STORE otherwise.
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
  /** A RocksDB property such as `rocksdb.cur-size-all-mem-tables`; undefined when unknown. */
  property(name: string): string | undefined;
  /** What RocksDB holds in memory now, by its own accounting (bytes). */
  memory(): RocksMemory;
  close(): Promise<void>;
}

/** RocksDB's own memory figures for one database, in bytes. */
export interface RocksMemory {
  /** Active and immutable memtables not yet flushed, and flushed ones still pinned. */
  readonly memtables: number;
  /** Blocks in the block cache (entries in use included). */
  readonly blockCache: number;
  /** Index and filter blocks of open SST files held outside the block cache. */
  readonly tableReaders: number;
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

/**
 * What one RocksDB may hold in memory. Writes collect in memtables of a quarter of
 * `memtableBytes`; two full ones are flushed together, so a database holds up to about 0.75 ×
 * `memtableBytes` of them and 1.5 × at most (while a flush is behind). RocksDB's defaults (64 MiB
 * memtables, two of them) let each of a process's databases grow for hours toward 128 MiB at a
 * slow write rate, which a continuous crawl cannot tell from a leak. The block cache holds
 * uncompressed SST blocks, `blockCacheBytes` at most.
 */
export interface RocksMemoryBounds {
  readonly memtableBytes: number;
  readonly blockCacheBytes: number;
}

/** The bounds of a task's database and of the embedded log's unless told otherwise. */
export const DEFAULT_ROCKS_MEMORY: RocksMemoryBounds = { memtableBytes: 16 * 2 ** 20, blockCacheBytes: 8 * 2 ** 20 };

/** RocksDB's words for a full disk or quota. */
const DISK_FULL = /no space|ENOSPC|quota/i;

/**
 * RocksDB's words for files it cannot trust: its "Corruption:" status (a torn or garbled MANIFEST,
 * CURRENT without its newline, an SST's bad magic number, size or block checksum, an SST the
 * MANIFEST names but the disk lacks), and a CURRENT naming a MANIFEST that is not there (an
 * "IO error" to RocksDB, but only a torn copy of the directory leaves one).
 */
const CORRUPT = /\bCorruption:|While opening a file for sequentially reading: \S*\/MANIFEST-\d+: No such file/;

/** The messages of `err` and of its causes (the binding says "Database is not open"; the reason is a few causes down). */
function reasons(err: unknown): string {
  const found: string[] = [];
  for (let e: unknown = err; e instanceof Error && found.length < 6; e = e.cause) found.push(e.message);
  return found.length > 0 ? found.join('\n') : String(err);
}

/** The innermost message of `err`: RocksDB's own status. */
function rootMessage(err: unknown): string {
  let root = err as Error;
  for (let i = 0; i < 5 && root.cause instanceof Error; i++) root = root.cause;
  return root?.message ?? String(err);
}

/** Whether `err` (its message or a cause's) is RocksDB saying its files are corrupt (CORRUPT). */
export function isRocksCorruption(err: unknown): boolean {
  return CORRUPT.test(reasons(err));
}

/**
 * Opens (creating when needed) the RocksDB at `path`. Throws CS_DISK_FULL when its disk is full
 * (opening writes a new MANIFEST and WAL, so a full disk refuses even an existing database),
 * CS_STORE_CORRUPT when RocksDB finds its files corrupt (`isRocksCorruption`; the message names
 * `path` and says RocksDB's status), CS_STORE for any other failure (its lock held, permissions).
 * `onClosed` runs once the database's `close` has settled, resolved or not: its owner hands the
 * path to whoever waits for it. `onCorrupt` runs, once, when a read or write of the open database
 * fails with corruption (an SST block whose checksum does not match), with RocksDB's message; the
 * failing call still throws CS_STORE_CORRUPT.
 */
export async function openRocks(
  path: string,
  memory: RocksMemoryBounds = DEFAULT_ROCKS_MEMORY,
  onClosed?: () => void,
  onCorrupt?: (message: string) => void,
): Promise<RocksPort> {
  for (const [name, v] of Object.entries(memory))
    if (!Number.isSafeInteger(v) || v < 2 ** 20 || v >= 2 ** 32)
      throw new CrawlError('CS_INTERNAL', `RocksDB ${name} must be whole bytes from 1 MiB to 4 GiB, got ${v}`);
  mkdirSync(path, { recursive: true });
  // the binding sizes memtables from a budget only with a compaction preset; 'universal' is the
  // one that leaves SST compression as set above ('level' would ZSTD-compress levels 2 and up)
  const db = new RocksLevel(path, {
    ...OPTIONS,
    compaction: 'universal',
    memtableMemoryBudget: memory.memtableBytes,
    cacheSize: memory.blockCacheBytes,
  }) as Binding;
  try {
    await db.open();
  } catch (err) {
    const root = rootMessage(err);
    if (DISK_FULL.test(root))
      throw new CrawlError('CS_DISK_FULL', `cannot open RocksDB at ${path}: disk full: ${root}`, { cause: err });
    if (isRocksCorruption(err))
      throw new CrawlError('CS_STORE_CORRUPT', `cannot open RocksDB at ${path}: its files are corrupt: ${root}`, {
        cause: err,
      });
    throw new CrawlError('CS_STORE', `cannot open RocksDB at ${path}: ${(err as Error).message}`, { cause: err });
  }
  return new NxteditionRocks(path, db, onClosed, onCorrupt);
}

function storeError(op: string, path: string, err: unknown): CrawlError {
  const message = (err as Error).message ?? String(err);
  const code = DISK_FULL.test(message) ? 'CS_DISK_FULL' : isRocksCorruption(err) ? 'CS_STORE_CORRUPT' : 'CS_STORE';
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
    private readonly onClosed: (() => void) | undefined,
    private onCorrupt: ((message: string) => void) | undefined,
  ) {
    this.batch = db.batch() as unknown as RawBatch;
  }

  /** `err`, thrown by `op`, as a CrawlError; the first corruption found is told to `onCorrupt`. */
  private failed(op: string, err: unknown): CrawlError {
    if (err instanceof CrawlError) return err;
    const error = storeError(op, this.path, err);
    if (error.code === 'CS_STORE_CORRUPT' && this.onCorrupt) {
      const told = this.onCorrupt;
      this.onCorrupt = undefined;
      told(error.message);
    }
    return error;
  }

  get(key: Buffer): Buffer | undefined {
    try {
      return this.db._getManySync([key], RAW)[0];
    } catch (err) {
      throw this.failed('get', err);
    }
  }

  getMany(keys: Buffer[]): (Buffer | undefined)[] {
    if (keys.length === 0) return [];
    try {
      return this.db._getManySync(keys, RAW);
    } catch (err) {
      throw this.failed('get', err);
    }
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
      throw this.failed('write', err);
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
    const size = Math.max(1, Math.min(1000, options.batch ?? 1000));
    try {
      for (;;) {
        let next: { rows: Buffer[]; finished: boolean };
        try {
          next = it._nextvSync(size, {});
        } catch (err) {
          throw this.failed('read', err);
        }
        const { rows, finished } = next;
        for (let i = 0; i < rows.length; i += 2) yield [rows[i]!, rows[i + 1]!];
        if (finished) return;
      }
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

  memory(): RocksMemory {
    const n = (name: string) => Number(this.property(name) ?? 0) || 0;
    return {
      memtables: n('rocksdb.size-all-mem-tables'),
      blockCache: n('rocksdb.block-cache-usage'),
      tableReaders: n('rocksdb.estimate-table-readers-mem'),
    };
  }

  async close(): Promise<void> {
    try {
      await this.db.close();
    } finally {
      this.onClosed?.();
    }
  }
}
