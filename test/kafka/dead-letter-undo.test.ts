import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { stringSerde, type Serde } from '../../core/serde.js';
import { deadLetterTopicOf } from '../../runtime/dead-letter.js';
import { KafkaEngine } from '../../runtime/engines/kafka/kafka-engine.js';
import { partitionFor } from '../../runtime/partitioner.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore } from '../../state/store-builder.js';
import { removeDir, sleep, tempDir } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { testTopics } from './test-topics.js';

const STORE = 'marked';

const oneSerde: Serde<number> = {
  serialize: (n) => Buffer.from([n]),
  deserialize: (b) => b[0]!,
};

/** Marks each word in a store and forwards it, then fails on `poison` (test/runtime/dead-letter-undo.test.ts on Kafka). */
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
    if (record.key.startsWith('poison')) throw new CrawlError('CS_INTERNAL', 'failed after its writes');
  }
}

const batch = (site: string): LinkBatch => ({ site, sourceUrl: null, discoveredAt: 1, links: [] });

/** The first key `prefix-N` that murmur2 puts on `partition` of 4: the records of one task. */
function keyOn(prefix: string, partition: number): string {
  for (let n = 0; ; n++) if (partitionFor(Buffer.from(`${prefix}-${n}`), 4) === partition) return `${prefix}-${n}`;
}

test(
  'a dead-lettered record leaves none of its store writes or forwards behind (Kafka engine): its changelog and output topic hold only the other records, each once',
  { timeout: 180_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const applicationId = `undo-${Date.now().toString(36)}`;
    // 4 partitions: test/kafka/topics.test.ts expects it of every changelog on the broker
    const topology = new Topology(applicationId, { topicPrefix: `${applicationId}.` })
      .addTopic({ name: 'words', partitions: 4, keySerde: stringSerde, schema: 'LinkBatch' })
      .addTopic({ name: 'marked', partitions: 4, keySerde: stringSerde, schema: 'LinkBatch' })
      .addSource('words-source', 'words')
      .addProcessor('mark', () => new MarkThenFail() as Processor, ['words-source'])
      .addStateStore(keyValueStore(STORE, stringSerde, oneSerde), 'mark')
      .addSink('marked-sink', 'marked', 'mark');
    const { keysOf } = await testTopics(t, topology);
    const dir = tempDir('kafka-dead-letter-undo');
    t.after(() => removeDir(dir));
    const engine = new KafkaEngine(topology, {
      brokers: [brokers],
      registryUrl: registry,
      dataDir: join(dir, 'data'),
      commitIntervalMs: 200,
      sessionTimeoutMs: 6_000,
    });
    t.after(() => engine.stop().catch(() => undefined));
    await engine.start();
    // one partition's records, so the rewind runs `a` again on the task that failed
    const [a, poison, b] = [keyOn('a', 0), keyOn('poison', 0), keyOn('b', 0)];
    await engine.produce(
      'words',
      [a, poison, b].map((w) => ({ key: w, value: batch(w), timestamp: 1 })),
    );

    const readAll = async (topic: string, partitions: number): Promise<string[]> =>
      (await keysOf(topic, partitions)).sort();
    const dlq = deadLetterTopicOf(applicationId);
    const deadline = Date.now() + 120_000;
    // `b` comes after the poison record: once it and the dead letter are committed, so is anything the poison record left
    for (;;) {
      const marked = await readAll('marked', 4);
      const letters = await readAll(dlq, 1);
      if (marked.includes(b) && letters.length > 0) break;
      if (Date.now() > deadline) assert.fail(`not processed after 120 s: marked ${marked}, dead letters ${letters}`);
      await sleep(250);
    }
    await engine.stop();
    assert.deepEqual(await readAll(dlq, 1), [poison]);
    assert.deepEqual(await readAll('marked', 4), [a, b], 'the failed record forwarded nothing, the others once');
    assert.deepEqual(
      await readAll(topology.changelogTopic(STORE), 4),
      [a, b],
      'the failed record wrote nothing to its store’s changelog',
    );
  },
);
