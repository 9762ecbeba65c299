import { closeSync, existsSync, fsyncSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CrawlError } from '../../core/errors.js';

/** The live RocksDB of a task, inside its task directory. */
export const LIVE_DIR = 'rocksdb';
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
    syncDir(dir);
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
  syncDir(dir);
  if (hadLive) rmSync(old, { recursive: true, force: true });
}

/** Makes the renames in `dir` durable. */
function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
