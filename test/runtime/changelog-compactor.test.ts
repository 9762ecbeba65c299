import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChangelogCompactor } from '../../runtime/engines/embedded/changelog-compactor.js';
import { EmbeddedChangelogSource } from '../../runtime/engines/embedded/embedded-changelog-source.js';
import { EmbeddedLog } from '../../runtime/engines/embedded/log-store.js';
import { applyCommitted, prepareCommit, restoreStores } from '../../runtime/task-state.js';
import { openRocks, type RocksPort } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import { stringSerde } from '../../core/serde.js';

const TOPIC = 'app-s-changelog';

/** Commits the store's pending writes through the log, with the engines' commit assembly (task-state). */
function commit(log: EmbeddedLog, db: RocksPort, store: RocksKeyValueStore<string, string>): void {
  const prepared = prepareCommit(
    { db, stores: new Map([['s', store]]), changelogged: [{ store, topic: TOPIC }] },
    0,
    0,
  );
  if (prepared.records.length === 0) return;
  applyCommitted(prepared, log.commit([{ topic: TOPIC, partition: 0, records: prepared.records }], []));
}

function allRecords(log: EmbeddedLog): { key: Buffer; value: Buffer | null }[] {
  return log
    .read(TOPIC, 0, 0, 1_000_000)
    .map((r) => ({ key: Buffer.from(r.key), value: r.value === null ? null : Buffer.from(r.value) }));
}

function replay(records: { key: Buffer; value: Buffer | null }[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const r of records) {
    if (r.value === null) m.delete(r.key.toString());
    else m.set(r.key.toString(), r.value.toString());
  }
  return m;
}

const entries = (store: RocksKeyValueStore<string, string>) =>
  new Map([...store.entries()].map(([k, v]) => [k.toString(), v.toString()]));

test('changelog compaction keeps one record per live key, and a replay of what is left rebuilds the store exactly', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-compact-'));
  let db: RocksPort | undefined;
  const log = await EmbeddedLog.open(path.join(dir, 'log'));
  try {
    log.ensureTopic(TOPIC, 1);
    db = await openRocks(path.join(dir, 'store'));
    const store = new RocksKeyValueStore('s', db, stringSerde, stringSerde);
    const compactor = new ChangelogCompactor(log, 500, 700);
    const target = { store, topic: TOPIC, partition: 0, db };
    let written = 0;
    const round = (n: number) => {
      for (let i = 0; i < n; i++) {
        const k = `k${(i * 7919) % 200}`;
        if (i % 13 === 0) store.delete(k);
        else store.put(k, `v${written}`);
        written++;
        if (i % 50 === 49) commit(log, db!, store);
      }
      commit(log, db!, store);
    };

    round(400);
    assert.equal(compactor.compactDue([target]), 0, 'below the growth threshold nothing is compacted');
    round(2_000);
    const before = allRecords(log).length;
    // a budget of 700 records per call spreads the pass over calls; writes between them are kept
    let deleted = compactor.compactDue([target]);
    assert.ok(
      deleted > 0 && deleted <= 700 && allRecords(log).length > before - 700 - 1,
      `the first call compacts only part of the log (${deleted})`,
    );
    round(100);
    for (let i = 0; i < 10; i++) deleted += compactor.compactDue([target]);
    const after = allRecords(log);
    const live = entries(store);
    assert.ok(after.length < before / 4, `${before} records before, ${after.length} after`);
    assert.ok(
      after.length <= live.size + 100,
      `${after.length} records left for ${live.size} live keys and a tail of at most 100`,
    );
    assert.deepEqual(replay(after), live);

    // more writes and a second pass: still exact, and the log stays bounded by the live keys plus the new tail
    round(3_000);
    for (let i = 0; i < 20; i++) compactor.compactDue([target]);
    assert.deepEqual(replay(allRecords(log)), entries(store));
    assert.ok(allRecords(log).length <= entries(store).size);

    // a store lost with its state dir is rebuilt from the compacted changelog alone
    const rebuiltDb = await openRocks(path.join(dir, 'rebuilt'));
    try {
      const rebuilt = new RocksKeyValueStore('s', rebuiltDb, stringSerde, stringSerde);
      const source = EmbeddedChangelogSource.over(log, path.join(dir, 'log'));
      await restoreStores(source, 0, [{ store: rebuilt, topic: TOPIC, to: log.endOffset(TOPIC, 0) }]);
      assert.equal(rebuilt.checkpoint(), log.endOffset(TOPIC, 0));
      assert.deepEqual(entries(rebuilt), entries(store));
    } finally {
      await rebuiltDb.close();
    }
  } finally {
    await db?.close();
    await log.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
