import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { stringSerde, type Serde } from '../../core/serde.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { EmbeddedLog } from '../../runtime/engines/embedded/log-store.js';
import { readTopic } from '../../runtime/engines/embedded/topic-reader.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import { openRocks } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore } from '../../state/store-builder.js';

const APP = 'undo';
const STORE = 'marked';

const oneSerde: Serde<number> = {
  serialize: (n) => Buffer.from([n]),
  deserialize: (b) => b[0]!,
};

/**
 * Marks each word in a store and forwards it, then fails on `poison`: the frontier's shape when it
 * marks a batch's URLs seen and fails before it queues them.
 */
class MarkThenFail implements Processor<string, LinkBatch, string, LinkBatch> {
  private ctx!: ProcessorContext<string, LinkBatch>;
  private store!: KeyValueStore<string, number>;

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
    this.store = context.getStateStore<KeyValueStore<string, number>>(STORE);
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    this.store.put(record.key, 1);
    this.ctx.forward(record);
    if (record.key === 'poison') throw new CrawlError('CS_INTERNAL', 'failed after its writes');
  }
}

const topology = () =>
  new Topology(APP)
    .addTopic({ name: 'words', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'marked', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('mark', () => new MarkThenFail() as Processor, ['words-source'])
    .addStateStore(keyValueStore(STORE, stringSerde, oneSerde), 'mark')
    .addSink('marked-sink', 'marked', 'mark');

const word = (w: string): StreamRecord<string, LinkBatch> => ({
  key: w,
  value: { site: w, sourceUrl: null, discoveredAt: 1, links: [] },
  timestamp: 1_700_000_000_000,
});

// Issue #35 item 2, not done yet: the record driver dead-letters a failed record but keeps the
// store writes and forwards it made before failing, and the next commit makes them durable. What a
// fix needs is in the h-dlq report; remove `todo` when it lands.
test('a dead-lettered record leaves none of its store writes or forwards behind (embedded engine)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-undo-'));
  try {
    const engine = new EmbeddedEngine(topology(), { dataDir: dir, commitIntervalMs: 20, logger: silentLogger });
    await engine.start();
    try {
      await engine.produce('words', ['a', 'poison', 'b'].map(word));
      const deadline = Date.now() + 120_000;
      while (!engine.isIdle()) {
        if (Date.now() > deadline) assert.fail('the engine did not become idle');
        await new Promise((r) => setTimeout(r, 5));
      }
    } finally {
      await engine.stop();
    }
    await engine.done;

    const log = await EmbeddedLog.open(path.join(dir, 'log'));
    try {
      log.ensureTopic(`${APP}-dead-letters`, 1);
      assert.deepEqual(
        log.read(`${APP}-dead-letters`, 0, 0, 10).map((r) => r.key.toString()),
        ['poison'],
      );
    } finally {
      await log.close();
    }
    const forwarded: string[] = [];
    await readTopic(dir, 'marked', (r) => forwarded.push(r.key));
    assert.deepEqual(forwarded, ['a', 'b'], 'the failed record forwarded nothing');
    const db = await openRocks(new TaskDirectory(dir).task({ subtopology: 0, partition: 0 }).live);
    try {
      const store = new RocksKeyValueStore(STORE, db, stringSerde, oneSerde);
      assert.deepEqual(
        [...store.entries()].map(([k]) => k.toString()),
        ['a', 'b'],
        'the failed record wrote nothing',
      );
    } finally {
      await db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
