import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { Metrics } from '../../core/metrics.js';
import { DeadLetters } from '../../runtime/dead-letter.js';
import { TaskManager } from '../../runtime/engines/kafka/task-manager.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { rangeKey } from '../../runtime/changelog-source.js';
import { brokerFault, whileHeartbeating } from '../../runtime/engines/kafka/task-slot.js';
import type { EngineState } from '../../runtime/engine-base.js';
import type { ConsumedRawRecord } from '../../runtime/record.js';
import { buildSerdes, type SerdeSet } from '../../runtime/serdes.js';
import type { Subtopology } from '../../runtime/topology.js';
import { MemoryRegistry } from '../../schemas/memory-registry.js';
import {
  CHANGELOG,
  Held,
  ScriptedCluster,
  ScriptedConsumer,
  ScriptedTaskPort,
  countTopology,
  tempDataDir,
  until,
} from './scripted-port.js';

const GROUP = 'scripted-counter';

test('whileHeartbeating heartbeats while the opening is pending and hands over its value or its error', async () => {
  let beats = 0;
  const slow = new Promise<string>((r) => setTimeout(() => r('task'), 60));
  assert.equal(await whileHeartbeating(slow, () => Promise.resolve(void beats++), 10), 'task');
  assert.ok(beats > 0, 'a pending opening keeps the membership alive');
  const failing = new Promise<string>((_, reject) => setTimeout(() => reject(new Error('open failed')), 30));
  await assert.rejects(
    whileHeartbeating(failing, () => Promise.resolve(), 10),
    /open failed/,
  );
  // a rebalance under way: the heartbeat throws, and so does the wait (kafkajs abandons the batch)
  await assert.rejects(
    whileHeartbeating(new Promise(() => undefined), () => Promise.reject(new Error('rebalancing')), 10),
    /rebalancing/,
  );
});

test('a broker fault is CS_KAFKA, CS_FENCED or an unwrapped kafkajs error; anything else is not', () => {
  assert.equal(brokerFault(new CrawlError('CS_KAFKA', 'x')), true);
  assert.equal(brokerFault(new CrawlError('CS_FENCED', 'x')), true);
  assert.equal(brokerFault(new CrawlError('CS_STORE', 'x')), false);
  const connection = Object.assign(new Error('Connection refused'), { name: 'KafkaJSConnectionError' });
  assert.equal(brokerFault(connection), true);
  assert.equal(brokerFault(new TypeError('a bug')), false);
  assert.equal(brokerFault(undefined), false);
});

interface Member {
  readonly manager: TaskManager;
  readonly port: ScriptedTaskPort;
  readonly consumer: ScriptedConsumer;
  readonly cluster: ScriptedCluster;
  readonly sub: Subtopology;
  readonly failures: unknown[];
  readonly lines: string[];
  readonly serdes: SerdeSet;
  state: EngineState;
  readonly dataDir: string;
}

async function member(
  cluster = new ScriptedCluster(),
  timing: { orphanCheckMs?: number; handoverGraceMs?: number } = {},
): Promise<Member> {
  const { topology, sub } = countTopology();
  const serdes = await buildSerdes(topology, new MemoryRegistry());
  const port = new ScriptedTaskPort(cluster, GROUP);
  const consumer = new ScriptedConsumer();
  const lines: string[] = [];
  const failures: unknown[] = [];
  const dataDir = tempDataDir();
  const m: Member = {
    port,
    consumer,
    cluster,
    sub,
    failures,
    lines,
    serdes,
    state: 'running',
    dataDir,
    manager: undefined as unknown as TaskManager,
  };
  (m as { manager: TaskManager }).manager = new TaskManager({
    topology,
    dataDir,
    commitIntervalMs: 20,
    deadLetters: new DeadLetters('scripted-dead-letters', Infinity, new Metrics(), () => undefined),
    serdes,
    metrics: new Metrics(),
    logger: createLogger({ level: 'info', write: (l) => lines.push(l) }),
    port,
    groupIdOf: () => GROUP,
    transactionalIdOf: (s, p) => `scripted-${s.id}_${p}`,
    consumerOf: () => consumer,
    engineState: () => m.state,
    fail: (err) => failures.push(err),
    onRestored: () => undefined,
    ...timing,
  });
  return m;
}

async function stop(m: Member): Promise<void> {
  m.state = 'stopping';
  await m.manager.closeAll(false);
  rmSync(m.dataDir, { recursive: true, force: true });
}

function words(m: Member, offsets: number[]): ConsumedRawRecord[] {
  return offsets.map((offset) => ({
    topic: 'words',
    partition: 1,
    offset,
    key: Buffer.from('a'),
    value: m.serdes.value('words').serialize({ site: 'a', sourceUrl: null, discoveredAt: 0, links: [] }),
    timestamp: 1,
  }));
}

const count = (m: Member): number | undefined =>
  (m.manager.slot(0, 1)?.task?.task.stores.get('counts') as unknown as { get(k: string): number | undefined }).get('a');

test('an assigned partition opens fenced first, then reads its committed offsets, restores its changelog and runs', async () => {
  const cluster = new ScriptedCluster();
  cluster.append([{ topic: CHANGELOG, partition: 1, key: Buffer.from('a'), value: Buffer.from('5'), timestamp: 1 }]);
  const m = await member(cluster);
  try {
    m.manager.assign(m.sub, new Set([1]));
    const task = await m.manager.slot(0, 1)!.opening;
    assert.ok(task, 'the task opened');
    assert.deepEqual(m.port.calls, ['fence scripted-0_1', 'committed 0_1']);
    assert.equal(task.task.state, 'running');
    assert.equal(count(m), 5, 'restored from the changelog');
    assert.deepEqual(m.consumer.calls, ['resume words-1']);
    assert.deepEqual(m.manager.counts(), { tasks: 1, restoring: 0 });
    assert.ok(m.manager.idle());
  } finally {
    await stop(m);
  }
});

test('a rebalance mid-commit: the revoked task fails its last commit, closes without a rejoin, and its successor redoes the work', async () => {
  const m = await member();
  try {
    m.manager.assign(m.sub, new Set([1]));
    const task = (await m.manager.slot(0, 1)!.opening)!;
    const producer = m.port.producers[0]!;
    const held = new Held<void>();
    producer.answers.push(held);
    task.enqueue(words(m, [0, 1]));
    await until(() => producer.commits.length === 1, 'a commit under way');
    // the partition is revoked while that commit is in flight
    m.manager.assign(m.sub, new Set());
    assert.equal(m.manager.slot(0, 1), undefined, 'the slot goes at once');
    // its successor fences it: the commit fails
    held.reject(new CrawlError('CS_FENCED', 'scripted: fenced by the new owner'));
    await until(() => producer.closed, 'the revoked task closed');
    assert.ok(
      m.lines.some((l) => /revoked task 0_1 could not commit \(CS_FENCED\)/.test(l)),
      m.lines.join('\n'),
    );
    assert.equal(m.cluster.records(CHANGELOG, 1).length, 0, 'nothing of the fenced transaction is visible');
    // assigned back: a new task restores only what was committed (nothing) and processes the records again
    m.manager.assign(m.sub, new Set([1]));
    const again = (await m.manager.slot(0, 1)!.opening)!;
    assert.notEqual(again, task);
    assert.equal(count(m), undefined);
    again.enqueue(words(m, [0, 1]));
    await until(() => m.cluster.records(CHANGELOG, 1).length === 1, 'the successor committed');
    assert.equal(count(m), 2);
    assert.equal(m.consumer.rejoins, 0, 'a revoked task never makes the member rejoin');
    assert.ok(!m.consumer.calls.includes('pause words-1'));
    assert.deepEqual(m.failures, []);
  } finally {
    await stop(m);
  }
});

test('a partition assigned back while its revoked task still closes waits for that close, then restores what it committed', async () => {
  const m = await member();
  try {
    m.manager.assign(m.sub, new Set([1]));
    const task = (await m.manager.slot(0, 1)!.opening)!;
    const producer = m.port.producers[0]!;
    task.enqueue(words(m, [0, 1]));
    await until(() => m.cluster.records(CHANGELOG, 1).length === 1, 'the first commit');
    // the next commit hangs: the revoked task's close waits for it, its RocksDB still open
    const held = new Held<void>();
    producer.answers.push(held);
    task.enqueue(words(m, [2]));
    await until(() => producer.commits.length === 2, 'a commit under way');
    m.manager.assign(m.sub, new Set());
    m.manager.assign(m.sub, new Set([1]));
    // the reopening reaches the RocksDB while the revoked task holds it: it must wait, not fail
    await until(
      () => m.failures.length > 0 || m.lines.some((l) => /task 0_1 waits for its previous opening or closing/.test(l)),
      'the reopening to wait or fail',
    );
    assert.deepEqual(m.failures, [], 'a reopening never fails on its own previous owner');
    held.reject(new CrawlError('CS_FENCED', 'scripted: fenced by the new owner'));
    const again = (await m.manager.slot(0, 1)!.opening)!;
    assert.ok(again, 'the partition reopened');
    assert.notEqual(again, task);
    assert.equal(producer.closed, true, 'the revoked task closed first');
    assert.equal(count(m), 2, 'what the revoked task committed, restored; its fenced commit not');
    assert.deepEqual(m.failures, []);
  } finally {
    await stop(m);
  }
});

test('task directories of partitions this member no longer holds are removed once unused for the cleanup delay', async () => {
  const m = await member();
  const directory = new TaskDirectory(m.dataDir);
  // as if nothing had touched the task directory for `ms`: every file and directory in it dated back
  const unusedFor = (name: string, ms: number): void => {
    const then = new Date(Date.now() - ms);
    const dir = join(directory.root, name);
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((n) => join(dir, n));
    for (const path of [...files, dir]) utimesSync(path, then, then);
  };
  try {
    // a directory left by a task of another sub-topology, unused for an hour
    mkdirSync(join(directory.root, '3_0', 'rocksdb'), { recursive: true });
    unusedFor('3_0', 3_600_000);
    m.manager.assign(m.sub, new Set([0, 1]));
    assert.ok(await m.manager.slot(0, 0)!.opening);
    assert.ok(await m.manager.slot(0, 1)!.opening);
    // partition 0 moves to another member; its directory stays until it has been unused for the delay
    m.manager.assign(m.sub, new Set([1]));
    await until(() => m.port.producers[0]!.closed, 'the revoked task closed');
    assert.deepEqual(m.manager.cleanUp(60_000), ['3_0'], 'only the long-unused directory goes');
    assert.deepEqual(directory.localPartitions(0).sort(), [0, 1]);
    unusedFor('0_0', 120_000);
    unusedFor('0_1', 120_000);
    assert.deepEqual(m.manager.cleanUp(60_000), ['0_0'], 'the held partition stays, however old its files');
    assert.deepEqual(directory.localPartitions(0), [1]);
    assert.deepEqual(directory.localPartitions(3), []);
    assert.ok(
      m.lines.some((l) => /removed the local state of task 0_0: not assigned/.test(l)),
      m.lines.join('\n'),
    );
    assert.deepEqual(m.failures, []);
  } finally {
    await stop(m);
  }
});

test('local state unused for longer than its changelog keeps a delete is wiped and restored, not trusted from its checkpoint', async () => {
  const m = await member();
  const directory = new TaskDirectory(m.dataDir);
  m.cluster.deleteRetentionMs = 60_000;
  const reopen = async (): Promise<void> => {
    m.manager.assign(m.sub, new Set());
    await until(() => m.port.producers.every((p) => p.closed), 'the revoked task closed');
    m.manager.assign(m.sub, new Set([1]));
    assert.ok(await m.manager.slot(0, 1)!.opening, 'the partition reopened');
  };
  try {
    m.manager.assign(m.sub, new Set([1]));
    const task = (await m.manager.slot(0, 1)!.opening)!;
    task.enqueue(words(m, [0]));
    await until(() => m.cluster.records(CHANGELOG, 1).length === 1, 'the commit of a=1');
    // used a moment ago: its checkpoint is trusted, the restore reads only what lies past it
    await reopen();
    assert.equal(count(m), 1);
    assert.equal(m.cluster.reads.at(-1)?.[0]?.from, 1, 'from its checkpoint, past the record committed');
    m.manager.assign(m.sub, new Set());
    await until(() => m.port.producers.every((p) => p.closed), 'the revoked task closed');
    // another member deleted a; compaction then removed a's record and, past delete.retention.ms, the tombstone
    m.cluster.append([{ topic: CHANGELOG, partition: 1, key: Buffer.from('a'), value: null, timestamp: 2 }]);
    m.cluster.logs.set(rangeKey(CHANGELOG, 1), []);
    // and this member's copy went unused for longer than that
    const then = new Date(Date.now() - 120_000);
    const dir = join(directory.root, '0_1');
    for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) utimesSync(join(dir, name), then, then);
    utimesSync(dir, then, then);
    // a replay opens the copy meanwhile: RocksDB's files are new, yet no owner followed the changelog
    const db = await directory.task({ subtopology: 0, partition: 1 }).openLive();
    await db.close();
    m.manager.assign(m.sub, new Set([1]));
    assert.ok(await m.manager.slot(0, 1)!.opening, 'the partition reopened');
    assert.equal(count(m), undefined, 'the deleted key stays deleted');
    assert.equal(m.cluster.reads.at(-1)?.[0]?.from, 0, 'restored from the changelog start');
    assert.ok(
      m.lines.some((l) =>
        /task 0_1: its local state was last used 1\d\d s ago.*delete\.retention\.ms 60000.*wiped/.test(l),
      ),
      m.lines.join('\n'),
    );
    assert.deepEqual(m.failures, []);
  } finally {
    await stop(m);
  }
});

test('a live task whose commit is fenced is dropped: its partition pauses and the member joins its group again', async () => {
  const m = await member();
  try {
    m.manager.assign(m.sub, new Set([1]));
    const task = (await m.manager.slot(0, 1)!.opening)!;
    m.port.producers[0]!.answers.push(new CrawlError('CS_FENCED', 'scripted: another member took the partition'));
    task.enqueue(words(m, [0]));
    await until(() => m.consumer.rejoins === 1, 'the rejoin');
    assert.equal(m.manager.slot(0, 1), undefined);
    assert.ok(m.consumer.calls.includes('pause words-1'));
    assert.ok(
      m.lines.some((l) => /task 0_1 lost \(CS_FENCED\).*joins its group again/.test(l)),
      m.lines.join('\n'),
    );
    assert.deepEqual(m.failures, [], 'lost, not fatal');
  } finally {
    await stop(m);
  }
});

test('a broker fault while a task opens pauses and rejoins; any other fault fails the engine', async () => {
  const m = await member();
  try {
    m.port.openFaults.push(new CrawlError('CS_KAFKA', 'scripted: connection refused'));
    m.manager.assign(m.sub, new Set([1]));
    assert.equal(await m.manager.slot(0, 1)!.opening, undefined);
    await until(() => m.consumer.rejoins === 1, 'the rejoin');
    assert.ok(m.consumer.calls.includes('pause words-1'));
    assert.deepEqual(m.failures, []);
    m.port.openFaults.push(new CrawlError('CS_STORE', 'scripted: disk full'));
    m.manager.assign(m.sub, new Set([1]));
    assert.equal(await m.manager.slot(0, 1)!.opening, undefined);
    assert.deepEqual(
      m.failures.map((e) => (e as CrawlError).code),
      ['CS_STORE'],
    );
  } finally {
    await stop(m);
  }
});

test('a partition left without a task after a rejoin that brought no new assignment makes the member join again', async () => {
  const m = await member(new ScriptedCluster(), { orphanCheckMs: 100 });
  try {
    m.port.openFaults.push(new CrawlError('CS_KAFKA', 'scripted: connection refused'));
    m.manager.assign(m.sub, new Set([1]));
    assert.equal(await m.manager.slot(0, 1)!.opening, undefined);
    await until(() => m.consumer.rejoins === 1, 'the rejoin after the failed opening');
    // the scripted rejoin assigns nothing, as one that kafkajs' own rejoin overtook: partition 1
    // is still this member's, without a task, paused
    await until(() => m.consumer.rejoins === 2, 'a rejoin for the partition without a task');
    assert.ok(
      m.lines.some((l) => l.includes('task 0_1 is assigned to this member but has no task')),
      m.lines.join('\n'),
    );
    // assigned again: it opens, and no more rejoins are asked for
    m.manager.assign(m.sub, new Set([1]));
    assert.ok(await m.manager.slot(0, 1)!.opening, 'opened');
    const rejoins = m.consumer.rejoins;
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(m.consumer.rejoins, rejoins, 'a member whose partitions all have tasks stays');
    assert.deepEqual(m.failures, []);
  } finally {
    await stop(m);
  }
});

test('an opening that fails after its partition was revoked and assigned again leaves the new task running, unpaused', async () => {
  const m = await member(new ScriptedCluster(), { handoverGraceMs: 10 });
  try {
    const late = new Held<void>();
    m.port.openFaults.push(late);
    m.manager.assign(m.sub, new Set([1]));
    const first = m.manager.slot(0, 1)!;
    await until(() => m.port.calls.includes('fence scripted-0_1'), 'the first opening at its fence');
    // a rebalance revokes the partition and the next gives it back: a new slot opens and runs
    m.manager.assign(m.sub, new Set());
    m.manager.assign(m.sub, new Set([1]));
    const second = m.manager.slot(0, 1)!;
    assert.notEqual(second, first);
    assert.ok(await second.opening, 'the new task runs');
    const calls = m.consumer.calls.length;
    // now the first opening's fence fails (a broker fault): it concerns a slot that is gone
    late.reject(new CrawlError('CS_KAFKA', 'scripted: connection reset'));
    assert.equal(await first.opening, undefined);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.deepEqual(m.consumer.calls.slice(calls), [], "the running task's partition was paused");
    assert.equal(m.consumer.rejoins, 0);
    assert.equal(m.manager.slot(0, 1), second);
    assert.deepEqual(m.failures, []);
  } finally {
    await stop(m);
  }
});

test('a restore cut short by a broker fault leaves nothing open and resumes after the rejoin; a stop mid-opening closes unused', async () => {
  const cluster = new ScriptedCluster();
  for (let i = 0; i < 10; i++)
    cluster.append([
      { topic: CHANGELOG, partition: 1, key: Buffer.from('a'), value: Buffer.from(String(i)), timestamp: 1 },
    ]);
  const m = await member(cluster);
  try {
    cluster.crashAfterBatches = 1;
    cluster.batch = 1;
    m.manager.assign(m.sub, new Set([1]));
    assert.equal(await m.manager.slot(0, 1)!.opening, undefined, 'the restore failed');
    assert.equal(m.port.producers[0]!.closed, true, 'the fencing producer is closed');
    // a broker fault: the member rejoins, and the task opens again from where the restore stopped
    cluster.crashAfterBatches = undefined;
    await until(() => m.consumer.rejoins === 1, 'the rejoin');
    m.manager.assign(m.sub, new Set([1]));
    const task = await m.manager.slot(0, 1)!.opening;
    assert.ok(task);
    assert.equal(count(m), 9);
    // a stop while a task opens: it closes unused, and its producer too
    m.manager.assign(m.sub, new Set([0, 1]));
    m.state = 'stopping'; // before the opening's first step has answered
    assert.equal(await m.manager.slot(0, 0)!.opening, undefined);
    assert.equal(m.port.producers.at(-1)!.closed, true);
    assert.deepEqual(m.failures, []);
  } finally {
    await stop(m);
  }
});
