import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isCrawlError } from '../../core/errors.js';
import { openRocks } from '../../state/rocks.js';
import { fill, mountSmallDisk, unmount } from '../small-disk.js';

test(
  'a RocksDB on a full disk fails to open and to write as CS_DISK_FULL, and opens with its data once space returns',
  { timeout: 60_000, skip: process.getuid?.() === 0 ? false : 'mounting a small filesystem needs root' },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'crawlstream-rocks-full-'));
    const disk = join(dir, 'disk');
    mkdirSync(disk);
    mountSmallDisk(disk, '4m');
    t.after(() => {
      unmount(disk);
      rmSync(dir, { recursive: true, force: true });
    });
    const path = join(disk, 'db');
    const filler = join(disk, 'filler');
    const key = Buffer.from('k');
    let db = await openRocks(path);
    db.write([{ key, value: Buffer.from('v') }], { sync: true });
    fill(filler);
    assert.throws(
      () => db.write([{ key: Buffer.from('big'), value: Buffer.alloc(64 * 1024) }], { sync: true }),
      (err) => isCrawlError(err) && err.code === 'CS_DISK_FULL',
    );
    await db.close().catch(() => undefined);

    await assert.rejects(openRocks(path), (err) => {
      assert.ok(isCrawlError(err), String(err));
      assert.equal(err.code, 'CS_DISK_FULL', err.message);
      assert.match(err.message, new RegExp(`cannot open RocksDB at ${path}: disk full`));
      return true;
    });

    unlinkSync(filler);
    db = await openRocks(path);
    try {
      assert.equal(db.get(key)?.toString(), 'v');
    } finally {
      await db.close();
    }
  },
);
