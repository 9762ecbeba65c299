import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { M } from '../../core/metric-catalogue.js';
import { stringSerde, type Serde } from '../../core/serde.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { EmbeddedLog } from '../../runtime/engines/embedded/log-store.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import { openRocks } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore } from '../../state/store-builder.js';

const APP = 'compacting';
const STORE = 'last-seen';
const CHANGELOG = `${APP}-${STORE}-changelog`;
const PARTITIONS = 2;
/** Distinct keys, each written once per round: well past the compactor's 10 k records of growth per partition. */
const KEYS = 30_000;

const numberSerde: Serde<number> = {
  serialize: (n) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  },
  deserialize: (b) => b.readUInt32BE(0),
};

/** Stores, per key, the round it was last seen in (`discoveredAt`); every record is one changelog write. */
class LastSeen implements Processor<string, LinkBatch, string, LinkBatch> {
  private store!: KeyValueStore<string, number>;

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.store = context.getStateStore<KeyValueStore<string, number>>(STORE);
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    this.store.put(record.key, record.value.discoveredAt);
  }
}

function topology(): Topology {
  return new Topology(APP)
    .addTopic({ name: 'keys', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('keys-source', 'keys')
    .addProcessor('last-seen', () => new LastSeen() as Processor, ['keys-source'])
    .addStateStore(keyValueStore(STORE, stringSerde, numberSerde), 'last-seen');
}

const round = (n: number): StreamRecord<string, LinkBatch>[] =>
  Array.from({ length: KEYS }, (_, i) => ({
    key: `k${i}`,
    value: { site: `k${i}`, sourceUrl: null, discoveredAt: n, links: [] },
    timestamp: 1_700_000_000_000,
  }));

/** Waits for `done`, with no deadline of its own: a run that never gets there ends by the test's timeout. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 20));
}

/** Changelog records left, and a replay of them (last value per key), per partition. */
async function changelog(dir: string): Promise<{ records: number; replay: Map<string, number> }[]> {
  const log = await EmbeddedLog.open(path.join(dir, 'log'));
  try {
    log.ensureTopic(CHANGELOG, PARTITIONS);
    return Array.from({ length: PARTITIONS }, (_, p) => {
      const replay = new Map<string, number>();
      let records = 0;
      for (const r of log.read(CHANGELOG, p, 0, 1_000_000)) {
        records++;
        if (r.value === null) replay.delete(r.key.toString());
        else replay.set(r.key.toString(), numberSerde.deserialize(r.value));
      }
      return { records, replay };
    });
  } finally {
    await log.close();
  }
}

async function storeContents(dir: string, p: number): Promise<Map<string, number>> {
  const db = await openRocks(new TaskDirectory(dir).task({ subtopology: 0, partition: p }).live);
  try {
    const store = new RocksKeyValueStore(STORE, db, stringSerde, numberSerde);
    return new Map([...store.entries()].map(([k, v]) => [k.toString(), numberSerde.deserialize(v)]));
  } finally {
    await db.close();
  }
}

test(
  'a running embedded engine compacts its changelogs, and what is left still rebuilds each store exactly',
  { timeout: 300_000 },
  async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-compaction-'));
    try {
      const engine = new EmbeddedEngine(topology(), { dataDir: dir, commitIntervalMs: 20 });
      await engine.start();
      try {
        // every key written twice: the first round's records become obsolete
        for (const n of [1, 2]) {
          await engine.produce('keys', round(n));
          await until(() => engine.isIdle());
        }
        await until(() => engine.metrics.total(M.changelogRecordsCompacted) > 0);
      } finally {
        await engine.stop();
      }
      await engine.done;
      const compacted = engine.metrics.total(M.changelogRecordsCompacted);

      const left = await changelog(dir);
      const records = left.reduce((n, p) => n + p.records, 0);
      assert.ok(records <= 2 * KEYS - compacted, `${records} changelog records left after ${compacted} compacted`);
      for (let p = 0; p < PARTITIONS; p++) {
        const store = await storeContents(dir, p);
        assert.deepEqual(
          left[p]!.replay,
          store,
          `partition ${p}: a replay of the compacted changelog differs from the store`,
        );
      }
      const all = new Map(left.flatMap((p) => [...p.replay]));
      assert.equal(all.size, KEYS);
      assert.ok(
        [...all.values()].every((v) => v === 2),
        'a key replays to its obsolete first value',
      );

      // the state dir lost: the stores come back from the compacted changelog alone
      const before = await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => storeContents(dir, p)));
      new TaskDirectory(dir).wipeAll();
      const again = new EmbeddedEngine(topology(), { dataDir: dir, commitIntervalMs: 20 });
      await again.start();
      await until(() => again.isIdle());
      await again.stop();
      await again.done;
      for (let p = 0; p < PARTITIONS; p++) assert.deepEqual(await storeContents(dir, p), before[p]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);
