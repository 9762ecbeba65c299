import { closeSync, fsyncSync, openSync, writevSync } from 'node:fs';

/** Makes new entries and renames in `dir` durable. */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Whether a failed file system call met a full disk or quota (ENOSPC, EDQUOT). */
export function isDiskFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * Writes `buffers` one after another from `position`, going on after a short write (a disk filling
 * up writes part, and the next call then fails with ENOSPC). Empty buffers, and none, write nothing.
 */
export function writeAll(fd: number, buffers: readonly Buffer[], position: number): void {
  let i = 0;
  let within = 0;
  let at = position;
  for (;;) {
    while (i < buffers.length && buffers[i]!.length === within) {
      i++;
      within = 0;
    }
    if (i === buffers.length) return;
    // writev takes at most IOV_MAX (1,024) buffers a call
    const batch = buffers.slice(i, i + 1024) as Buffer[];
    if (within > 0) batch[0] = batch[0]!.subarray(within);
    let n = writevSync(fd, batch, at);
    if (n === 0) throw new Error(`no byte written at ${at}`);
    at += n;
    while (n > 0) {
      const rest = buffers[i]!.length - within;
      if (n < rest) {
        within += n;
        n = 0;
      } else {
        n -= rest;
        i++;
        within = 0;
      }
    }
  }
}
