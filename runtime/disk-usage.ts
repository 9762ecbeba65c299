import { opendir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** The shortest and longest time between two walks of a directory. */
export const DISK_USAGE_MIN_REFRESH_MS = 1_000;
export const DISK_USAGE_MAX_REFRESH_MS = 60_000;
/** A walk is due again after this many times its own duration (within the bounds above): walking takes at most 2% of the time. */
const REFRESH_PER_WALK = 50;

/**
 * The size of a directory tree, measured in the background and read without waiting. `bytes()`
 * returns the last figure at once (undefined until the first walk has ended) and, when that
 * figure is due for a refresh and no walk is under way, starts one: at most one walk at a time,
 * and the next one only after 50 times the last one's duration, at least 1 s and at most 60 s
 * after it, however often it is asked. A small state directory is thus seconds old at most, a
 * large one costs little. A walk uses only asynchronous file system calls, so the event loop
 * (commits, fetches, the scrape itself) runs between directory entries: a RocksDB of many SST
 * files or a WARC directory of thousands of files costs the scrape nothing.
 */
export class DiskUsage {
  private figure: number | undefined;
  /** When the next walk is due. */
  private dueAt = -Infinity;
  private walking: Promise<void> | undefined;

  constructor(
    readonly dir: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The last measured size in bytes (0 for a directory that does not exist yet); starts a walk when one is due. */
  bytes(): number | undefined {
    if (this.walking === undefined && this.now() >= this.dueAt) void this.refresh();
    return this.figure;
  }

  /** True while a walk is under way. */
  get measuring(): boolean {
    return this.walking !== undefined;
  }

  /** Measures now (or joins the walk under way) and resolves with the figure; for tests and shutdown reports. */
  refresh(): Promise<number> {
    const started = this.now();
    this.walking ??= treeBytes(this.dir)
      .then((total) => {
        this.figure = total;
      })
      // a walk never fails the scrape: the last figure stands until the next one succeeds
      .catch(() => undefined)
      .finally(() => {
        const ended = this.now();
        const wait = (ended - started) * REFRESH_PER_WALK;
        this.dueAt = ended + Math.min(DISK_USAGE_MAX_REFRESH_MS, Math.max(DISK_USAGE_MIN_REFRESH_MS, wait));
        this.walking = undefined;
      });
    return this.walking.then(() => this.figure ?? 0);
  }
}

/** Bytes of the regular files under `dir`, symbolic links not followed; 0 when it does not exist. */
async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  let entries;
  try {
    entries = await opendir(dir);
  } catch {
    return 0;
  }
  try {
    for await (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) total += await treeBytes(path);
      else if (e.isFile()) {
        try {
          total += (await stat(path)).size;
        } catch {
          // deleted between listing and stat (a compaction): not there to count
        }
      }
    }
  } catch {
    // the directory went away while it was read (a task closed and removed): what was seen counts
  }
  return total;
}
