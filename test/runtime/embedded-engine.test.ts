import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../core/logger.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { EmbeddedLog } from '../../runtime/engines/embedded/log-store.js';
import { readTopic } from '../../runtime/engines/embedded/topic-reader.js';
import { partitionFor } from '../../runtime/partitioner.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { Topology, type ProcessorOptions } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import { openRocks } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import { type KeyValueStore } from '../../state/state-store.js';
import { stringSerde, type Serde } from '../../core/serde.js';
import { keyValueStore } from '../../state/store-builder.js';

const APP = 'wordcount';
const STORE = 'word-counts';
const CHANGELOG = `${APP}-${STORE}-changelog`;
const PARTITIONS = 2;

const countSerde: Serde<number> = {
  serialize: (n) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  },
  deserialize: (b) => b.readUInt32BE(0),
};

/** Counts records per key; forwards the running count in `discoveredAt`. */
class Counter implements Processor<string, LinkBatch, string, LinkBatch> {
  private ctx!: ProcessorContext<string, LinkBatch>;
  private store!: KeyValueStore<string, number>;

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
    this.store = context.getStateStore<KeyValueStore<string, number>>(STORE);
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    const n = (this.store.get(record.key) ?? 0) + 1;
    this.store.put(record.key, n);
    this.ctx.forward({
      key: record.key,
      value: { site: record.key, sourceUrl: null, discoveredAt: n, links: [] },
      timestamp: record.timestamp,
    });
  }
}

function wordCount(): Topology {
  return new Topology(APP)
    .addTopic({ name: 'words', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'counts', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('counter', () => new Counter() as Processor, ['words-source'])
    .addStateStore(keyValueStore(STORE, stringSerde, countSerde), 'counter')
    .addSink('counts-sink', 'counts', 'counter');
}

const word = (w: string): StreamRecord<string, LinkBatch> => ({
  key: w,
  value: { site: w, sourceUrl: null, discoveredAt: 1, links: [] },
  timestamp: 1_700_000_000_000,
});

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-engine-'));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits for idle; the bound only turns a hang into a failure, it is no speed requirement. */
async function untilIdle(engine: EmbeddedEngine, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!engine.isIdle()) {
    if (Date.now() > deadline) throw new Error('engine did not become idle');
    await sleep(5);
  }
}

/** Starts an engine on dir, produces the words, waits for idle, stops; returns the engine's log lines. */
async function run(dir: string, words: string[], topology = wordCount(), pollBytes?: number): Promise<string[]> {
  const lines: string[] = [];
  const engine = new EmbeddedEngine(topology, {
    dataDir: dir,
    commitIntervalMs: 20,
    ...(pollBytes !== undefined ? { pollBytes } : {}),
    logger: createLogger({ write: (l) => lines.push(l) }),
  });
  await engine.start();
  try {
    if (words.length > 0) await engine.produce('words', words.map(word));
    await untilIdle(engine);
  } finally {
    await engine.stop();
  }
  await engine.done;
  return lines;
}

/** Every count emitted, per word, in order. */
async function countsByWord(dir: string): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  await readTopic(dir, 'counts', (r) => (out[r.key] ??= []).push((r.value as LinkBatch).discoveredAt));
  return out;
}

/** The committed entries of the counting store of each task, read from its RocksDB with the engine stopped. */
async function storeEntries(dir: string): Promise<string[][]> {
  const result: string[][] = [];
  for (let p = 0; p < PARTITIONS; p++) {
    const db = await openRocks(new TaskDirectory(dir).task({ subtopology: 0, partition: p }).live);
    try {
      const store = new RocksKeyValueStore(STORE, db, stringSerde, countSerde);
      result.push([...store.entries()].map(([k, v]) => `${k.toString()}=${countSerde.deserialize(v)}`));
    } finally {
      await db.close();
    }
  }
  return result;
}

/** A replay of each changelog partition: last value per key, deletes removing it, in key order. */
async function changelogReplay(dir: string): Promise<string[][]> {
  const log = await EmbeddedLog.open(path.join(dir, 'log'));
  try {
    log.ensureTopic(CHANGELOG, PARTITIONS);
    const result: string[][] = [];
    for (let p = 0; p < PARTITIONS; p++) {
      const state = new Map<string, number>();
      for (const r of log.read(CHANGELOG, p, 0, 100_000)) {
        if (r.value === null) state.delete(r.key.toString());
        else state.set(r.key.toString(), countSerde.deserialize(r.value));
      }
      result.push(
        [...state].sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b))).map(([k, v]) => `${k}=${v}`),
      );
    }
    return result;
  } finally {
    await log.close();
  }
}

test('a stateful topology emits exact outputs and commits its input positions', async () => {
  const dir = tempDir();
  try {
    await run(dir, ['a', 'b', 'a', 'c', 'a', 'b']);
    assert.deepEqual(await countsByWord(dir), { a: [1, 2, 3], b: [1, 2], c: [1] });
    // `counts` has no consumer: retention keeps it, so its records are written once, beside RocksDB
    const kept = path.join(dir, 'log', 'kept');
    const keptBytes = fs.readdirSync(kept).reduce((sum, f) => sum + fs.statSync(path.join(kept, f)).size, 0);
    assert.ok(keptBytes > 0, 'the kept segments hold the counts');
    const log = await EmbeddedLog.open(path.join(dir, 'log'));
    try {
      for (let p = 0; p < PARTITIONS; p++) {
        log.ensureTopic('words', PARTITIONS);
        assert.equal(log.committedPosition(`${APP}:words`, 'words', p), log.endOffset('words', p));
      }
      const keyed = (w: string) => partitionFor(Buffer.from(w), PARTITIONS);
      log.ensureTopic('counts', PARTITIONS);
      for (let p = 0; p < PARTITIONS; p++) {
        for (const r of log.read('counts', p, 0, 100))
          assert.equal(keyed(r.key.toString()), p, `${r.key} written to the partition of its key`);
      }
    } finally {
      await log.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a task whose polls are bound to one record by bytes still processes every record once, in order', async () => {
  const dir = tempDir();
  try {
    const words = Array.from({ length: 120 }, (_, i) => ['a', 'b', 'c'][i % 3]!);
    await run(dir, words, wordCount(), 1);
    const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
    assert.deepEqual(await countsByWord(dir), { a: upTo(40), b: upTo(40), c: upTo(40) });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a restart on the same dir continues counts from local state, without reprocessing or replay', async () => {
  const dir = tempDir();
  try {
    await run(dir, ['a', 'b', 'a']);
    const lines = await run(dir, ['a', 'c', 'b']);
    assert.deepEqual(await countsByWord(dir), { a: [1, 2, 3], b: [1, 2], c: [1] });
    assert.ok(!lines.some((l) => /restored/.test(l)), `local state was current, yet: ${lines.join('\n')}`);
    const idle = await run(dir, []);
    assert.ok(!idle.some((l) => /restored/.test(l)));
    assert.deepEqual(await countsByWord(dir), { a: [1, 2, 3], b: [1, 2], c: [1] }, 'a run without input emits nothing');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a store equals a replay of its changelog, and is rebuilt from it when its state dir is lost', async () => {
  const dir = tempDir();
  try {
    await run(dir, ['a', 'b', 'a', 'c', 'a', 'd', 'e', 'b']);
    const before = await storeEntries(dir);
    assert.deepEqual(before.flat().sort(), ['a=3', 'b=2', 'c=1', 'd=1', 'e=1']);
    assert.deepEqual(before, await changelogReplay(dir));
    new TaskDirectory(dir).wipeAll();
    const lines = await run(dir, []);
    assert.ok(
      lines.some((l) => /task 0_\d+: restored \d+ changelog records in \d+ ms \(word-counts \d+\)/.test(l)),
      lines.join('\n'),
    );
    assert.deepEqual(await storeEntries(dir), before);
    await run(dir, ['a', 'e']);
    const counts = await countsByWord(dir);
    assert.deepEqual(
      [counts.a, counts.e],
      [
        [1, 2, 3, 4],
        [1, 2],
      ],
      'counting continues from the rebuilt state',
    );
    assert.deepEqual(await storeEntries(dir), await changelogReplay(dir));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a record that cannot be deserialized goes to the dead-letter topic and processing continues', async () => {
  const dir = tempDir();
  try {
    await run(dir, ['a']);
    const p = partitionFor(Buffer.from('a'), PARTITIONS);
    const junk = Buffer.from('not avro at all');
    let log = await EmbeddedLog.open(path.join(dir, 'log'));
    log.ensureTopic('words', PARTITIONS);
    const junkOffset = log.endOffset('words', p);
    log.commit([{ topic: 'words', partition: p, records: [{ key: Buffer.from('a'), value: junk, timestamp: 5 }] }], []);
    await log.close();

    await run(dir, ['a']);
    assert.deepEqual(
      (await countsByWord(dir)).a,
      [1, 2],
      'the junk record counted for nothing; the next one was processed',
    );

    log = await EmbeddedLog.open(path.join(dir, 'log'));
    try {
      const dlq = `${APP}-dead-letters`;
      log.ensureTopic(dlq, 1);
      log.ensureTopic('words', PARTITIONS);
      const dead = log.read(dlq, 0, 0, 10);
      assert.equal(dead.length, 1);
      assert.deepEqual(dead[0]!.value, junk);
      assert.equal(dead[0]!.key.toString(), 'a');
      assert.equal(dead[0]!.headers?.['x-error-code'], 'CS_CORRUPT_RECORD');
      assert.equal(dead[0]!.headers?.['x-source'], `words-${p}@${junkOffset}`);
      assert.match(dead[0]!.headers?.['x-error-message'] ?? '', /Confluent wire format/);
      assert.equal(
        log.committedPosition(`${APP}:words`, 'words', p),
        log.endOffset('words', p),
        'the position moved past the junk',
      );
    } finally {
      await log.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

interface Probe {
  active: number;
  max: number;
  target: number;
  patienceMs: number;
  reached?: boolean;
}

/**
 * jobs -> slow -> done; `slow` holds each record until `target` records have been active at once
 * (from then on none waits), or `patienceMs` passed: the patience only ends a wait that can never
 * be met (fewer records in flight than the target), so the count does not depend on speed.
 */
function slowTopology(options: ProcessorOptions, probe: Probe): Topology {
  const waiters: (() => void)[] = [];
  const supplier = (): Processor<string, LinkBatch, string, LinkBatch> => {
    let ctx: ProcessorContext<string, LinkBatch>;
    return {
      init: (c) => void (ctx = c),
      process: async (record) => {
        probe.active++;
        probe.max = Math.max(probe.max, probe.active);
        if (probe.active >= probe.target) probe.reached = true;
        if (probe.reached) for (const w of waiters.splice(0)) w();
        else
          await new Promise<void>((resolve) => {
            waiters.push(resolve);
            setTimeout(resolve, probe.patienceMs);
          });
        probe.active--;
        ctx.forward({ key: record.key, value: { ...record.value, discoveredAt: 42 }, timestamp: record.timestamp });
      },
    };
  };
  return new Topology('slow')
    .addTopic({ name: 'jobs', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'done', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('jobs-source', 'jobs')
    .addProcessor('slow', supplier as () => Processor, ['jobs-source'], options)
    .addSink('done-sink', 'done', 'slow');
}

async function runJobs(options: ProcessorOptions, probe: Probe): Promise<string[]> {
  const dir = tempDir();
  try {
    const engine = new EmbeddedEngine(slowTopology(options, probe), { dataDir: dir, commitIntervalMs: 20 });
    await engine.start();
    try {
      await engine.produce(
        'jobs',
        ['j1', 'j2', 'j3', 'j4'].map((k) => ({ ...word(k) })),
      );
      await untilIdle(engine);
    } finally {
      await engine.stop();
    }
    const done: string[] = [];
    await readTopic(dir, 'done', (r) => done.push(`${r.key}:${(r.value as LinkBatch).discoveredAt}`));
    return done.sort();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test("a processor with commitInputs 'before' and concurrency > 1 processes records at once", async () => {
  // patience long enough never to run out while the engine brings the third record, however loaded
  const probe = { active: 0, max: 0, target: 3, patienceMs: 60_000 };
  const done = await runJobs({ concurrency: 3, commitInputs: 'before' }, probe);
  assert.deepEqual(done, ['j1:42', 'j2:42', 'j3:42', 'j4:42']);
  assert.equal(probe.max, 3, 'three records in flight together, never more than the concurrency');
});

test('a processor with the default options processes one record at a time', async () => {
  const probe = { active: 0, max: 0, target: 2, patienceMs: 30 };
  const done = await runJobs({}, probe);
  assert.deepEqual(done, ['j1:42', 'j2:42', 'j3:42', 'j4:42']);
  assert.equal(probe.max, 1);
});

test("stopping mid-batch of a 'before' task returns once the records in flight finish, without waiting for the rest", async () => {
  const dir = tempDir();
  try {
    let started = 0;
    let finished = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let firstStarted!: () => void;
    const running = new Promise<void>((r) => (firstStarted = r));
    const supplier = (): Processor<string, LinkBatch, string, LinkBatch> => ({
      process: async () => {
        started++;
        firstStarted();
        await gate;
        finished++;
      },
    });
    const topology = new Topology('stopper')
      .addTopic({ name: 'jobs', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
      .addSource('jobs-source', 'jobs')
      .addProcessor('slow', supplier as () => Processor, ['jobs-source'], { concurrency: 1, commitInputs: 'before' });
    const engine = new EmbeddedEngine(topology, { dataDir: dir, commitIntervalMs: 20 });
    await engine.start();
    await engine.produce('jobs', ['j1', 'j2', 'j3', 'j4', 'j5'].map(word));
    await running;
    assert.equal(started, 1);
    let stopped = false;
    const stopping = engine.stop().then(() => (stopped = true));
    for (let i = 0; i < 20; i++) await new Promise(setImmediate);
    assert.equal(stopped, false, 'stop returned while a record was still in flight');
    release();
    // a stop that waited for records that will never start would hang here (the test's timeout)
    await stopping;
    assert.ok(finished >= 1, 'the record in flight was abandoned');
    // records whose positions were committed but not started are given up ('before' is at most once)
    assert.ok(started < 5, `all ${started} records ran although the engine was stopping`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
