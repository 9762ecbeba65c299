import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../core/logger.js';
import { replayEqual, verifyStores } from '../../runtime/replay/verify.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import {
  applyCommitted,
  closeTaskState,
  openTaskState,
  openTaskStores,
  prepareCommit,
} from '../../runtime/task-state.js';
import type { KeyValueStore } from '../../state/state-store.js';
import type { ChangeloggedStore } from '../../state/state-store.js';
import { CHANGELOG, STORE, ScriptedCluster, countTopology, tempDataDir } from './scripted-port.js';

/**
 * `replay verify` over a task's real RocksDB copy and a scripted changelog (offsets with commit
 * markers, as on Kafka): what it calls equal, behind, missing, extra and differing.
 */

const ID = { subtopology: 0, partition: 1 };

/** Commits `writes` to task 0_1's store through the task-state core, made durable by `cluster`. */
async function commitAll(dataDir: string, cluster: ScriptedCluster, commits: Record<string, number | null>[]) {
  const { topology, sub } = countTopology();
  const dir = new TaskDirectory(dataDir).task(ID);
  const logger = createLogger({ level: 'error', write: () => undefined });
  const state = await openTaskState({ id: ID, sub, topology, dir, source: cluster, logger });
  try {
    const store = state.stores.get(STORE) as unknown as KeyValueStore<string, number>;
    for (const writes of commits) {
      for (const [k, v] of Object.entries(writes)) {
        if (v === null) store.delete(k);
        else store.put(k, v);
      }
      const prepared = prepareCommit(state, ID.partition, 1);
      applyCommitted(prepared, cluster.append(prepared.records));
    }
  } finally {
    await closeTaskState(state);
  }
}

/** Writes `writes` into the local copy only, keeping its checkpoint: a copy that drifted from its changelog. */
async function tamper(dataDir: string, writes: Record<string, number | null>): Promise<void> {
  const { topology, sub } = countTopology();
  const state = await openTaskStores(ID, sub, topology, new TaskDirectory(dataDir).task(ID));
  try {
    const store = state.stores.get(STORE) as unknown as KeyValueStore<string, number> & ChangeloggedStore;
    for (const [k, v] of Object.entries(writes)) {
      if (v === null) store.delete(k);
      else store.put(k, v);
    }
    store.applyCommitted(store.checkpoint());
  } finally {
    await closeTaskState(state);
  }
}

/** Runs `body` with the temporary directory (where verify keeps its scratch copy) set to a fresh one. */
async function withTmp(body: (tmp: string) => Promise<void>): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'crawlstream-verify-tmp-'));
  const before = process.env['TMPDIR'];
  process.env['TMPDIR'] = tmp;
  try {
    await body(tmp);
  } finally {
    if (before === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = before;
    rmSync(tmp, { recursive: true, force: true });
  }
}

test("verify replays up to the copy's checkpoint: equal and current, then behind by what another owner committed later", async () => {
  const dataDir = tempDataDir();
  const cluster = new ScriptedCluster();
  try {
    await commitAll(dataDir, cluster, [
      { a: 1, b: 2 },
      { c: 3, a: null },
    ]);
    const { topology } = countTopology();
    const taskDir = new TaskDirectory(dataDir).task(ID).path;
    const layout = readdirSync(taskDir).sort();
    await withTmp(async (tmp) => {
      const [report, ...more] = await verifyStores(cluster, topology, dataDir, []);
      assert.deepEqual(more, [], 'one store of one local task');
      // 2 + 1 records and 2 commit markers: the copy's checkpoint is past the last record, before the last marker
      assert.deepEqual(report, {
        store: STORE,
        partition: 1,
        checkpoint: 5,
        entries: 2,
        missing: 0,
        extra: 0,
        differing: 0,
        behind: 0,
      });
      assert.deepEqual(readdirSync(tmp), [], 'the scratch copy is removed');
    });
    assert.deepEqual(readdirSync(taskDir).sort(), layout, 'nothing is written beside the live copy');

    // another instance owned the partition since and committed one more record: the copy is stale, not different
    cluster.append([{ topic: CHANGELOG, partition: 1, key: Buffer.from('d'), value: Buffer.from('4'), timestamp: 1 }]);
    const [stale] = await verifyStores(cluster, topology, dataDir, [STORE], 1);
    assert.equal(stale!.behind, 1);
    assert.equal(replayEqual(stale!), true, 'records past the checkpoint are not replayed');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('verify counts missing, extra and differing keys and names the first difference in key order', async () => {
  const dataDir = tempDataDir();
  const cluster = new ScriptedCluster();
  try {
    await commitAll(dataDir, cluster, [{ a: 1, b: 2, c: 3 }]);
    await tamper(dataDir, { b: 9, c: null, z: 1 });
    const [report] = await verifyStores(cluster, countTopology().topology, dataDir, []);
    assert.deepEqual(report, {
      store: STORE,
      partition: 1,
      checkpoint: 3,
      entries: 3,
      missing: 1,
      extra: 1,
      differing: 1,
      behind: 0,
      firstDifference: '"b"',
    });
    assert.equal(replayEqual(report!), false);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a copy ahead of its changelog (the topics were created again) is compared with what the changelog has', async () => {
  const dataDir = tempDataDir();
  try {
    await commitAll(dataDir, new ScriptedCluster(), [{ a: 1, b: 2 }]);
    // a cluster whose changelog is empty: the replay reads nothing past its end
    const [report] = await verifyStores(new ScriptedCluster(), countTopology().topology, dataDir, []);
    assert.deepEqual(
      { entries: report!.entries, extra: report!.extra, missing: report!.missing, behind: report!.behind },
      { entries: 2, extra: 2, missing: 0, behind: 0 },
    );
    assert.equal(report!.firstDifference, '"a"');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
