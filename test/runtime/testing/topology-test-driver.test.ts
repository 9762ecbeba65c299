import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { CrawlError } from '../../../core/errors.js';
import { stringSerde, type Serde } from '../../../core/serde.js';
import type { Processor, ProcessorContext } from '../../../runtime/processor.js';
import type { StreamRecord } from '../../../runtime/record.js';
import { TopologyTestDriver } from '../../../runtime/testing/topology-test-driver.js';
import { Topology } from '../../../runtime/topology.js';
import type { LinkBatch } from '../../../schemas/types.js';
import type { KeyValueStore } from '../../../state/state-store.js';
import { keyValueStore } from '../../../state/store-builder.js';

const STORE = 'word-counts';

const countSerde: Serde<number> = {
  serialize: (n) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  },
  deserialize: (b) => b.readUInt32BE(0),
};

/** Counts records per key and forwards the running count (in `discoveredAt`); every 1 s of clock, forwards a tick. */
class Counter implements Processor<string, LinkBatch, string, LinkBatch> {
  private ctx!: ProcessorContext<string, LinkBatch>;
  private store!: KeyValueStore<string, number>;

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
    this.store = context.getStateStore<KeyValueStore<string, number>>(STORE);
    context.schedule(1_000, (now) =>
      this.ctx.forward({
        key: 'tick',
        value: { site: 'tick', sourceUrl: null, discoveredAt: now, links: [] },
        timestamp: now,
      }),
    );
    context.registerQuery('count', (key) => this.store.get(key) ?? 0);
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    const n = (this.store.get(record.key) ?? 0) + 1;
    this.store.put(record.key, n);
    const value: LinkBatch = { site: record.key, sourceUrl: null, discoveredAt: n, links: [] };
    this.ctx.forward({ key: record.key, value, timestamp: record.timestamp });
  }
}

function wordCount(): Topology {
  return new Topology('wordcount')
    .addTopic({ name: 'words', partitions: 2, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'counts', partitions: 2, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('counter', () => new Counter() as Processor, ['words-source'])
    .addStateStore(keyValueStore(STORE, stringSerde, countSerde), 'counter')
    .addSink('counts-sink', 'counts', 'counter');
}

const word = (w: string): LinkBatch => ({ site: w, sourceUrl: null, discoveredAt: 0, links: [] });
const counts = (d: TopologyTestDriver) =>
  d.output<LinkBatch>('counts').map((r) => `${r.key}=${r.value!.discoveredAt}@${r.timestamp}`);

test('piped records run through the real task and its store, and sinks capture them decoded', async () => {
  const d = await TopologyTestDriver.open({ topology: wordCount(), startTime: 5_000 });
  try {
    d.pipeInput('words', 'a', word('a'));
    d.pipeInput('words', 'b', word('b'));
    d.pipeInput('words', 'a', word('a'), 7_000);
    assert.deepEqual(counts(d), ['a=1@5000', 'b=1@5000', 'a=2@7000']);
    assert.equal(d.store<KeyValueStore<string, number>>(STORE).get('a'), 2);
    assert.deepEqual(d.task.query('counter', 'count', 'a'), { value: 2 });
    // the partition is the one the topology's partitioner gives the key
    for (const r of d.output('counts')) assert.ok(r.partition === 0 || r.partition === 1);
  } finally {
    await d.close();
  }
});

test('punctuators fire only as the settable clock passes them', async () => {
  const d = await TopologyTestDriver.open({ topology: wordCount(), startTime: 0 });
  try {
    d.now = 500;
    assert.deepEqual(counts(d), [], 'setting the clock fires nothing');
    await d.advanceWallClockTime(2_500, 250);
    assert.deepEqual(counts(d), ['tick=1000@1000', 'tick=2000@2000', 'tick=3000@3000']);
    assert.equal(d.now, 3_000);
  } finally {
    await d.close();
  }
});

test('a commit writes each store change to its changelog once and makes the outputs visible', async () => {
  const d = await TopologyTestDriver.open({ topology: wordCount() });
  try {
    d.pipeInput('words', 'a', word('a'));
    d.pipeInput('words', 'a', word('a'));
    assert.equal(d.committedOutput('counts').length, 0, 'nothing is visible before a commit');
    assert.equal(d.changelog(STORE).length, 0);
    d.commit();
    assert.equal(d.committedOutput('counts').length, 2);
    // the last write per key goes to the changelog
    assert.deepEqual(
      d.changelog(STORE).map((c) => [c.key.toString(), c.value && countSerde.deserialize(c.value)]),
      [['a', 2]],
    );
    d.commit();
    assert.equal(d.changelog(STORE).length, 1, 'a commit with no change writes nothing');
  } finally {
    await d.close();
  }
});

test('a crash loses uncommitted writes and outputs and replays the uncommitted input on a new task', async () => {
  const d = await TopologyTestDriver.open({ topology: wordCount() });
  try {
    d.pipeInput('words', 'a', word('a'));
    d.commit();
    const before = d.task;
    d.pipeInput('words', 'a', word('a'));
    d.pipeInput('words', 'b', word('b'));
    await d.crash();
    assert.notEqual(d.task, before, 'a new task runs after the crash');
    assert.equal(before.state, 'closed');
    // the replayed records count from the committed state: a=2 once, not a=3
    assert.deepEqual(counts(d), ['a=1@1000000', 'a=2@1000000', 'b=1@1000000']);
    assert.equal(d.store<KeyValueStore<string, number>>(STORE).get('a'), 2);
  } finally {
    await d.close();
  }
});

test('the driver picks the sub-topology by source topic and refuses a bad choice with a clear error', async () => {
  await assert.rejects(
    TopologyTestDriver.open({ topology: wordCount(), sourceTopic: 'counts' }),
    (e: unknown) =>
      e instanceof CrawlError && e.code === 'CS_INVALID_OPTION' && /no sub-topology reads counts/.test(e.message),
  );
  await assert.rejects(
    TopologyTestDriver.open({ topology: wordCount(), partition: 2 }),
    (e: unknown) => e instanceof CrawlError && /partition 2 of 2/.test(e.message),
  );
  await assert.rejects(
    TopologyTestDriver.open({ topology: wordCount(), partition: -1 }),
    (e: unknown) => e instanceof CrawlError && /partition must be an integer ≥ 0, got -1/.test(e.message),
  );
  const d = await TopologyTestDriver.open({ topology: wordCount(), sourceTopic: 'words', partition: 1 });
  try {
    assert.equal(d.task.id.partition, 1);
    await assert.rejects(d.advanceWallClockTime(10, 0), /step must be positive, got 0/);
    assert.throws(() => d.store('no-such-store'), /store no-such-store is not a store of task/);
  } finally {
    await d.close();
  }
});

test('close removes the directory the driver made and is idempotent', async () => {
  const d = await TopologyTestDriver.open({ topology: wordCount() });
  const dir = d.directory;
  assert.ok(existsSync(dir));
  await d.close();
  await d.close();
  assert.equal(existsSync(dir), false);
});

/** Waits for each record's `release` (a promise per key the test resolves), then forwards it; a key `bad` fails. */
class Waiter implements Processor<string, LinkBatch, string, LinkBatch> {
  readonly gates = new Map<string, () => void>();
  inFlight = 0;
  maxInFlight = 0;
  private ctx!: ProcessorContext<string, LinkBatch>;

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
  }

  async process(record: StreamRecord<string, LinkBatch>): Promise<void> {
    this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight);
    try {
      await new Promise<void>((resolve) => this.gates.set(record.key, resolve));
      if (record.key === 'bad') throw new CrawlError('CS_BAD_URL', 'a bad record');
      if (record.key === 'bug') throw new CrawlError('CS_TOPOLOGY', 'a topology bug');
      this.ctx.forward({ key: record.key, value: record.value, timestamp: record.timestamp });
    } finally {
      this.inFlight--;
    }
  }
}

function waiting(commitInputs: 'before' | 'after', concurrency: number): Topology {
  return new Topology('waiting')
    .addTopic({ name: 'in', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'out', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('in-source', 'in')
    .addProcessor('waiter', () => new Waiter() as Processor, ['in-source'], {
      commitInputs,
      ...(commitInputs === 'before' ? { concurrency } : { lookahead: concurrency }),
    })
    .addSink('out-sink', 'out', 'waiter');
}

/** Opens every gate as it appears, last key first, until `done` settles. */
async function releaseAll(w: Waiter, done: Promise<unknown>): Promise<void> {
  let finished = false;
  void done.then(
    () => (finished = true),
    () => (finished = true),
  );
  while (!finished) {
    await new Promise((r) => setImmediate(r));
    const keys = [...w.gates.keys()].reverse();
    for (const k of keys) {
      w.gates.get(k)!();
      w.gates.delete(k);
    }
  }
}

for (const commitInputs of ['before', 'after'] as const) {
  test(`pipeInputs runs the engines' record loop (${commitInputs}): up to 3 in flight, a failing record dead-lettered, the rest processed`, async () => {
    const d = await TopologyTestDriver.open({ topology: waiting(commitInputs, 3) });
    try {
      const w = d.processor<Waiter>('waiter');
      const keys = ['a', 'b', 'bad', 'c', 'd', 'e', 'f'];
      const done = d.pipeInputs(
        'in',
        keys.map((k) => ({ key: k, value: word(k) })),
      );
      await releaseAll(w, done);
      await done;
      assert.equal(w.maxInFlight, 3, 'the loop kept 3 records in flight, no more');
      assert.equal(w.inFlight, 0, 'pipeInputs resolved before every record had finished');
      assert.deepEqual(
        d
          .output('out')
          .map((r) => r.key)
          .sort(),
        ['a', 'b', 'c', 'd', 'e', 'f'],
      );
      assert.deepEqual(
        d.deadLetters().map((l) => [l.key.toString(), l.headers['x-error-code'], l.headers['x-source']]),
        [['bad', 'CS_BAD_URL', 'in-0@2']],
      );
      assert.equal(d.metrics.total('dead_letters'), 1);
    } finally {
      await d.close();
    }
  });
}

test('pipeInputs rejects with a topology error, as an engine stops on one, once the records in flight have finished', async () => {
  const d = await TopologyTestDriver.open({ topology: waiting('before', 2) });
  try {
    const w = d.processor<Waiter>('waiter');
    const done = d.pipeInputs(
      'in',
      ['bug', 'a'].map((k) => ({ key: k, value: word(k) })),
    );
    await releaseAll(w, done);
    await assert.rejects(done, (e: unknown) => e instanceof CrawlError && e.code === 'CS_TOPOLOGY');
    assert.equal(w.inFlight, 0);
    assert.deepEqual(d.deadLetters(), [], 'a topology error is no dead letter');
  } finally {
    await d.close();
  }
});

test('processor() hands out the running task’s instance, and refuses an unknown name', async () => {
  const d = await TopologyTestDriver.open({ topology: wordCount() });
  try {
    const counter = d.processor<Counter>('counter');
    assert.ok(counter instanceof Counter);
    await d.crash();
    assert.notEqual(d.processor<Counter>('counter'), counter, 'a crash brings a new instance');
    assert.throws(
      () => d.processor('no-such-processor'),
      (e: unknown) =>
        e instanceof CrawlError && e.code === 'CS_TOPOLOGY' && /no processor no-such-processor/.test(e.message),
    );
  } finally {
    await d.close();
  }
});

test('a bench driver takes raw records in and out, keeps neither outputs nor changelogs, and still commits', async () => {
  const raw: string[] = [];
  const d = await TopologyTestDriver.open({
    topology: wordCount(),
    captureOutputs: false,
    keepChangelogs: false,
    onRawOutput: (topic, r) =>
      raw.push(`${topic} ${r.key.toString()}=${d.decodeValue<LinkBatch>(topic, r.value!).discoveredAt}`),
  });
  try {
    const record = d.encode('words', 'a', word('a'));
    assert.equal(record.offset, 0);
    d.pipeRawInput(record);
    d.pipeInput('words', 'a', word('a'));
    d.commit();
    assert.deepEqual(raw, ['counts a=1', 'counts a=2']);
    assert.deepEqual(d.output('counts'), [], 'outputs are not captured');
    assert.deepEqual(d.changelog(STORE), [], 'changelogs are not kept');
    // the commit applied the writes: a crash keeps them and replays nothing
    await d.crash();
    assert.equal(d.store<KeyValueStore<string, number>>(STORE).get('a'), 2);
    d.pipeInput('words', 'a', word('a'));
    d.commit();
    assert.deepEqual(raw, ['counts a=1', 'counts a=2', 'counts a=3']);
    assert.ok(Number(d.dbProperty('rocksdb.estimate-num-keys')) >= 0, 'a RocksDB property is read');
  } finally {
    await d.close();
  }
});
