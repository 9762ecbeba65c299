import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCrawlError } from '../../core/errors.js';
import { Metrics } from '../../core/metrics.js';
import { stringSerde } from '../../core/serde.js';
import type { Processor } from '../../runtime/processor.js';
import type { ConsumedRawRecord } from '../../runtime/record.js';
import { buildSerdes } from '../../runtime/serdes.js';
import { StreamTask } from '../../runtime/task.js';
import { TASK_MOVES, TaskLifecycle, type TaskState } from '../../runtime/task-lifecycle.js';
import { Topology } from '../../runtime/topology.js';
import { MemoryRegistry } from '../../schemas/memory-registry.js';

const STATES: TaskState[] = ['created', 'restoring', 'running', 'suspended', 'closed'];

function refusal(from: TaskState, to: TaskState) {
  return (err: unknown): boolean =>
    isCrawlError(err) && err.code === 'CS_INTERNAL' && err.message === `task 0_1 cannot move from ${from} to ${to}`;
}

/** A lifecycle brought to `state` by legal moves. */
function at(state: TaskState): TaskLifecycle {
  const l = new TaskLifecycle('0_1');
  const path: Record<TaskState, TaskState[]> = {
    created: [],
    restoring: ['restoring'],
    running: ['restoring', 'running'],
    suspended: ['restoring', 'running', 'suspended'],
    closed: ['closed'],
  };
  for (const s of path[state]) l.to(s);
  return l;
}

test('a task lives created → restoring → running → suspended → closed, and each state records when it was entered', () => {
  const l = new TaskLifecycle('0_1');
  assert.equal(l.state, 'created');
  for (const s of ['restoring', 'running', 'suspended', 'closed'] as const) {
    l.to(s);
    assert.equal(l.state, s);
    assert.ok(typeof l.enteredAt(s) === 'number');
  }
});

test('every move outside the table is refused with CS_INTERNAL naming both states, and leaves the state as it was', () => {
  let refused = 0;
  for (const from of STATES) {
    for (const to of STATES) {
      const l = at(from);
      if (TASK_MOVES[from].includes(to)) {
        l.to(to);
        assert.equal(l.state, to);
        continue;
      }
      assert.throws(() => l.to(to), refusal(from, to));
      assert.equal(l.state, from);
      assert.equal(at(from).tryTo(to), false);
      refused++;
    }
  }
  // among them: a running task never restores again, a closed one never reopens, a suspended one never resumes
  assert.equal(refused, 25 - Object.values(TASK_MOVES).reduce((n, m) => n + m.length, 0));
  assert.throws(() => at('running').to('restoring'), refusal('running', 'restoring'));
  assert.throws(() => at('closed').to('running'), refusal('closed', 'running'));
  assert.throws(() => at('suspended').to('running'), refusal('suspended', 'running'));
});

class Recorder implements Processor<string, unknown, string, unknown> {
  static events: string[] = [];
  init(): void {
    Recorder.events.push('init');
  }
  process(): void {
    Recorder.events.push('process');
  }
  close(): void {
    Recorder.events.push('close');
  }
}

async function task(lifecycle?: TaskLifecycle): Promise<StreamTask> {
  const topology = new Topology('lifecycle')
    .addTopic({ name: 'in', partitions: 2, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('in-source', 'in')
    .addProcessor('recorder', () => new Recorder() as Processor, ['in-source']);
  const sub = topology.build()[0]!;
  const serdes = await buildSerdes(topology, new MemoryRegistry());
  return new StreamTask(
    { subtopology: 0, partition: 1 },
    sub,
    topology,
    { send: () => undefined },
    new Map(),
    serdes,
    new Metrics(),
    Date.now,
    undefined,
    lifecycle,
  );
}

async function record(t: StreamTask): Promise<ConsumedRawRecord> {
  const serdes = await buildSerdes(t.topology, new MemoryRegistry());
  return {
    topic: 'in',
    partition: 1,
    offset: 0,
    key: Buffer.from('k'),
    value: serdes.value('in').serialize({ site: 'a.test', sourceUrl: null, discoveredAt: 1, links: [] }),
    timestamp: 1,
  };
}

test('a StreamTask processes and punctuates only while running; init runs once; close is idempotent and closes only processors that ran', async () => {
  Recorder.events = [];
  const lifecycle = new TaskLifecycle('0_1');
  lifecycle.to('restoring');
  const t = await task(lifecycle);
  assert.equal(t.state, 'restoring', "the task takes the engine's lifecycle as it is");
  const raw = await record(t);
  assert.throws(
    () => t.process(raw),
    (err: unknown) =>
      isCrawlError(err) && err.code === 'CS_INTERNAL' && /is restoring: it processes no records/.test(err.message),
  );
  let punctuated = 0;
  t.schedule(1, () => void punctuated++);
  assert.equal(t.punctuate(Date.now() + 10).length, 0);
  t.init();
  assert.throws(() => t.init(), refusal('running', 'running'));
  t.process(raw);
  t.punctuate(Date.now() + 10);
  assert.equal(punctuated, 1);
  t.suspend();
  assert.equal(t.state, 'suspended');
  assert.throws(() => t.process(raw), /is suspended/);
  t.punctuate(Date.now() + 1_000);
  assert.equal(punctuated, 1, 'a suspended task punctuated');
  await t.close();
  await t.close();
  assert.equal(t.state, 'closed');
  assert.deepEqual(Recorder.events, ['init', 'process', 'close']);

  // closed before it ran: no processor was initialized, none is closed
  Recorder.events = [];
  const unused = await task();
  await unused.close();
  assert.equal(unused.state, 'closed');
  assert.deepEqual(Recorder.events, []);
});
