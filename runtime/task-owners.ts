import { resolve, sep } from 'node:path';

/**
 * Who owns which RocksDB in this process (Kafka Streams' StateDirectory.lockedTasksToOwner): one
 * owner per path at a time, the next waiting for the previous one's close. RocksDB's own lock
 * keeps other processes out; within one process it only refuses, so a task reopened while its
 * previous opening or closing still holds the database would fail instead of waiting.
 * `TaskDir` takes ownership around every opening; nothing else needs this file.
 */

/**
 * Per RocksDB path opened through a task directory: the promise that settles when its last owner
 * in this process released it. Each new owner chains behind it, so owners take a path in turn (a
 * second open while the first is still closing would fail on RocksDB's lock, in-process).
 */
const owners = new Map<string, Promise<void>>();

/**
 * Waits for `path`'s earlier owners in this process to release it (calling `waiting` first when
 * there is one); resolves with this owner's release, which may be called more than once.
 */
export async function takeOwnership(path: string, waiting: () => void): Promise<() => void> {
  const previous = owners.get(path);
  if (previous) waiting();
  let release!: () => void;
  const mine = new Promise<void>((r) => (release = r));
  const tail = previous ? previous.then(() => mine) : mine;
  // registered before the first await: an owner that comes later in this tick queues behind this one
  owners.set(path, tail);
  await previous;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    release();
    if (owners.get(path) === tail) owners.delete(path);
  };
}

/** Whether a RocksDB under `dir` has an owner (open, or an opening waiting) in this process. */
export function ownedUnder(dir: string): boolean {
  const prefix = resolve(dir) + sep;
  for (const path of owners.keys()) if (path.startsWith(prefix)) return true;
  return false;
}
