import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';

/** Mounts a tmpfs of `size` (e.g. '20m') at `dir`, made if missing. Root only (TOOLING.md); unmount it after. */
export function mountSmallDisk(dir: string, size: string): void {
  mkdirSync(dir, { recursive: true });
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, `mount failed: ${r.stderr}`);
}

export function unmount(dir: string): void {
  spawnSync('umount', [dir]);
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
