import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openRocks, type RocksPort } from '../../state/rocks.js';

/** Runs `fn` on a fresh RocksDB in a temp dir named after `prefix`; closes and removes it afterwards. */
export async function withDb(prefix: string, fn: (db: RocksPort, dir: string) => Promise<void> | void): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `crawlstream-${prefix}-`));
  const db = await openRocks(path.join(dir, 'db'));
  try {
    await fn(db, dir);
  } finally {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
