import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createLogger } from '../../core/logger.js';
import { stringSerde } from '../../core/serde.js';
import { KafkaEngine } from '../../runtime/engines/kafka/kafka-engine.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import { removeDir, sleep, tempDir } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { testTopics } from './test-topics.js';

// 4 partitions: test/kafka/topics.test.ts expects it of every changelog on the broker
const PARTITIONS = 4;
const WORDS = 96;
/** How long each record takes: a fetch, say. A revoked task's last record is still running when the new assignment comes. */
const WORK_MS = 250;

test(
  'a member joining a group takes partitions from a live member without any record processed twice: the old owner commits its work in flight before the new one fences it',
  { timeout: 240_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const applicationId = `handover-${Date.now().toString(36)}`;
    // every process() of either member, in this one process: a record taken twice shows here
    const processed: string[] = [];
    class Slow implements Processor<string, LinkBatch, string, LinkBatch> {
      private ctx!: ProcessorContext<string, LinkBatch>;
      init(context: ProcessorContext<string, LinkBatch>): void {
        this.ctx = context;
      }
      async process(record: StreamRecord<string, LinkBatch>): Promise<void> {
        processed.push(record.key);
        await sleep(WORK_MS);
        this.ctx.forward(record);
      }
    }
    const topology = new Topology(applicationId, { topicPrefix: `${applicationId}.` })
      .addTopic({ name: 'words', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
      .addTopic({ name: 'done', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
      .addSource('words-source', 'words')
      .addProcessor('slow', () => new Slow() as Processor, ['words-source'])
      .addSink('done-sink', 'done', 'slow');
    const { keysOf } = await testTopics(t, topology);
    const dir = tempDir('kafka-handover');
    t.after(() => removeDir(dir));
    const lines: string[] = [];
    const member = (name: string): KafkaEngine =>
      new KafkaEngine(topology, {
        brokers: [brokers],
        registryUrl: registry,
        dataDir: join(dir, name),
        // long: what a member holds uncommitted when the group rebalances is most of an interval
        commitIntervalMs: 5_000,
        sessionTimeoutMs: 6_000,
        logger: createLogger({ write: (l) => lines.push(`${name} ${l}`) }),
      });
    const first = member('first');
    const second = member('second');
    t.after(() => Promise.all([first.stop(), second.stop()]).catch(() => undefined));
    const failures: unknown[] = [];
    first.done.catch((err: unknown) => failures.push(err));
    second.done.catch((err: unknown) => failures.push(err));
    await first.start();
    await first.produce(
      'words',
      Array.from({ length: WORDS }, (_, i) => ({
        key: `word-${i}`,
        value: { site: `word-${i}`, sourceUrl: null, discoveredAt: 1, links: [] },
        timestamp: Date.now(),
      })),
    );
    // the first member holds every partition and is at work on each
    const deadline = Date.now() + 120_000;
    while (processed.length < 8) {
      if (Date.now() > deadline)
        assert.fail(`the first member processed ${processed.length} records in 120 s\n${lines.join('\n')}`);
      await sleep(50);
    }
    await second.start();

    const done = (): Promise<string[]> => keysOf('done', PARTITIONS);
    for (;;) {
      if (failures.length > 0) assert.fail(`a member stopped: ${String(failures[0])}\n${lines.join('\n')}`);
      if (new Set(await done()).size >= WORDS) break;
      if (Date.now() > deadline) assert.fail(`not every word was done after 120 s\n${lines.join('\n')}`);
      await sleep(250);
    }
    const owners = [first, second].map((e) => e.taskStatus().filter((s) => s.state === 'running').length);
    assert.ok(
      owners.every((n) => n > 0),
      `both members hold partitions: ${owners.join(', ')}\n${lines.join('\n')}`,
    );
    await Promise.all([first.stop(), second.stop()]);
    const twice = processed.filter((k, i) => processed.indexOf(k) !== i);
    assert.deepEqual(twice, [], `records processed twice across the handover\n${lines.join('\n')}`);
    assert.equal((await done()).length, WORDS, 'every word went out once');
  },
);
