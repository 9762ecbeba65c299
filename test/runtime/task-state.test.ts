import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createLogger } from '../../core/logger.js';
import { M } from '../../core/metric-catalogue.js';
import { Metrics } from '../../core/metrics.js';
import { isCrawlError } from '../../core/errors.js';
import { rangeKey } from '../../runtime/changelog-source.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import {
  applyCommitted,
  closeTaskState,
  discardPending,
  hasPendingWrites,
  openTaskState,
  prepareCommit,
  restoreTaskState,
  type LocalTaskState,
} from '../../runtime/task-state.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { CHANGELOG, STORE, ScriptedCluster, countTopology, tempDataDir, until } from './scripted-port.js';

const ID = { subtopology: 0, partition: 1 };

function kv(state: LocalTaskState): KeyValueStore<string, number> {
  return state.stores.get(STORE) as unknown as KeyValueStore<string, number>;
}

async function open(dataDir: string, cluster: ScriptedCluster, lines: string[] = []): Promise<LocalTaskState> {
  const { topology, sub } = countTopology();
  const logger = createLogger({ level: 'info', write: (l) => lines.push(l) });
  const dir = new TaskDirectory(dataDir).task(ID);
  return openTaskState({ id: ID, sub, topology, dir, source: cluster, logger });
}

/** One commit of `writes` through the core, made durable by the scripted cluster. */
function commit(state: LocalTaskState, cluster: ScriptedCluster, writes: Record<string, number | null>): void {
  const store = kv(state);
  for (const [k, v] of Object.entries(writes)) {
    if (v === null) store.delete(k);
    else store.put(k, v);
  }
  const prepared = prepareCommit(state, ID.partition, 1);
  applyCommitted(prepared, cluster.append(prepared.records));
}

function contents(state: LocalTaskState): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of ['a', 'b', 'c', 'd', 'e']) {
    const v = kv(state).get(k);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

test('a commit hands one changelog record per key (the last write, deletes as null) and applies only when told', async () => {
  const dataDir = tempDataDir();
  const cluster = new ScriptedCluster();
  const state = await open(dataDir, cluster);
  try {
    const store = kv(state);
    store.put('a', 1);
    store.put('a', 2);
    store.put('b', 1);
    store.delete('c');
    const prepared = prepareCommit(state, ID.partition, 42);
    assert.deepEqual(
      prepared.records.map((r) => [r.topic, r.partition, r.key.toString(), r.value?.toString() ?? null, r.timestamp]),
      [
        [CHANGELOG, 1, 'a', '2', 42],
        [CHANGELOG, 1, 'b', '1', 42],
        [CHANGELOG, 1, 'c', null, 42],
      ],
    );
    assert.equal(hasPendingWrites(state), true, 'nothing is applied before the commit is durable');
    const store0 = state.changelogged[0]!.store;
    assert.equal(store0.checkpoint(), 0);
    // the changelog already holds 5 offsets: this commit's records start at 5
    applyCommitted(prepared, new Map([[rangeKey(CHANGELOG, 1), 5]]));
    assert.equal(store0.checkpoint(), 8, 'the checkpoint moves to base + count');
    assert.equal(hasPendingWrites(state), false);
    store.put('d', 9);
    discardPending(state);
    assert.equal(store.get('d'), undefined, 'a failed commit leaves the store at the last one');
    assert.equal(store0.checkpoint(), 8);
  } finally {
    await closeTaskState(state);
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a restore reads only the range past the checkpoint, in batches, and ends at the source checkpoint past the last record', async () => {
  const dataDir = tempDataDir();
  const cluster = new ScriptedCluster();
  let state = await open(dataDir, cluster);
  commit(state, cluster, { a: 1, b: 1 });
  commit(state, cluster, { a: 2 });
  const kept = state.changelogged[0]!.store.checkpoint();
  await closeTaskState(state);
  // another owner commits more while this copy is closed
  const other = tempDataDir();
  const ahead = await open(other, cluster);
  await restoreTaskState(ahead, cluster);
  commit(ahead, cluster, { c: 1, a: 3 });
  commit(ahead, cluster, { b: null, d: 4 });
  await closeTaskState(ahead);
  const metrics = new Metrics();
  const lines: string[] = [];
  state = await open(dataDir, cluster, lines);
  try {
    cluster.reads.length = 0;
    const restored = await restoreTaskState(state, cluster, { metrics, say: (l) => lines.push(l) });
    assert.equal(restored, 4, 'only the four records past the checkpoint');
    assert.deepEqual(cluster.reads, [
      [{ topic: CHANGELOG, partition: 1, from: kept, to: cluster.endOf(CHANGELOG, 1) }],
    ]);
    assert.deepEqual(contents(state), { a: 3, c: 1, d: 4 });
    assert.equal(state.changelogged[0]!.store.checkpoint(), cluster.endOf(CHANGELOG, 1), 'past the last commit marker');
    assert.equal(metrics.counter(M.restoreRecords, STORE), 4);
    assert.ok(
      lines.some((l) => /task 0_1: restored 4 changelog records in \d+ ms \(counts 4\)/.test(l)),
      lines.join('\n'),
    );
  } finally {
    await closeTaskState(state);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(other, { recursive: true, force: true });
  }
});

test('a restore cut short by a crash keeps what it applied and resumes from there to the same state', async () => {
  const dataDir = tempDataDir();
  const cluster = new ScriptedCluster();
  const writerDir = tempDataDir();
  const writer = await open(writerDir, cluster);
  for (let i = 1; i <= 5; i++) commit(writer, cluster, { a: i, [['b', 'c', 'd', 'e'][i % 4]!]: i });
  const expected = contents(writer);
  await closeTaskState(writer);
  rmSync(writerDir, { recursive: true, force: true });
  let state = await open(dataDir, cluster);
  cluster.crashAfterBatches = 2;
  await assert.rejects(restoreTaskState(state, cluster), (err) => isCrawlError(err) && err.code === 'CS_KAFKA');
  const partial = state.changelogged[0]!.store.checkpoint();
  assert.ok(partial > 0 && partial < cluster.endOf(CHANGELOG, 1), `partial checkpoint ${partial}`);
  await closeTaskState(state);
  cluster.crashAfterBatches = undefined;
  state = await open(dataDir, cluster);
  try {
    cluster.reads.length = 0;
    await restoreTaskState(state, cluster);
    assert.equal(cluster.reads[0]![0]!.from, partial, 'the second restore starts where the first one stopped');
    assert.deepEqual(contents(state), expected);
  } finally {
    await closeTaskState(state);
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a store whose checkpoint lies past its changelog end is wiped, with a warning, and opens empty', async () => {
  const dataDir = tempDataDir();
  const cluster = new ScriptedCluster();
  let state = await open(dataDir, cluster);
  commit(state, cluster, { a: 1, b: 2 });
  await closeTaskState(state);
  const lines: string[] = [];
  // the topics were created again: the changelog is empty, the local copy is ahead of it
  state = await open(dataDir, new ScriptedCluster(), lines);
  try {
    assert.deepEqual(contents(state), {});
    assert.equal(state.changelogged[0]!.store.checkpoint(), 0);
    assert.ok(
      lines.some((l) =>
        /task 0_1: local state is ahead of the cluster \(counts at 2, its changelog ends at 0\)/.test(l),
      ),
      lines.join('\n'),
    );
  } finally {
    await closeTaskState(state);
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a second open of a task in this process waits for the first owner to close, then opens what it committed', async () => {
  const dataDir = tempDataDir();
  const cluster = new ScriptedCluster();
  const { topology, sub } = countTopology();
  const logger = createLogger({ level: 'info', write: () => undefined });
  const waits: string[] = [];
  const dir = new TaskDirectory(dataDir, { onWait: (task) => waits.push(task.name) }).task(ID);
  const first = await openTaskState({ id: ID, sub, topology, dir, source: cluster, logger });
  commit(first, cluster, { a: 1 });
  const second = openTaskState({ id: ID, sub, topology, dir, source: cluster, logger });
  let state: LocalTaskState | undefined;
  try {
    // the second opening waits (it would fail on RocksDB's lock, held by this very process)
    await until(() => waits.length > 0, 'the second opening to wait');
    assert.deepEqual(waits, ['0_1']);
  } finally {
    await closeTaskState(first);
  }
  try {
    state = await second;
    assert.deepEqual(contents(state), { a: 1 });
  } finally {
    if (state) await closeTaskState(state);
    rmSync(dataDir, { recursive: true, force: true });
  }
});
