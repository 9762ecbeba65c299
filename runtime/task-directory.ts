import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { CrawlError } from '../core/errors.js';
import { fsyncDir } from '../core/files.js';
import { taskIdString, type TaskId } from '../core/ids.js';
import { DEFAULT_ROCKS_MEMORY, openRocks, type RocksPort } from '../state/rocks.js';
import type { MemoryBudget } from '../state/memory-budget.js';
import { RocksClaim } from './process-memory.js';
import { ownedUnder, takeOwnership } from './task-owners.js';

/** The live RocksDB of a task, inside its task directory. */
const LIVE_DIR = 'rocksdb';
/**
 * The file of a task directory whose modification time says when a live owner last followed the
 * task's changelogs (opened, closed, or found in use by a cleanup pass): the age `openLive` judges
 * staleness by. RocksDB's own files are no measure: a replay opening the copy dates them too.
 */
const FOLLOWED = 'followed';
/**
 * The file of a task directory that says its live RocksDB was found corrupt while open (a read met
 * a bad block checksum), with RocksDB's message: its next opening wipes it (`openTaskState`).
 */
const CORRUPT_MARK = 'corrupt';
/** The folder of a data directory that holds one directory per task. */
const STATE_DIR = 'state';
const TASK_NAME = /^(\d+)_(\d+)$/;

/**
 * The task directories of one data directory: `<data>/state/<sub>_<p>`, each holding the task's
 * RocksDB (`rocksdb`) and one directory per store that keeps files beside it (a WARC store).
 * The only place that knows task names, the layout, RocksDB's lock and the recovery of a rebuild
 * cut short; the engines, replay and the operations server ask it.
 */
export class TaskDirectory {
  constructor(
    /** The data directory (`--data`). */
    readonly dataDir: string,
    private readonly options: TaskDirectoryOptions = {},
  ) {}

  /** `<data>/state`: every task's directory (its disk usage is reported as a whole). */
  get root(): string {
    return join(this.dataDir, STATE_DIR);
  }

  /**
   * The directory of task `id` (neither created nor checked). With `staleAfterMs`, its live
   * RocksDB is wiped before it opens when the directory was last used longer ago than that
   * (`TaskDir.openLive`).
   */
  task(id: TaskId, staleAfterMs?: number): TaskDir {
    const name = taskIdString(id);
    return new TaskDir(join(this.root, name), name, this.dataDir, this.options, staleAfterMs);
  }

  /** The partitions of sub-topology `subtopology` with a task directory (state kept from an earlier run); [] when none. */
  localPartitions(subtopology: number): number[] {
    let names: string[];
    try {
      names = readdirSync(this.root);
    } catch {
      return [];
    }
    return names
      .map((name) => TASK_NAME.exec(name))
      .filter((m): m is RegExpExecArray => m !== null && Number(m[1]) === subtopology)
      .map((m) => Number(m[2]));
  }

  /**
   * Removes the task directories nothing here uses, as Kafka Streams' cleanRemovedTasks does with
   * `state.cleanup.delay.ms`: a directory goes when no RocksDB under it has an owner in this
   * process (open, or an opening waiting for it), `keep` does not claim its task (assigned to this
   * instance, perhaps still opening), and nothing in it changed for more than `delayMs` before
   * `now` (`lastUsed`). Directories of tasks this instance no longer runs otherwise stay forever,
   * and a task assigned back after long would trust a checkpoint far behind its changelog.
   * Returns the names of the directories removed. Synchronous: no opening starts half-way through.
   */
  removeUnused(delayMs: number, now: number, keep: (id: TaskId) => boolean): string[] {
    let names: string[];
    try {
      names = readdirSync(this.root);
    } catch {
      return [];
    }
    const removed: string[] = [];
    for (const name of names) {
      const m = TASK_NAME.exec(name);
      if (!m || keep({ subtopology: Number(m[1]), partition: Number(m[2]) })) continue;
      const path = join(this.root, name);
      if (ownedUnder(path)) {
        // in use: dated now, so after a crash its idle time counts from here, not from its last write
        touch(path);
        if (existsSync(join(path, FOLLOWED))) touch(join(path, FOLLOWED));
        continue;
      }
      const used = lastUsed(path);
      if (used === undefined || now - used <= delayMs) continue;
      rmSync(path, { recursive: true, force: true });
      removed.push(name);
    }
    return removed;
  }

  /** Removes every task's local state (a data dir bound to another cluster); idempotent. */
  wipeAll(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

export interface TaskDirectoryOptions {
  /** Called when an opening must wait for an earlier owner in this process to close the RocksDB at `path`. */
  readonly onWait?: (task: TaskDir, path: string) => void;
  /** Called before a live RocksDB unused for `unusedMs` (more than `staleAfterMs`) is wiped. */
  readonly onStale?: (task: TaskDir, unusedMs: number, staleAfterMs: number) => void;
  /** The process's memory plan: every RocksDB opened here is claimed in it while open (`RocksClaim`). */
  readonly memory?: MemoryBudget;
}

/** One task's directory. Owns nothing open: each method opens and hands over, or works on the disk. */
export class TaskDir {
  constructor(
    readonly path: string,
    /** `<sub>_<p>`, as logs and metrics name the task. */
    readonly name: string,
    private readonly dataDir: string,
    private readonly hooks: TaskDirectoryOptions = {},
    /** How long the live RocksDB may go unused and still be trusted; undefined: always. */
    private readonly staleAfterMs?: number,
  ) {}

  /** The live RocksDB's path. */
  get live(): string {
    return join(this.path, LIVE_DIR);
  }

  /** Whether the task has a live RocksDB on disk. */
  hasLive(): boolean {
    return existsSync(this.live);
  }

  /** The directory of store `store`'s own files. */
  storeDir(store: string): string {
    return join(this.path, store);
  }

  /**
   * Opens the live RocksDB (created when missing); the caller owns and closes it. In this process
   * a RocksDB has one owner at a time: while an earlier opening of the same path is not closed yet
   * (a revoked task still committing, an opening cut short still restoring), this waits for its
   * close, so the task's next owner opens what the previous one left. Throws CS_STORE naming the
   * running instance when another process holds it.
   *
   * With `staleAfterMs` (the changelogs' tombstone retention) the opening is a live owner that
   * follows the changelogs: once it owns the copy, a copy no live owner followed for longer (the
   * `followed` file's date; for a directory without one, `lastUsed`) is wiped first. A delete
   * written to its changelog meanwhile may have been compacted away, tombstone and all, and
   * restoring from its checkpoint would bring the key back; the task restores from the start.
   * Such an opening dates `followed` when it opens and when it closes.
   */
  openLive(): Promise<RocksPort> {
    return this.openOwned(this.live, this.staleAfterMs !== undefined, true);
  }

  /** Opens the RocksDB at `path` (the live copy or a rebuild's), one owner at a time as `openLive` does. */
  open(path: string): Promise<RocksPort> {
    return this.openOwned(path, false, false);
  }

  private async openOwned(path: string, follows: boolean, live: boolean): Promise<RocksPort> {
    const release = await takeOwnership(resolve(path), () => this.hooks.onWait?.(this, path));
    try {
      if (follows) this.wipeIfStale();
      let claim: RocksClaim | undefined;
      const onClosed = () => {
        claim?.release();
        touch(this.path);
        if (follows) this.markFollowed();
        release();
      };
      const db = await openRocks(path, DEFAULT_ROCKS_MEMORY, onClosed, live ? (m) => this.markCorrupt(m) : undefined);
      if (this.hooks.memory) claim = new RocksClaim(this.hooks.memory, db);
      if (follows) this.markFollowed();
      return db;
    } catch (err) {
      release();
      throw lockedOr(err, path, this.dataDir);
    }
  }

  private wipeIfStale(): void {
    if (this.staleAfterMs === undefined || !this.hasLive()) return;
    const used = mtimeOf(join(this.path, FOLLOWED)) ?? lastUsed(this.path);
    if (used === undefined) return;
    const unusedMs = Date.now() - used;
    if (unusedMs <= this.staleAfterMs) return;
    this.hooks.onStale?.(this, unusedMs, this.staleAfterMs);
    this.wipeLive();
  }

  /** Dates `followed` now: a live owner follows the changelogs from here. */
  private markFollowed(): void {
    try {
      mkdirSync(this.path, { recursive: true });
      writeFileSync(join(this.path, FOLLOWED), `${new Date().toISOString()}\n`);
    } catch {
      // removed meanwhile (a cleanup, a wipe of every task): nothing left to date
    }
  }

  /**
   * Removes the live RocksDB (a copy ahead of its changelogs, or corrupt) and the mark of a
   * corruption found in it: the task restores from nothing. Close it first.
   */
  wipeLive(): void {
    rmSync(this.live, { recursive: true, force: true });
    rmSync(join(this.path, CORRUPT_MARK), { force: true });
  }

  /**
   * Records that the live RocksDB, open, was found corrupt (RocksDB's `message`): `corruption()`
   * says so until `wipeLive`. Best effort: a directory removed meanwhile has nothing to mark.
   */
  markCorrupt(message: string): void {
    try {
      mkdirSync(this.path, { recursive: true });
      writeFileSync(join(this.path, CORRUPT_MARK), `${message}\n`);
    } catch {
      // removed meanwhile: nothing left to wipe
    }
  }

  /** RocksDB's message when the live RocksDB was found corrupt while open (`markCorrupt`), else undefined. */
  corruption(): string | undefined {
    try {
      return readFileSync(join(this.path, CORRUPT_MARK), 'utf8').trim();
    } catch {
      return undefined;
    }
  }

  /** Recovers from a rebuild that did not finish (`recoverTaskDir`); one sentence per thing done. */
  recover(): string[] {
    return recoverTaskDir(this.path);
  }

  /** A fresh, empty path for this process's rebuild (`rebuildPath`). */
  rebuildPath(): string {
    return rebuildPath(this.path);
  }

  /** Makes the complete, closed RocksDB at `rebuilt` the live copy (`swapIn`). */
  swapIn(rebuilt: string): void {
    swapIn(this.path, rebuilt);
  }
}

/**
 * When task directory `dir` was last used (epoch ms), or undefined when it is gone: the latest
 * modification time of the directory, its entries and theirs. Its RocksDB appends to its WAL at
 * every commit that writes, and its last owner's close dates the directory (`touch`).
 */
export function lastUsed(dir: string): number | undefined {
  let latest = mtimeOf(dir);
  if (latest === undefined) return undefined;
  for (const child of listed(dir)) {
    latest = Math.max(latest, mtimeOf(child) ?? 0);
    for (const file of listed(child)) latest = Math.max(latest, mtimeOf(file) ?? 0);
  }
  return latest;
}

function mtimeOf(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** The paths in directory `path`; [] when it is a file or gone. */
function listed(path: string): string[] {
  try {
    return readdirSync(path).map((name) => join(path, name));
  } catch {
    return [];
  }
}

/** Sets the modification time of `dir` (or a file) to now: when its last owner let go, the start of its idle time. */
function touch(dir: string): void {
  try {
    const now = new Date();
    utimesSync(dir, now, now);
  } catch {
    // removed meanwhile (a wipe): nothing left to date
  }
}

/** `err` as a CS_STORE error naming the running instance when it is RocksDB's lock failure. */
export function lockedOr(err: unknown, path: string, dataDir: string): CrawlError {
  const message = (err as Error).message ?? String(err);
  // the binding says "Database is not open"; the reason is a few causes down
  const reasons: string[] = [];
  for (let e: unknown = err; e instanceof Error && reasons.length < 5; e = e.cause) reasons.push(e.message);
  const why = reasons.join('\n');
  if (/hold by current process/.test(why))
    return new CrawlError(
      'CS_STORE',
      `${path} is still held by this process: the task's previous copy has not closed yet`,
      { cause: err },
    );
  if (/While lock file|\/LOCK\b/.test(why))
    return new CrawlError(
      'CS_STORE',
      `${path} is locked by another process: an instance (crawl, run or replay) is running on --data ${dataDir}; stop it first`,
      { cause: err },
    );
  return err instanceof CrawlError ? err : new CrawlError('CS_STORE', message, { cause: err });
}
const REBUILD_PREFIX = 'rocksdb.rebuild-';
const OLD_PREFIX = 'rocksdb.old-';

/** Whether process `pid` exists (EPERM: it exists, owned by someone else). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Brings a task directory back to one live RocksDB after a rebuild that did not finish, and
 * returns what it did (one sentence each). The swap (`swapIn`) is two renames, so a crash leaves
 * one of three states, each recovered here:
 * - before the swap: a `rocksdb.rebuild-<pid>` beside the untouched live copy — removed;
 * - between the renames: no `rocksdb`, a `rocksdb.old-<pid>` (the previous live copy) and a
 *   complete `rocksdb.rebuild-<pid>` — the old copy is renamed back and the rebuild removed (the
 *   rebuild is redone rather than trusted: nothing records that it was complete);
 * - after the renames: a new `rocksdb` and a `rocksdb.old-<pid>` not yet removed — removed.
 * Refuses (CS_STORE) when a `rocksdb.rebuild-<pid>` belongs to a process still running: another
 * rebuild is writing it. `isAlive` is for tests.
 */
export function recoverTaskDir(dir: string, isAlive: (pid: number) => boolean = alive): string[] {
  if (!existsSync(dir)) return [];
  const done: string[] = [];
  const names = readdirSync(dir);
  for (const name of names.filter((n) => n.startsWith(REBUILD_PREFIX))) {
    const pid = Number(name.slice(REBUILD_PREFIX.length));
    if (Number.isInteger(pid) && pid !== process.pid && isAlive(pid))
      throw new CrawlError(
        'CS_STORE',
        `${join(dir, name)} belongs to process ${pid}, which is running: another rebuild is writing it (if none is, remove that directory)`,
      );
    rmSync(join(dir, name), { recursive: true, force: true });
    done.push(`removed ${name}, left by a rebuild that did not finish`);
  }
  const olds = names
    .filter((n) => n.startsWith(OLD_PREFIX))
    .sort((a, b) => statSync(join(dir, b)).mtimeMs - statSync(join(dir, a)).mtimeMs);
  if (olds.length > 0 && !existsSync(join(dir, LIVE_DIR))) {
    const newest = olds.shift()!;
    renameSync(join(dir, newest), join(dir, LIVE_DIR));
    fsyncDir(dir);
    done.push(`restored ${LIVE_DIR} from ${newest}: a rebuild stopped between its two renames`);
  }
  for (const name of olds) {
    rmSync(join(dir, name), { recursive: true, force: true });
    done.push(`removed ${name}, the copy a finished rebuild replaced`);
  }
  return done;
}

/** A fresh, empty path for this process's rebuild of the task in `dir` (removed first if present). */
export function rebuildPath(dir: string): string {
  const path = join(dir, `${REBUILD_PREFIX}${process.pid}`);
  rmSync(path, { recursive: true, force: true });
  return path;
}

/**
 * Makes the complete, closed RocksDB at `rebuilt` the task's live copy: renames the live copy
 * (when there is one) to `rocksdb.old-<pid>`, `rebuilt` to `rocksdb`, then removes the old copy.
 * Each rename is atomic; a crash between them is undone by `recoverTaskDir`.
 */
export function swapIn(dir: string, rebuilt: string): void {
  const live = join(dir, LIVE_DIR);
  const old = join(dir, `${OLD_PREFIX}${process.pid}`);
  const hadLive = existsSync(live);
  if (hadLive) renameSync(live, old);
  renameSync(rebuilt, live);
  fsyncDir(dir);
  if (hadLive) rmSync(old, { recursive: true, force: true });
}
