import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isCrawlError } from '../../core/errors.js';
import { rebuildPath, recoverTaskDir, swapIn } from '../../runtime/task-directory.js';

/** A task dir holding `copies`: directory name → the content of its one file. */
function taskDir(copies: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-swap-'));
  for (const [name, content] of Object.entries(copies)) {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'CURRENT'), content);
  }
  return dir;
}

/** Runs `fn` on a task dir holding `copies` (as `taskDir`), removed afterwards. */
function withTaskDir(copies: Record<string, string>, fn: (dir: string) => void): void {
  const dir = taskDir(copies);
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true });
  }
}

/** The task dir's entries, and the content of each copy. */
function layout(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) out[name] = readFileSync(join(dir, name, 'CURRENT'), 'utf8');
  return out;
}

const dead = (): boolean => false;

test('a swap replaces the live copy with the rebuilt one and leaves nothing else', () => {
  withTaskDir({ rocksdb: 'old', warc: 'files' }, (dir) => {
    const path = rebuildPath(dir);
    mkdirSync(path);
    writeFileSync(join(path, 'CURRENT'), 'new');
    swapIn(dir, path);
    assert.deepEqual(layout(dir), { rocksdb: 'new', warc: 'files' });
  });
});

test('a swap into a task dir without a live copy just renames the rebuilt one', () => {
  withTaskDir({}, (dir) => {
    const path = rebuildPath(dir);
    mkdirSync(path);
    writeFileSync(join(path, 'CURRENT'), 'new');
    swapIn(dir, path);
    assert.deepEqual(layout(dir), { rocksdb: 'new' });
  });
});

test('a crash before the swap leaves a rebuild dir: recovery removes it and keeps the live copy', () => {
  withTaskDir({ rocksdb: 'live', 'rocksdb.rebuild-77': 'half' }, (dir) => {
    assert.deepEqual(recoverTaskDir(dir, dead), ['removed rocksdb.rebuild-77, left by a rebuild that did not finish']);
    assert.deepEqual(layout(dir), { rocksdb: 'live' });
  });
});

test('a crash between the two renames (no rocksdb) is undone: the old copy becomes live again', () => {
  withTaskDir({ 'rocksdb.old-77': 'previous', 'rocksdb.rebuild-77': 'complete', warc: 'files' }, (dir) => {
    const done = recoverTaskDir(dir, dead);
    assert.equal(done.length, 2, done.join('\n'));
    assert.match(done[1]!, /restored rocksdb from rocksdb\.old-77: a rebuild stopped between its two renames/);
    assert.deepEqual(layout(dir), { rocksdb: 'previous', warc: 'files' });
  });
});

test('a crash after the renames leaves the replaced copy: recovery removes it and keeps the new live copy', () => {
  withTaskDir({ rocksdb: 'new', 'rocksdb.old-77': 'previous' }, (dir) => {
    assert.deepEqual(recoverTaskDir(dir, dead), ['removed rocksdb.old-77, the copy a finished rebuild replaced']);
    assert.deepEqual(layout(dir), { rocksdb: 'new' });
  });
});

test('recovery refuses a rebuild dir whose process is still running, and touches nothing', () => {
  withTaskDir({ rocksdb: 'live', 'rocksdb.rebuild-77': 'being written' }, (dir) => {
    assert.throws(
      () => recoverTaskDir(dir, (pid) => pid === 77),
      (err) => isCrawlError(err) && err.code === 'CS_STORE' && /process 77, which is running/.test(err.message),
    );
    assert.deepEqual(layout(dir), { rocksdb: 'live', 'rocksdb.rebuild-77': 'being written' });
  });
});

test('recovery of a task dir that does not exist does nothing', () => {
  assert.deepEqual(recoverTaskDir(join(tmpdir(), 'crawlstream-no-such-task-dir')), []);
});
