import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isCrawlError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { processMemory, RocksClaim } from '../../runtime/process-memory.js';
import { Topology } from '../../runtime/topology.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { MemoryBudget } from '../../state/memory-budget.js';
import type { RocksMemory } from '../../state/rocks.js';

const MiB = 2 ** 20;
const rocksdb = (plan: MemoryBudget) => plan.report().claims.find((c) => c.what === 'rocksdb')?.bytes ?? 0;

test('every RocksDB a task directory opens is claimed in the plan while open, what it holds in whole MiB, and given back when it closes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-process-memory-'));
  const plan = new MemoryBudget(0);
  try {
    const tasks = new TaskDirectory(dir, { memory: plan });
    const a = await tasks.task({ subtopology: 0, partition: 0 }).openLive();
    const empty = rocksdb(plan);
    assert.ok(empty > 0 && empty % MiB === 0, `an open database claims ${empty}`);
    const b = await tasks.task({ subtopology: 0, partition: 1 }).openLive();
    assert.equal(rocksdb(plan), 2 * empty, 'two databases, two claims');
    await b.close();
    assert.equal(rocksdb(plan), empty);
    await a.close();
    assert.equal(plan.report().claimed, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a RocksDB's claim follows what it holds (memtables, block cache, index and filter blocks), keeps its last figure while the database closes, and stops following once released", async () => {
  let held: RocksMemory = { memtables: 3 * MiB, blockCache: 1, tableReaders: 0 };
  let closing = false;
  const db = {
    memory: (): RocksMemory => {
      if (closing) throw new Error('Database is not open');
      return held;
    },
  };
  const plan = new MemoryBudget(0);
  const claim = new RocksClaim(plan, db, 20);
  assert.equal(rocksdb(plan), 4 * MiB, '3 MiB and a byte, rounded up');
  held = { memtables: 3 * MiB, blockCache: 8 * MiB, tableReaders: 5 * MiB + 7 };
  claim.refresh();
  assert.equal(rocksdb(plan), 17 * MiB, 'index and filter blocks outside the cache count too');
  held = { memtables: MiB, blockCache: 0, tableReaders: 0 };
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(rocksdb(plan), MiB, 'followed on its own, every refresh interval');
  closing = true;
  claim.refresh();
  assert.equal(rocksdb(plan), MiB, 'a closing database keeps its last figure');
  claim.release();
  claim.release();
  assert.equal(plan.report().claimed, 0);
  closing = false;
  held = { memtables: 9 * MiB, blockCache: 0, tableReaders: 0 };
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(plan.report().claimed, 0, 'a released claim follows nothing');
});

test("a topology's memory budget is whole bytes, 0 (none) by default; the process's plan takes its total", () => {
  assert.equal(new Topology('app').memoryBudgetBytes, 0);
  assert.equal(processMemory(new Topology('app', { memoryBudgetBytes: 64 * MiB }), silentLogger).total, 64 * MiB);
  for (const bad of [-1, 1.5, Number.NaN])
    assert.throws(
      () => new Topology('app', { memoryBudgetBytes: bad }),
      (err: unknown) =>
        isCrawlError(err) && err.code === 'CS_TOPOLOGY' && /memory budget must be whole bytes/.test(err.message),
    );
});
