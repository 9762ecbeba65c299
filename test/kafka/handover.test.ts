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

/** words → `name` → done, PARTITIONS partitions each, under `applicationId`'s own topic names. */
function wordsTopology(applicationId: string, name: string, make: () => Processor): Topology {
  return new Topology(applicationId, { topicPrefix: `${applicationId}.` })
    .addTopic({ name: 'words', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'done', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor(name, make, ['words-source'])
    .addSink('done-sink', 'done', name);
}

/** Records word-`from` .. word-`to − 1`, keyed by the word. */
const words = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => ({
    key: `word-${from + i}`,
    value: { site: `word-${from + i}`, sourceUrl: null, discoveredAt: 1, links: [] },
    timestamp: Date.now(),
  }));

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
    const topology = wordsTopology(applicationId, 'slow', () => new Slow() as Processor);
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
    await first.produce('words', words(0, WORDS));
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

test(
  'a partition whose previous owner has left the group opens without the handover wait: no live member has a commit to make',
  { timeout: 240_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const applicationId = `handover-gone-${Date.now().toString(36)}`;
    const processed: string[] = [];
    // what each task got of `inProcess`: one object per engine (member), whatever partitions it runs
    const shared = new Map<object, Set<number>>();
    class Record implements Processor<string, LinkBatch, string, LinkBatch> {
      private ctx!: ProcessorContext<string, LinkBatch>;
      init(context: ProcessorContext<string, LinkBatch>): void {
        this.ctx = context;
        const object = context.inProcess('probe', () => ({}));
        shared.set(object, (shared.get(object) ?? new Set()).add(context.taskId.partition));
      }
      process(record: StreamRecord<string, LinkBatch>): void {
        processed.push(record.key);
        this.ctx.forward(record);
      }
    }
    const topology = wordsTopology(applicationId, 'record', () => new Record() as Processor);
    const { keysOf } = await testTopics(t, topology);
    const dir = tempDir('kafka-handover-gone');
    t.after(() => removeDir(dir));
    const lines: string[] = [];
    // a wait far longer than anything else here: a partition that waited it would not be done in time
    const GRACE_MS = 90_000;
    const member = (name: string): KafkaEngine =>
      new KafkaEngine(topology, {
        brokers: [brokers],
        registryUrl: registry,
        dataDir: join(dir, name),
        commitIntervalMs: 200,
        sessionTimeoutMs: 6_000,
        handoverGraceMs: GRACE_MS,
        logger: createLogger({ write: (l) => lines.push(`${name} ${l}`) }),
      });
    const waitDone = async (n: number, within: number, what: string): Promise<void> => {
      const deadline = Date.now() + within;
      while (new Set(await keysOf('done', PARTITIONS)).size < n) {
        if (Date.now() > deadline) assert.fail(`${what}\n${lines.join('\n')}`);
        await sleep(250);
      }
    };
    // the first member ever: no partition had an owner, so none waits
    const first = member('first');
    t.after(() => first.stop().catch(() => undefined));
    await first.start();
    await first.produce('words', words(0, WORDS / 2));
    await waitDone(
      WORDS / 2,
      GRACE_MS / 2,
      `a first member did not finish ${WORDS / 2} records in ${GRACE_MS / 2000} s`,
    );
    // it leaves the group; a second member takes every partition from nobody
    await first.stop();
    const second = member('second');
    t.after(() => second.stop().catch(() => undefined));
    await second.start();
    await second.produce('words', words(WORDS / 2, WORDS));
    await waitDone(WORDS, GRACE_MS / 2, `the partitions of a member gone waited for its handover (${GRACE_MS} ms)`);
    await second.stop();
    assert.deepEqual(
      processed.filter((k, i) => processed.indexOf(k) !== i),
      [],
      'records processed twice',
    );
    // each member's tasks of all four partitions shared one object; the two members had two
    assert.deepEqual(
      [...shared.values()].map((ps) => [...ps].sort()),
      [
        [0, 1, 2, 3],
        [0, 1, 2, 3],
      ],
    );
  },
);
