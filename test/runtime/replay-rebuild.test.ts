import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { crawlTopology } from '../../topology/crawl-topology.js';
import { parseCrawlArgs } from '../../cli/options.js';
import { dumpStore } from '../../runtime/replay/dump.js';
import { planStores } from '../../runtime/replay/store-plan.js';
import { TaskDirectory, type TaskDir } from '../../runtime/task-directory.js';
import { openRocks } from '../../state/rocks.js';
import { storeKeyRange } from '../../state/rocks-store.js';
import { CLI, crawlArgs, removeDir, startCli, tempDir, writeSeeds } from '../e2e/harness.js';

/**
 * `replay rebuild|verify|dump` on the embedded engine, after a real (short) crawl of the
 * synthetic web: the CLI is run as a child process, the dumps compared byte for byte.
 */

let web: SyntheticWeb;
let dir: string;
let data: string;
const topology = crawlTopology({ ...topologyArgs(), warcDir: 'unused' });
const stores = planStores(topology, []).flatMap((p) => p.changelogged.map((b) => b.name));
const frontierSub = topology.build().find((s) => s.stores.some((b) => b.name === 'frontier-hosts'))!;

/** Partition `p` of the frontier's sub-topology: its task directory in the data dir. */
function frontierTask(p: number): TaskDir {
  return new TaskDirectory(data).task({ subtopology: frontierSub.id, partition: p });
}

function topologyArgs(): { config: ReturnType<typeof parseCrawlArgs>['config']; partitions: number } {
  const c = parseCrawlArgs(['--data', 'unused']);
  return { config: c.config, partitions: c.partitions };
}

function replay(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, 'replay', ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Every changelogged store of every partition, dumped: store name → the dump's lines. */
async function dumpAll(): Promise<Map<string, string>> {
  const dumps = new Map<string, string>();
  for (const store of stores) {
    const lines: string[] = [];
    await dumpStore(topology, data, store, 'local', (l) => lines.push(l));
    dumps.set(store, lines.join('\n'));
  }
  return dumps;
}

function assertSameDumps(actual: Map<string, string>, expected: Map<string, string>, what: string): void {
  for (const [store, dump] of expected) assert.equal(actual.get(store), dump, `${what}: the dump of ${store} differs`);
}

before(async () => {
  web = await SyntheticWeb.start();
  dir = tempDir('replay-rebuild');
  data = join(dir, 'data');
  const { exited } = startCli(crawlArgs(writeSeeds(dir, web.seedUrls()), data, ['--max-pages', '30']));
  const run = await exited;
  assert.equal(run.code, 0, `crawl exited ${run.code}\n${run.stderr}`);
});

after(async () => {
  await web?.close();
  if (dir) removeDir(dir);
});

test('a frontier partition whose state dir is deleted is rebuilt byte-for-byte equal from its changelogs, every store of it', async () => {
  const before = await dumpAll();
  const p = 1;
  const task = frontierTask(p);
  const lost = before.get('frontier-hosts')!.split('\n# store')[p]!;
  assert.ok(
    lost.split('\n').length > 3,
    `frontier-hosts partition ${p} is (nearly) empty; the crawl was too short:\n${lost}`,
  );
  rmSync(task.path, { recursive: true });
  const r = replay(['rebuild', '--store', 'all', '--data', data]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    new RegExp(`rebuilt\\s+frontier-hosts partition ${p}: \\d+ records read up to the end offset \\d+`),
  );
  assert.ok(task.hasLive());
  assertSameDumps(await dumpAll(), before, 'after rebuilding every store');
});

test('rebuilding one store of an intact copy leaves the dumps of every store identical (the others are copied)', async () => {
  const before = await dumpAll();
  const r = replay(['rebuild', '--store', 'frontier-queue', '--data', data]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /rebuilt\s+frontier-queue partition 0/);
  assert.match(r.stdout, /copied\s+frontier-hosts partition 0: \d+ entries and checkpoint \d+ from the live copy/);
  assert.doesNotMatch(r.stdout, /parser-/, 'only the sub-topology holding frontier-queue is touched');
  assertSameDumps(await dumpAll(), before, 'after rebuilding frontier-queue');
});

test('rebuild refuses while the data dir is in use: the embedded log, or one task RocksDB, is locked', async () => {
  const before = await dumpAll();
  for (const path of [join(data, 'log'), frontierTask(2).live]) {
    const db = await openRocks(path);
    try {
      const r = replay(['rebuild', '--store', 'all', '--data', data]);
      assert.equal(r.code, 1, r.stdout);
      assert.match(
        r.stderr,
        /is locked by another process: an instance .* is running on --data .*; stop it first \[CS_STORE\]/,
      );
    } finally {
      await db.close();
    }
  }
  assert.deepEqual(
    readdirSync(frontierTask(2).path).filter((n) => n !== basename(frontierTask(2).live)),
    [],
    'a refused rebuild leaves nothing behind',
  );
  assertSameDumps(await dumpAll(), before, 'after a refused rebuild');
});

test('replay refuses a store that does not exist (naming the valid ones), a partition out of range and options that do not fit, before opening anything', () => {
  const r = replay(['rebuild', '--store', 'frontier-nope', '--data', data]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--store: no changelogged store "frontier-nope"; stores are all, .*frontier-hosts/);
  const q = replay(['rebuild', '--store', 'all', '--partition', '9', '--data', data]);
  assert.equal(q.code, 2);
  assert.match(q.stderr, /--partition must be 0\.\.3/);
  for (const [args, message] of [
    [['dump', '--store', 'all', '--data', data], /replay dump: --store takes one store name, not all/],
    [
      ['verify', '--store', 'all', '--all-partitions', '--data', data],
      /--all-partitions is an option of replay rebuild/,
    ],
    [['rebuild', '--store', 'all', '--kafka-tls', '--data', data], /the Kafka security options need --brokers/],
    [['rebuild', '--data', data], /replay rebuild: --store NAME \(or all\) is required/],
    [
      ['rewind', '--store', 'all'],
      /unknown replay subcommand "rewind"; subcommands are verify, rebuild, dump, reparse/,
    ],
  ] as const) {
    const r = replay([...args]);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, message);
  }
});

test('a leftover rocksdb.rebuild-* of a rebuild that died is removed by the next rebuild', async () => {
  const before = await dumpAll();
  const task = frontierTask(0);
  // a pid above Linux's pid_max (2^22) belongs to no process
  const leftover = join(task.path, 'rocksdb.rebuild-4194305');
  mkdirSync(leftover);
  writeFileSync(join(leftover, 'CURRENT'), 'half-written\n');
  const r = replay(['rebuild', '--store', 'frontier-hosts', '--partition', '0', '--data', data]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /removed rocksdb\.rebuild-4194305, left by a rebuild that did not finish/);
  assert.deepEqual(readdirSync(task.path), [basename(task.live)]);
  assertSameDumps(await dumpAll(), before, 'after cleaning a leftover');
});

test("a crawl started on a task dir left between the swap's two renames puts the old copy back before it opens it", async () => {
  const task = frontierTask(3);
  renameSync(task.live, join(task.path, 'rocksdb.old-4194305'));
  mkdirSync(join(task.path, 'rocksdb.rebuild-4194305'));
  const { exited } = startCli(crawlArgs(join(dir, 'seeds.txt'), data, ['--duration', '1']));
  const run = await exited;
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /restored rocksdb from rocksdb\.old-4194305: a rebuild stopped between its two renames/);
  assert.deepEqual(readdirSync(task.path), [basename(task.live)]);
});

test('verify reports every store equal on the embedded engine, and a MISMATCH once a value is tampered with', async () => {
  const ok = replay(['verify', '--store', 'all', '--data', data]);
  assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  const lines = ok.stdout.trim().split('\n');
  assert.equal(lines.length, stores.length * topologyArgs().partitions, ok.stdout);
  for (const line of lines) assert.match(line, /^ok\s+\S+ partition \d: \d+ entries equal .* \(current\)$/);
  // no subcommand is verify
  assert.equal(replay(['--store', 'frontier-hosts', '--data', data]).code, 0);

  const db = await openRocks(frontierTask(1).live);
  try {
    const { gte, lt } = storeKeyRange('frontier-sites');
    const [first] = [...db.iterate(gte, lt, { limit: 1 })];
    assert.ok(first, 'frontier-sites partition 1 has an entry');
    db.write([{ key: first[0], value: Buffer.concat([first[1], Buffer.from([0])]) }]);
  } finally {
    await db.close();
  }
  const bad = replay(['verify', '--store', 'all', '--data', data]);
  assert.equal(bad.code, 1, bad.stdout);
  const mismatches = bad.stdout.split('\n').filter((l) => l.startsWith('MISMATCH'));
  assert.equal(mismatches.length, 1, bad.stdout);
  assert.match(mismatches[0]!, /^MISMATCH\s+frontier-sites partition 1 at offset \d+: 0 missing, 0 extra, 1 differing/);
});
