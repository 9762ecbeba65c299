import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { MemoryBudget } from '../../state/memory-budget.js';
import { Metrics } from '../../core/metrics.js';
import { DiskUsage, DISK_USAGE_MAX_REFRESH_MS } from '../../runtime/disk-usage.js';
import type { Engine, EngineHealth } from '../../runtime/engine.js';
import { startOpsServer } from '../../runtime/ops-server.js';
import { TaskDirectory } from '../../runtime/task-directory.js';

/**
 * A data directory whose state directory (`dir`) holds `dirs` tasks, each a live RocksDB of
 * `files` files of 1..files bytes: what the task directories hold, many times over.
 */
function stateDir(dirs: number, files: number): { data: string; dir: string; bytes: number } {
  const data = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-disk-'));
  const directory = new TaskDirectory(data);
  let bytes = 0;
  for (let d = 0; d < dirs; d++) {
    const sub = directory.task({ subtopology: d, partition: 0 }).live;
    fs.mkdirSync(sub, { recursive: true });
    for (let f = 1; f <= files; f++) {
      fs.writeFileSync(path.join(sub, `${f}.sst`), Buffer.alloc(f));
      bytes += f;
    }
  }
  return { data, dir: directory.root, bytes };
}

/** An engine that only answers the ops server's questions. */
function quietEngine(): Engine {
  const health: EngineHealth = { live: true, ready: true, state: 'running', tasks: 0, restoring: 0, progress: 0 };
  return {
    name: 'embedded',
    metrics: new Metrics(),
    memoryPlan: new MemoryBudget(0),
    start: async () => undefined,
    produce: async () => undefined,
    isIdle: () => true,
    done: new Promise(() => undefined),
    health: () => health,
    query: () => ({ kind: 'unavailable', reason: 'no tasks' }),
    taskStatus: () => [],
    stop: async () => undefined,
  };
}

const SYNC_CALLS = ['readdirSync', 'statSync', 'lstatSync', 'opendirSync', 'existsSync', 'readFileSync'] as const;

/** Counts the synchronous file system calls made on paths under `root` until `restore()`. */
function countSyncCalls(root: string): { calls: string[]; restore(): void } {
  const calls: string[] = [];
  const fsMutable = fs as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originals = SYNC_CALLS.map((name) => [name, fsMutable[name]!] as const);
  for (const [name, original] of originals)
    fsMutable[name] = (...args: unknown[]) => {
      if (String(args[0]).startsWith(root)) calls.push(`${name} ${String(args[0])}`);
      return original(...args);
    };
  // the named exports of node:fs that ES modules imported follow the patched functions
  syncBuiltinESMExports();
  return {
    calls,
    restore: () => {
      for (const [name, original] of originals) fsMutable[name] = original;
      syncBuiltinESMExports();
    },
  };
}

test('a scrape never reads the state directory synchronously, and reports its size once measured in the background', async (t) => {
  const { data, dir, bytes } = stateDir(20, 50);
  t.after(() => fs.rmSync(data, { recursive: true, force: true }));
  const ops = await startOpsServer({ engine: quietEngine(), port: 0, host: '127.0.0.1', stateDir: dir });
  t.after(() => ops.close());
  const sync = countSyncCalls(dir);
  t.after(() => sync.restore());

  let figure: number | undefined;
  const deadline = Date.now() + 60_000;
  while (figure !== bytes && Date.now() < deadline) {
    const body = await (await fetch(`http://${ops.address}/metrics`)).text();
    const m = /\ncrawlstream_state_disk_bytes (\d+)/.exec(body);
    figure = m ? Number(m[1]) : undefined;
    await new Promise((r) => setTimeout(r, 20));
  }
  sync.restore();
  assert.equal(figure, bytes, 'the scraped size is the bytes of the files under the directory');
  assert.deepEqual(sync.calls, [], 'synchronous file system calls on the state directory during scrapes');
});

test('the size is measured by one walk at a time that lets the event loop run, and not again before it is due', async (t) => {
  const { data, dir, bytes } = stateDir(40, 100);
  t.after(() => fs.rmSync(data, { recursive: true, force: true }));
  let now = 0;
  const usage = new DiskUsage(dir, () => now);
  assert.equal(usage.bytes(), undefined, 'no figure before the first walk ends');
  assert.equal(usage.measuring, true);
  // the caller got its answer at once; the walk goes on between turns of the event loop
  let turns = 0;
  while (usage.measuring) {
    assert.equal(usage.bytes(), undefined, 'no figure until the walk has ended');
    await new Promise((r) => setImmediate(r));
    turns++;
  }
  assert.ok(turns > 10, `the walk of 4,000 files took ${turns} turns of the event loop`);
  assert.equal(usage.bytes(), bytes);
  assert.equal(usage.measuring, false, 'not due again at once');

  fs.writeFileSync(path.join(dir, 'more'), Buffer.alloc(1_000));
  now += DISK_USAGE_MAX_REFRESH_MS;
  assert.equal(usage.bytes(), bytes, 'the last figure, while the due walk runs');
  assert.equal(usage.measuring, true);
  assert.equal(await usage.refresh(), bytes + 1_000);
});

test('a state directory that does not exist yet measures 0 bytes', async () => {
  const usage = new DiskUsage(path.join(os.tmpdir(), `crawlstream-none-${process.pid}-${Date.now()}`));
  assert.equal(await usage.refresh(), 0);
  assert.equal(usage.bytes(), 0);
});
