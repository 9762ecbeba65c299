import fs from 'node:fs';
import path from 'node:path';
import { openRocks } from '../../state/rocks.js';

/**
 * Damage done to a closed RocksDB's files, as a torn copy, a bad disk or a crash of the machine
 * leaves them; each is what RocksDB 12 (@nxtedition/rocksdb) reports as corruption.
 */

/** The RocksDB's file whose name matches `pattern`; fails when there is none. */
function fileOf(dir: string, pattern: RegExp): string {
  const name = fs.readdirSync(dir).find((n) => pattern.test(n));
  if (name === undefined) throw new Error(`no file matching ${pattern} in ${dir}: ${fs.readdirSync(dir).join(' ')}`);
  return path.join(dir, name);
}

/** Overwrites `length` bytes of `file` from `at` with garbage. */
function garble(file: string, at: number, length: number): void {
  const fd = fs.openSync(file, 'r+');
  try {
    fs.writeSync(fd, Buffer.alloc(length, 0xab), 0, length, at);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Opens and closes the RocksDB at `dir`: the opening writes what its WAL holds into an SST file,
 * so the corruptions of SST files below have one to damage.
 */
export async function flushToSst(dir: string): Promise<void> {
  await (await openRocks(dir)).close();
  fileOf(dir, /\.sst$/);
}

/** Corruptions found when the RocksDB opens, by name. */
export const corruptionsAtOpen: Record<string, (dir: string) => void> = {
  'a truncated MANIFEST': (dir) => fs.truncateSync(fileOf(dir, /^MANIFEST-\d+$/), 10),
  'a CURRENT naming a MANIFEST that is not there': (dir) =>
    fs.writeFileSync(path.join(dir, 'CURRENT'), 'MANIFEST-999999\n'),
  'an SST file whose footer is garbage': (dir) => {
    const sst = fileOf(dir, /\.sst$/);
    garble(sst, fs.statSync(sst).size - 30, 30);
  },
};

/** Garbles a data block in the middle of the RocksDB's first SST file: only a read of it finds the bad checksum. */
export function garbleSstMiddle(dir: string): void {
  const sst = fileOf(dir, /\.sst$/);
  garble(sst, Math.floor(fs.statSync(sst).size / 3), 4096);
}
