import { totalmem } from 'node:os';

/**
 * The memory limit the OS puts on this process (a cgroup's, as libuv reads it for V8's heap
 * limit), in whole bytes; 0 when there is none. A "limit" at or above the machine's memory (an
 * unlimited cgroup reads as 2^63 or 2^64 − 1, depending on the version) is none.
 */
export function cgroupMemoryLimit(constrained = process.constrainedMemory?.() ?? 0, total = totalmem()): number {
  if (!Number.isFinite(constrained) || constrained <= 0 || constrained >= total) return 0;
  return Math.floor(constrained);
}
