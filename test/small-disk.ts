import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Mounts a tmpfs of `size` (e.g. '20m') at `dir`, made if missing. Root only (TOOLING.md); unmount it after. */
export function mountSmallDisk(dir: string, size: string): void {
  mkdirSync(dir, { recursive: true });
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, `mount failed: ${r.stderr}`);
}

export function unmount(dir: string): void {
  spawnSync('umount', [dir]);
}

/**
 * A new temp dir named from `prefix` with a tmpfs of `size` mounted on it; after the test,
 * `release` runs (close what is open there), then it is unmounted and removed.
 */
export function tempSmallDisk(
  t: { after(fn: () => Promise<void>): void },
  prefix: string,
  size: string,
  release: () => Promise<unknown> | undefined = () => undefined,
): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  mountSmallDisk(dir, size);
  t.after(async () => {
    await release()?.catch(() => undefined);
    unmount(dir);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Writes `file` until the filesystem refuses a single byte more (ENOSPC). */
export function fill(file: string): void {
  const fd = openSync(file, 'w');
  let at = 0;
  try {
    for (const chunk of [1 << 20, 4096, 1]) {
      const buf = Buffer.alloc(chunk, 0x61);
      for (;;) {
        try {
          at += writeSync(fd, buf, 0, chunk, at);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}
