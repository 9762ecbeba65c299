import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { stringSerde, type Serde } from '../../core/serde.js';
import type { EngineHealth } from '../../runtime/engine.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { readTopic } from '../../runtime/engines/embedded/topic-reader.js';
import { startOpsServer } from '../../runtime/ops-server.js';
import { partitionFor } from '../../runtime/partitioner.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { openRocks } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore } from '../../state/store-builder.js';

const STORE = 'marked';
const POISONED = 1;

const oneSerde: Serde<number> = {
  serialize: (n) => Buffer.from([n]),
  deserialize: (b) => b[0]!,
};

/**
 * Marks and forwards each word; on partition POISONED its state makes it throw, in `init` or in
 * a punctuator (after a write of its own, which must not be committed).
 */
class PoisonedOnOnePartition implements Processor<string, LinkBatch, string, LinkBatch> {
  private ctx!: ProcessorContext<string, LinkBatch>;
  private store!: KeyValueStore<string, number>;

  constructor(private readonly failIn: 'init' | 'punctuator') {}

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
    this.store = context.getStateStore<KeyValueStore<string, number>>(STORE);
    const poisoned = context.taskId.partition === POISONED;
    if (poisoned && this.failIn === 'init')
      throw new CrawlError('CS_STORE', 'init: this partition’s state is poisoned');
    context.schedule(10, () => {
      if (!poisoned || this.failIn !== 'punctuator') return;
      this.store.put('punctuated', 1);
      throw new CrawlError('CS_STORE', 'punctuator: this partition’s state is poisoned');
    });
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    this.store.put(record.key, 1);
    this.ctx.forward(record);
  }
}

export const quarantineTopology = (failIn: 'init' | 'punctuator', applicationId: string, prefix?: string): Topology =>
  new Topology(applicationId, prefix === undefined ? {} : { topicPrefix: prefix })
    .addTopic({ name: 'words', partitions: 4, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'marked', partitions: 4, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('mark', () => new PoisonedOnOnePartition(failIn) as Processor, ['words-source'])
    .addStateStore(keyValueStore(STORE, stringSerde, oneSerde), 'mark')
    .addSink('marked-sink', 'marked', 'mark');

/** The first key `word-N` that murmur2 puts on `partition` of 4. */
export function keyOn(partition: number): string {
  for (let n = 0; ; n++) if (partitionFor(Buffer.from(`word-${n}`), 4) === partition) return `word-${n}`;
}

export const word = (w: string): StreamRecord<string, LinkBatch> => ({
  key: w,
  value: { site: w, sourceUrl: null, discoveredAt: 1, links: [] },
  timestamp: 1_700_000_000_000,
});

async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`${what} did not happen within 60 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

for (const failIn of ['punctuator', 'init'] as const) {
  test(`a task whose ${failIn} throws is quarantined alone on the embedded engine: the other partitions go on, /healthz stays 200 and names it, nothing of it is committed`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-quarantine-'));
    try {
      const engine = new EmbeddedEngine(quarantineTopology(failIn, 'quarantine'), {
        dataDir: dir,
        commitIntervalMs: 20,
        logger: silentLogger,
      });
      await engine.start();
      const ops = await startOpsServer({ engine, port: 0, host: '127.0.0.1' });
      try {
        await until('a quarantine', () => (engine.health().quarantined?.length ?? 0) > 0);
        await engine.produce(
          'words',
          [0, 1, 2, 3].map((p) => word(keyOn(p))),
        );
        await until('idle', () => engine.isIdle());

        const health = engine.health();
        assert.equal(health.live, true);
        assert.equal(health.state, 'running');
        assert.deepEqual(
          health.quarantined?.map((q) => ({ task: q.task, partition: q.partition, during: q.during, code: q.code })),
          [{ task: `0_${POISONED}`, partition: POISONED, during: failIn, code: 'CS_STORE' }],
        );
        assert.deepEqual(
          engine.taskStatus().map((t) => [t.task, t.state]),
          [
            ['0_0', 'running'],
            ['0_1', 'quarantined'],
            ['0_2', 'running'],
            ['0_3', 'running'],
          ],
        );
        const healthz = await fetch(`http://${ops.address}/healthz`);
        assert.equal(healthz.status, 200);
        const body = (await healthz.json()) as EngineHealth & { warnings?: string[] };
        assert.ok(
          body.warnings?.some((w) => w.startsWith(`task 0_${POISONED} quarantined: its ${failIn} threw CS_STORE`)),
          JSON.stringify(body),
        );
        const metrics = await (await fetch(`http://${ops.address}/metrics`)).text();
        assert.match(metrics, /^crawlstream_tasks_quarantined 1$/m);
      } finally {
        await ops.close();
        await engine.stop();
      }
      await engine.done;

      const forwarded: string[] = [];
      await readTopic(dir, 'marked', (r) => forwarded.push(r.key));
      assert.deepEqual(
        forwarded.sort(),
        [keyOn(0), keyOn(2), keyOn(3)].sort(),
        'the quarantined partition processed nothing',
      );
      const db = await openRocks(new TaskDirectory(dir).task({ subtopology: 0, partition: POISONED }).live);
      try {
        const store = new RocksKeyValueStore(STORE, db, stringSerde, oneSerde);
        assert.deepEqual([...store.entries()], [], 'the punctuator’s write before it threw was not committed');
      } finally {
        await db.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
