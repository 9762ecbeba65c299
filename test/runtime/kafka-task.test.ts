import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { CrawlError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { M } from '../../core/metric-catalogue.js';
import { Metrics } from '../../core/metrics.js';
import { rangeKey } from '../../runtime/changelog-source.js';
import { DeadLetters } from '../../runtime/dead-letter.js';
import { KafkaTask, type KafkaTaskHost } from '../../runtime/engines/kafka/kafka-task.js';
import { recordBytes } from '../../runtime/engines/kafka/input-bounds.js';
import { BATCH_BYTES } from '../../runtime/batch-bounds.js';
import { partitionFor } from '../../runtime/partitioner.js';
import type { ConsumedRawRecord } from '../../runtime/record.js';
import { buildSerdes, type SerdeSet } from '../../runtime/serdes.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { TaskLifecycle } from '../../runtime/task-lifecycle.js';
import { openTaskState, restoreTaskState, type LocalTaskState } from '../../runtime/task-state.js';
import { StreamTask } from '../../runtime/task.js';
import { MemoryRegistry } from '../../schemas/memory-registry.js';
import {
  APP,
  CHANGELOG,
  ScriptedCluster,
  ScriptedProducer,
  countTopology,
  tempDataDir,
  until,
} from './scripted-port.js';
import { stringSerde } from '../../core/serde.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';

const ID = { subtopology: 0, partition: 1 };
const GROUP = 'scripted-counter';

interface Rig {
  readonly task: KafkaTask;
  readonly state: LocalTaskState;
  readonly producer: ScriptedProducer;
  readonly cluster: ScriptedCluster;
  readonly metrics: Metrics;
  readonly lost: CrawlError[];
  readonly fatal: unknown[];
  readonly serdes: SerdeSet;
  readonly dataDir: string;
}

/** A running KafkaTask over real stores, its producer scripted; `commitIntervalMs` long, so commits come when asked. */
async function rig(cluster = new ScriptedCluster(), dataDir = tempDataDir(), made = countTopology()): Promise<Rig> {
  const { topology, sub } = made;
  const serdes = await buildSerdes(topology, new MemoryRegistry());
  const metrics = new Metrics();
  const dir = new TaskDirectory(dataDir).task(ID);
  const state = await openTaskState({ id: ID, sub, topology, dir, source: cluster, logger: silentLogger });
  await restoreTaskState(state, cluster);
  const lifecycle = new TaskLifecycle(dir.name);
  lifecycle.to('restoring');
  const producer = new ScriptedProducer(cluster, 'scripted-0_1');
  const lost: CrawlError[] = [];
  const fatal: unknown[] = [];
  const host: KafkaTaskHost = {
    groupId: GROUP,
    commitIntervalMs: 3_600_000,
    deadLetters: new DeadLetters('scripted-dead-letters', Infinity, metrics, () => undefined),
    metrics,
    log: () => undefined,
    lost: (_t, err) => lost.push(err),
    quarantine: (_t, err) => fatal.push(err),
    fatal: (err) => fatal.push(err),
  };
  let kafkaTask!: KafkaTask;
  const task = new StreamTask(
    ID,
    sub,
    topology,
    { send: (t, p, k, v, ts, h) => kafkaTask.outputs.collect(t, p, k, v, ts, h) },
    state.stores,
    serdes,
    metrics,
    Date.now,
    silentLogger,
    lifecycle,
  );
  kafkaTask = new KafkaTask(task, producer, state, host);
  return { task: kafkaTask, state, producer, cluster, metrics, lost, fatal, serdes, dataDir };
}

function words(r: Rig, offsets: number[], key = 'a'): ConsumedRawRecord[] {
  return offsets.map((offset) => ({
    topic: 'words',
    partition: ID.partition,
    offset,
    key: Buffer.from(key),
    value: r.serdes.value('words').serialize({ site: key, sourceUrl: null, discoveredAt: 0, links: [] }),
    timestamp: 1,
  }));
}

function start(r: Rig): void {
  r.task.task.init();
  r.task.start();
}

const checkpoint = (r: Rig): number => r.state.changelogged[0]!.store.checkpoint();

test('a commit is one transaction of outputs, changelog records and input offsets; the store applies at base + count', async () => {
  const r = await rig();
  try {
    start(r);
    r.task.enqueue(words(r, [0, 1, 2]));
    await until(() => r.task.busy() === 0 && r.task.backlog() === 0, 'the records processed');
    await r.task.commit();
    assert.equal(r.producer.commits.length, 1);
    const [c] = r.producer.commits;
    assert.equal(c!.groupId, GROUP);
    assert.deepEqual(c!.offsets, [{ topic: 'words', partition: 1, offset: 3 }]);
    const byTopic = c!.records.map((x) => `${x.topic}/${x.partition}`);
    // an output goes to the partition its key picks; a changelog record to the task's own partition
    const out = `totals/${partitionFor(Buffer.from('a'), 2)}`;
    assert.deepEqual(byTopic, [out, out, out, `${CHANGELOG}/1`], 'outputs first, then one record per key');
    assert.equal(c!.records.at(-1)!.value!.toString(), '3');
    // the changelog record went to offset 0 of the partition: the checkpoint is base 0 + 1
    assert.equal(checkpoint(r), 1);
    assert.equal(r.metrics.counter(M.commits), 1);
    assert.ok(r.task.isIdle());
  } finally {
    await r.task.close(false);
    rmSync(r.dataDir, { recursive: true, force: true });
  }
});

test('a fenced commit loses the task: nothing applied, pending writes dropped, the loop stops, the engine told once', async () => {
  const r = await rig();
  try {
    start(r);
    r.task.enqueue(words(r, [0]));
    await until(() => r.task.busy() === 0 && r.task.backlog() === 0, 'the first record processed');
    await r.task.commit();
    const before = checkpoint(r);
    r.producer.answers.push(new CrawlError('CS_FENCED', 'scripted: another producer took the id'));
    r.task.enqueue(words(r, [1, 2]));
    await until(() => r.task.busy() === 0 && r.task.backlog() === 0, 'the next records processed');
    await r.task.commit();
    assert.deepEqual(
      r.lost.map((e) => e.code),
      ['CS_FENCED'],
    );
    assert.equal(checkpoint(r), before, 'local state stays at the last committed changelog offset');
    assert.equal((r.state.stores.get('counts') as unknown as { get(k: string): number }).get('a'), 1);
    assert.equal(r.metrics.counter(M.commitsAborted), 1);
    assert.equal(r.cluster.records(CHANGELOG, 1).length, 1, 'the failed transaction wrote nothing');
    assert.equal(r.fatal.length, 0, 'a fenced task is lost, not fatal');
  } finally {
    await r.task.close(false);
    rmSync(r.dataDir, { recursive: true, force: true });
  }
});

test('records below the committed position or already fetched are dropped, so none is processed twice after a rebalance', async () => {
  const r = await rig();
  try {
    r.task.startAt([{ topic: 'words', partition: 1, offset: 5 }]);
    start(r);
    r.task.enqueue(words(r, [3, 4, 5, 6]));
    r.task.enqueue(words(r, [5, 6, 7]));
    await until(() => r.task.busy() === 0 && r.task.backlog() === 0, 'the records processed');
    await r.task.commit();
    const totals = r.producer.commits[0]!.records.filter((x) => x.topic === 'totals');
    assert.equal(totals.length, 3, 'offsets 5, 6, 7 once each');
    assert.deepEqual(r.producer.commits[0]!.offsets, [{ topic: 'words', partition: 1, offset: 8 }]);
  } finally {
    await r.task.close(false);
    rmSync(r.dataDir, { recursive: true, force: true });
  }
});

test('a task takes its buffered records a bounded number of bytes at a time, and counts the bytes it holds untaken', async () => {
  const r = await rig();
  try {
    // 24 records of ~40 KiB, as pages are: fetched before the task runs
    const big = (offset: number): ConsumedRawRecord => ({
      ...words(r, [offset])[0]!,
      value: r.serdes.value('words').serialize({
        site: 'a',
        sourceUrl: `http://a.test/${'x'.repeat(40 * 1024)}`,
        discoveredAt: 0,
        links: [],
      }),
    });
    const records = Array.from({ length: 24 }, (_, i) => big(i));
    r.task.enqueue(records);
    const size = recordBytes(records[0]!);
    assert.equal(r.task.backlogBytes(), 24 * size);
    // the run loop takes its first records before start returns
    start(r);
    const taken = 24 - r.task.backlog();
    assert.ok(taken >= 1 && taken * size <= BATCH_BYTES + size, `took ${taken} records of ${size} bytes at once`);
    assert.equal(r.task.backlogBytes(), r.task.backlog() * size);
    await until(() => r.task.busy() === 0 && r.task.backlog() === 0, 'every record processed');
    assert.equal(r.task.backlogBytes(), 0);
    await r.task.commit();
    assert.deepEqual(r.producer.commits[0]!.offsets, [{ topic: 'words', partition: 1, offset: 24 }]);
  } finally {
    await r.task.close(false);
    rmSync(r.dataDir, { recursive: true, force: true });
  }
});

test('a graceful close commits what was processed once more and closes the producer; the next owner restores it', async () => {
  const r = await rig();
  start(r);
  r.task.enqueue(words(r, [0, 1]));
  r.task.enqueue(words(r, [2], 'b'));
  await until(() => r.task.busy() === 0 && r.task.backlog() === 0, 'the records processed');
  assert.equal(r.producer.commits.length, 0, 'no commit before the close (the interval is an hour)');
  await r.task.close(true, 1_000);
  assert.equal(r.producer.closed, true);
  assert.equal(r.producer.commits.length, 1);
  assert.deepEqual(r.producer.commits[0]!.offsets, [{ topic: 'words', partition: 1, offset: 3 }]);
  assert.equal(r.cluster.offsets.get(`${GROUP}\u0000${rangeKey('words', 1)}`), 3);
  const next = await rig(r.cluster, r.dataDir);
  try {
    const counts = next.state.stores.get('counts') as unknown as { get(k: string): number | undefined };
    assert.deepEqual([counts.get('a'), counts.get('b')], [2, 1]);
  } finally {
    await next.task.close(false);
    rmSync(r.dataDir, { recursive: true, force: true });
  }
});

test('an ungraceful close commits nothing and drops pending writes', async () => {
  const r = await rig();
  start(r);
  r.task.enqueue(words(r, [0, 1]));
  await until(() => r.task.busy() === 0 && r.task.backlog() === 0, 'the records processed');
  await r.task.close(false);
  assert.equal(r.producer.commits.length, 0);
  assert.equal(r.producer.closed, true);
  const next = await rig(r.cluster, r.dataDir);
  try {
    assert.equal((next.state.stores.get('counts') as unknown as { get(k: string): unknown }).get('a'), undefined);
  } finally {
    await next.task.close(false);
    rmSync(r.dataDir, { recursive: true, force: true });
  }
});

const totals = (r: Rig) => r.cluster.records('totals', 0).length + r.cluster.records('totals', 1).length;

/** Forwards each record as it is. */
class Relay implements Processor<string, LinkBatch, string, LinkBatch> {
  private ctx!: ProcessorContext<string, LinkBatch>;
  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
  }
  process(record: StreamRecord<string, LinkBatch>): void {
    this.ctx.forward(record);
  }
}

/** A stateless relay whose inputs are committed before it processes them, as the fetcher's are. */
function beforeTopology(): ReturnType<typeof countTopology> {
  const topology = new Topology(APP)
    .addTopic({ name: 'words', partitions: 2, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'totals', partitions: 2, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('relay', () => new Relay() as Processor, ['words-source'], { commitInputs: 'before' })
    .addSink('totals-sink', 'totals', 'relay');
  return { topology, sub: topology.build()[0]! };
}

/** What kafkajs rejects a commit with when the coordinator's broker went away, as the producer wraps it. */
const brokerGone = () =>
  new CrawlError('CS_KAFKA', 'scripted: transaction failed: KafkaJSConnectionError Connection error', {
    cause: Object.assign(new Error('Connection error: ECONNREFUSED'), { name: 'KafkaJSConnectionError' }),
  });

test("a 'before' task's commit that meets a transient broker fault is tried again in a new transaction: its outputs, whose inputs are committed already, are not lost", async () => {
  const r = await rig(new ScriptedCluster(), tempDataDir(), beforeTopology());
  try {
    start(r);
    r.task.enqueue(words(r, [0, 1]));
    await until(() => r.task.busy() === 0 && r.task.backlog() === 0, 'the records taken and processed');
    assert.equal(totals(r), 0, 'the inputs were committed before, the outputs not yet');
    r.producer.answers.push(brokerGone(), brokerGone());
    await r.task.commit();
    assert.equal(r.lost.length, 0, 'the task goes on');
    assert.equal(totals(r), 2, 'both outputs committed once');
    const attempts = r.producer.commits.filter((c) => c.records.length > 0);
    assert.equal(attempts.length, 3, 'two failed attempts, then the one that committed');
    assert.equal(r.metrics.counter(M.commitsAborted), 0);

    // a fence is not tried again: another producer owns the id
    r.task.enqueue(words(r, [2]));
    await until(() => r.task.busy() === 0 && r.task.backlog() === 0, 'the next record processed');
    r.producer.answers.push(new CrawlError('CS_FENCED', 'scripted: another producer took the id'));
    const before = r.producer.commits.length;
    await r.task.commit();
    assert.deepEqual(
      r.lost.map((e) => e.code),
      ['CS_FENCED'],
    );
    assert.equal(r.producer.commits.length, before + 1, 'one attempt');
  } finally {
    await r.task.close(false);
    rmSync(r.dataDir, { recursive: true, force: true });
  }
});

test("an 'after' task's commit that meets a transient broker fault loses the task at once: its inputs are not committed, so the next owner makes its outputs again", async () => {
  const r = await rig();
  try {
    start(r);
    r.task.enqueue(words(r, [0]));
    await until(() => r.task.busy() === 0 && r.task.backlog() === 0, 'the record processed');
    r.producer.answers.push(brokerGone());
    await r.task.commit();
    assert.deepEqual(
      r.lost.map((e) => e.code),
      ['CS_KAFKA'],
    );
    assert.equal(r.producer.commits.length, 1, 'one attempt');
    assert.equal(r.cluster.records(CHANGELOG, ID.partition).length, 0, 'the failed transaction wrote nothing');
  } finally {
    await r.task.close(false);
    rmSync(r.dataDir, { recursive: true, force: true });
  }
});
