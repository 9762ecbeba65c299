import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_ROCKS_MEMORY, openRocks, type RocksMemoryBounds, type RocksPort } from '../../state/rocks.js';

const MiB = 2 ** 20;

async function withBoundedDb(bounds: RocksMemoryBounds | undefined, fn: (db: RocksPort) => void): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-rocks-memory-'));
  const db = await openRocks(path.join(dir, 'db'), bounds);
  try {
    fn(db);
  } finally {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes `mib` MiB in batches of 256 values of 4 KiB; calls `each` after every batch. */
function fill(db: RocksPort, mib: number, each: () => void): void {
  const value = Buffer.alloc(4096, 7);
  for (let batch = 0; batch < mib; batch++) {
    db.write(
      Array.from({ length: 256 }, (_, i) => ({ key: Buffer.from(`k${String(batch).padStart(5, '0')}-${i}`), value })),
    );
    each();
  }
}

test("a database's memtables stay within 1.5 × its memtable budget however much is written, and every write stays readable", async () => {
  // RocksDB's defaults (64 MiB memtables, two of them) would hold all 24 MiB written here
  const bounds = { memtableBytes: 4 * MiB, blockCacheBytes: MiB };
  await withBoundedDb(bounds, (db) => {
    let peak = 0;
    fill(db, 24, () => (peak = Math.max(peak, db.memory().memtables)));
    // a memtable is a quarter of the budget; writes stall at six of them (arena blocks add a little)
    assert.ok(peak <= 1.5 * bounds.memtableBytes + MiB, `memtables peaked at ${(peak / MiB).toFixed(1)} MiB`);
    assert.ok(peak > 0, 'no memtable was measured');
    assert.equal(db.get(Buffer.from('k00000-0'))?.length, 4096);
    assert.equal(db.get(Buffer.from('k00023-255'))?.length, 4096);
    // reading everything back goes through the block cache, which keeps to its bound
    let read = 0;
    for (const [, v] of db.iterate(Buffer.from('k'), Buffer.from('l'))) read += v.length;
    assert.equal(read, 24 * 256 * 4096);
    for (let batch = 0; batch < 24; batch++) db.get(Buffer.from(`k${String(batch).padStart(5, '0')}-100`));
    const m = db.memory();
    assert.ok(m.blockCache > 0 && m.blockCache <= bounds.blockCacheBytes * 1.1, `block cache ${m.blockCache} bytes`);
    assert.ok(m.tableReaders > 0, 'the flushed tables hold index and filter blocks');
  });
});

test('by default a database holds at most 1.5 × 16 MiB of memtables', async () => {
  assert.equal(DEFAULT_ROCKS_MEMORY.memtableBytes, 16 * MiB);
  await withBoundedDb(undefined, (db) => {
    let peak = 0;
    fill(db, 64, () => (peak = Math.max(peak, db.memory().memtables)));
    assert.ok(peak <= 1.5 * 16 * MiB + MiB, `memtables peaked at ${(peak / MiB).toFixed(1)} MiB`);
  });
});

test('memory bounds outside 1 MiB to 4 GiB are refused', async () => {
  for (const bad of [0, 1_000, 2 ** 32, 1.5 * MiB + 0.5])
    await assert.rejects(
      openRocks(path.join(os.tmpdir(), 'never-opened'), { memtableBytes: bad, blockCacheBytes: MiB }),
      {
        code: 'CS_INTERNAL',
      },
    );
});
