import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { stringSerde } from '../../core/serde.js';
import { REPAIR_QUIET_MS, StoreRepairs } from '../../runtime/store-repair.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { keyValueStore, type StoreBuilder } from '../../state/store-builder.js';

const corrupt = new CrawlError('CS_STORE_CORRUPT', 'RocksDB read failed at /x: Corruption: block checksum mismatch');
const changelogged: StoreBuilder[] = [keyValueStore('counts', stringSerde, stringSerde)];

/** A ledger on a fake clock over a fresh data directory; `dir` is task 0_1's, marked corrupt when `marked`. */
function setup(marked = true) {
  const data = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-repair-'));
  const dir = new TaskDirectory(data).task({ subtopology: 0, partition: 1 });
  if (marked) dir.markCorrupt('RocksDB read failed: Corruption: block checksum mismatch');
  const lines: string[] = [];
  let now = 1_000_000;
  const repairs = new StoreRepairs(createLogger({ write: (l) => lines.push(l) }), () => now);
  return {
    dir,
    lines,
    repairs,
    advance: (ms: number) => (now += ms),
    remove: () => fs.rmSync(data, { recursive: true, force: true }),
  };
}

test('a corrupt read of a marked, fully changelogged task is repaired once, and again only after the quiet time', (t) => {
  const s = setup();
  t.after(s.remove);
  assert.equal(s.repairs.claim('0_1', corrupt, s.dir, changelogged), true);
  assert.match(s.lines.at(-1)!, /task 0_1: a read found its RocksDB corrupt \(RocksDB read failed: Corruption/);
  s.advance(REPAIR_QUIET_MS - 1);
  assert.equal(s.repairs.claim('0_1', corrupt, s.dir, changelogged), false, 'corrupt again soon after a restore');
  assert.match(
    s.lines.at(-1)!,
    /found corrupt again \d+ s after it was restored .*not repaired again: check the disk under /,
  );
  // another task's first corruption is its own
  const other = new TaskDirectory(path.dirname(path.dirname(s.dir.path))).task({ subtopology: 0, partition: 2 });
  other.markCorrupt('bad block');
  assert.equal(s.repairs.claim('0_2', corrupt, other, changelogged), true);
  s.advance(1);
  assert.equal(s.repairs.claim('0_1', corrupt, s.dir, changelogged), true, 'a new corruption after the quiet time');
});

test('other failures, an unmarked directory and a store without a changelog are never repaired', (t) => {
  const s = setup();
  t.after(s.remove);
  for (const err of [
    new CrawlError('CS_STORE', 'locked'),
    new CrawlError('CS_DISK_FULL', 'No space'),
    new Error('x'),
    'str',
  ])
    assert.equal(s.repairs.claim('0_1', err, s.dir, changelogged), false, String(err));
  const local: StoreBuilder[] = [
    ...changelogged,
    { ...keyValueStore('cache', stringSerde, stringSerde), changelog: false },
  ];
  assert.equal(s.repairs.claim('0_1', corrupt, s.dir, local), false);
  const u = setup(false);
  t.after(u.remove);
  assert.equal(u.repairs.claim('0_1', corrupt, u.dir, changelogged), false);
  assert.deepEqual(u.lines, []);
});
