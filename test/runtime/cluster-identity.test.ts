import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLUSTER_ID_FILE, claimStateDir } from '../../runtime/engines/kafka/cluster-identity.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { removeDir, tempDir } from '../e2e/harness.js';

/** A data dir with one task's state (a marker file in the directory of task 0_1). */
function dataDirWithState(): { dir: string; marker: string } {
  const dir = tempDir('cluster-identity');
  const task = new TaskDirectory(dir).task({ subtopology: 0, partition: 1 });
  mkdirSync(task.path, { recursive: true });
  const marker = join(task.path, 'CURRENT');
  writeFileSync(marker, 'x');
  return { dir, marker };
}

test('a data dir without a cluster id is claimed as it is: its state is kept and the id written', () => {
  const { dir, marker } = dataDirWithState();
  try {
    assert.deepEqual(claimStateDir(dir, 'cluster-A'), { kind: 'new' });
    assert.equal(readFileSync(join(dir, CLUSTER_ID_FILE), 'utf8'), 'cluster-A\n');
    assert.ok(existsSync(marker));
    assert.deepEqual(claimStateDir(dir, 'cluster-A'), { kind: 'same' }, 'idempotent');
    assert.ok(existsSync(marker));
  } finally {
    removeDir(dir);
  }
});

test("a data dir of another cluster loses its task state and takes the new cluster's id", () => {
  const { dir, marker } = dataDirWithState();
  writeFileSync(join(dir, 'warc-kept'), 'outputs beside state/ stay');
  try {
    claimStateDir(dir, 'cluster-A');
    assert.deepEqual(claimStateDir(dir, 'cluster-B'), { kind: 'wiped', previous: 'cluster-A' });
    assert.ok(!existsSync(marker), 'state/ removed');
    assert.ok(existsSync(join(dir, 'warc-kept')), 'only state/ is removed');
    assert.equal(readFileSync(join(dir, CLUSTER_ID_FILE), 'utf8'), 'cluster-B\n');
    assert.deepEqual(claimStateDir(dir, 'cluster-B'), { kind: 'same' });
  } finally {
    removeDir(dir);
  }
});

test('no cluster id, or a data dir that cannot be written, is a clear error', () => {
  const { dir } = dataDirWithState();
  try {
    assert.throws(() => claimStateDir(dir, ''), { code: 'CS_KAFKA', message: 'the brokers report no cluster id' });
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, '');
    assert.throws(
      () => claimStateDir(file, 'cluster-A'),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'CS_STORE');
        assert.match(err.message, /^cannot bind the data dir .*not-a-dir to cluster cluster-A: ENOTDIR$/);
        return true;
      },
    );
  } finally {
    removeDir(dir);
  }
});
