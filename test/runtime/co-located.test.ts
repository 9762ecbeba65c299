import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics } from '../../core/metrics.js';
import { stringSerde } from '../../core/serde.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import { buildSerdes } from '../../runtime/serdes.js';
import { StreamTask } from '../../runtime/task.js';
import { Topology } from '../../runtime/topology.js';
import { MemoryRegistry } from '../../schemas/memory-registry.js';

/** Takes its processor's shared counter at init and bumps it. */
class Sharer implements Processor<string, unknown, string, unknown> {
  shared: { count: number } | undefined;
  other: { count: number } | undefined;
  here: { count: number } | undefined;
  init(context: ProcessorContext<string, unknown>): void {
    this.here = context.inProcess('here', () => ({ count: 0 }));
    this.here.count++;
    this.shared = context.coLocated('counter', () => ({ count: 0 }));
    if (this.shared) this.shared.count++;
    this.other = context.coLocated('other', () => ({ count: 100 }));
  }
  process(): void {}
}

async function tasks(coLocated: Map<string, unknown> | undefined, inProcess?: Map<string, unknown>): Promise<Sharer[]> {
  const sharers: Sharer[] = [];
  const topology = new Topology('co-located')
    .addTopic({ name: 'in', partitions: 3, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('in-source', 'in')
    .addProcessor('sharer', () => sharers[sharers.push(new Sharer()) - 1] as Processor, ['in-source']);
  const sub = topology.build()[0]!;
  const serdes = await buildSerdes(topology, new MemoryRegistry());
  for (let partition = 0; partition < 3; partition++)
    new StreamTask(
      { subtopology: sub.id, partition },
      sub,
      topology,
      { send: () => undefined },
      new Map(),
      serdes,
      new Metrics(),
      Date.now,
      undefined,
      undefined,
      coLocated,
      inProcess,
    ).init();
  return sharers;
}

test('coLocated gives the tasks of every partition one object per key when the engine shares, and nothing when it does not', async () => {
  const shared = await tasks(new Map());
  assert.equal(shared.length, 3);
  assert.ok(
    shared.every((s) => s.shared === shared[0]!.shared),
    'one object for the three partitions',
  );
  assert.equal(shared[0]!.shared!.count, 3, 'made once, by the first task to ask');
  assert.notEqual(shared[0]!.other, shared[0]!.shared, 'another key, another object');

  const alone = await tasks(undefined);
  assert.ok(
    alone.every((s) => s.shared === undefined && s.other === undefined),
    'no engine map: undefined (Kafka, the driver)',
  );
});

test('inProcess gives the tasks one object per key when the engine gives a map (both engines), and each task its own when not (the driver)', async () => {
  const kafkaLike = await tasks(undefined, new Map());
  assert.ok(
    kafkaLike.every((s) => s.here === kafkaLike[0]!.here && s.shared === undefined),
    'shared in the process, not co-located',
  );
  assert.equal(kafkaLike[0]!.here!.count, 3);
  const alone = await tasks(undefined);
  assert.equal(new Set(alone.map((s) => s.here)).size, 3, 'a task without the map has its own');
  assert.ok(alone.every((s) => s.here!.count === 1));
});
