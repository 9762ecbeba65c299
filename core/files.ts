import { closeSync, fsyncSync, openSync } from 'node:fs';

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
