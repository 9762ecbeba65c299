import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isCrawlError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { stringSerde, type Serde } from '../../core/serde.js';
import { M } from '../../core/metric-catalogue.js';
import { deadLetterTopicOf } from '../../runtime/dead-letter.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { readTopic } from '../../runtime/engines/embedded/topic-reader.js';
import { partitionFor } from '../../runtime/partitioner.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import {
  applyCommitted,
  closeTaskState,
  openTaskState,
  prepareCommit,
  restoreTaskState,
  type LocalTaskState,
} from '../../runtime/task-state.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import { openRocks } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore, type StoreBuilder } from '../../state/store-builder.js';
import { corruptionsAtOpen, flushToSst, garbleSstMiddle } from '../state/rocks-corruption.js';
import { STORE, ScriptedCluster, countTopology, tempDataDir } from './scripted-port.js';

const APP = 'corrupt-counts';
const COUNTS = 'word-counts';
const PARTITIONS = 2;
const CORRUPT_TASK = { subtopology: 0, partition: 1 };

const countSerde: Serde<number> = {
  serialize: (n) => Buffer.from(String(n)),
  deserialize: (b) => Number(b.toString()),
};

/**
 * Counts records per key in its store; forwards the running count in `discoveredAt`. With
 * `scanAtInit` its init reads every count, as a frontier's init reads its host states.
 */
class Counter implements Processor<string, LinkBatch, string, LinkBatch> {
  private ctx!: ProcessorContext<string, LinkBatch>;
  private store!: KeyValueStore<string, number>;

  constructor(private readonly scanAtInit: boolean) {}

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
    this.store = context.getStateStore<KeyValueStore<string, number>>(COUNTS);
    if (this.scanAtInit) for (const [, n] of this.store.range('', '\uffff')) assert.ok(n > 0);
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    const n = (this.store.get(record.key) ?? 0) + 1;
    this.store.put(record.key, n);
    this.ctx.forward({ key: record.key, value: { ...record.value, discoveredAt: n }, timestamp: record.timestamp });
  }
}

const wordCount = (scanAtInit = false): Topology =>
  new Topology(APP)
    .addTopic({ name: 'words', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'counts', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('counter', () => new Counter(scanAtInit) as Processor, ['words-source'])
    .addStateStore(keyValueStore(COUNTS, stringSerde, countSerde), 'counter')
    .addSink('counts-sink', 'counts', 'counter');

const word = (w: string): StreamRecord<string, LinkBatch> => ({
  key: w,
  value: { site: w, sourceUrl: null, discoveredAt: 1, links: [] },
  timestamp: 1_700_000_000_000,
});

const WORDS = Array.from({ length: 300 }, (_, i) => `word-${i}`);

/** Starts an embedded engine on `dir`, produces `words`, waits until idle, stops; returns its log lines. */
async function run(dir: string, words: string[]): Promise<string[]> {
  return (await runEngine(dir, words)).lines;
}

/** `run`, returning the stopped engine too (its metrics). */
async function runEngine(
  dir: string,
  words: string[],
  scanAtInit = false,
): Promise<{ lines: string[]; engine: EmbeddedEngine }> {
  const lines: string[] = [];
  const engine = new EmbeddedEngine(wordCount(scanAtInit), {
    dataDir: dir,
    commitIntervalMs: 20,
    logger: createLogger({ write: (l) => lines.push(l) }),
  });
  await engine.start();
  try {
    await engine.produce('words', words.map(word));
    const deadline = Date.now() + 120_000;
    // the bound only turns a hang into a failure
    while (!engine.isIdle()) {
      if (Date.now() > deadline) assert.fail('the engine did not become idle');
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    await engine.stop();
  }
  await engine.done;
  return { lines, engine };
}

/** The committed counts of task `p`, read from its RocksDB with the engine stopped. */
async function countsOf(dir: string, p: number): Promise<Record<string, number>> {
  const db = await openRocks(new TaskDirectory(dir).task({ subtopology: 0, partition: p }).live);
  try {
    const store = new RocksKeyValueStore(COUNTS, db, stringSerde, countSerde);
    return Object.fromEntries([...store.entries()].map(([k, v]) => [k.toString(), countSerde.deserialize(v)]));
  } finally {
    await db.close();
  }
}

for (const [name, corrupt] of Object.entries(corruptionsAtOpen)) {
  test(`a task's RocksDB with ${name} is wiped with a warning and restored from its changelog on the embedded engine: every count goes on`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-corrupt-store-'));
    try {
      await run(dir, [...WORDS, ...WORDS]);
      const before = await countsOf(dir, CORRUPT_TASK.partition);
      const mine = WORDS.filter((w) => partitionFor(Buffer.from(w), PARTITIONS) === CORRUPT_TASK.partition);
      assert.ok(mine.length > 0);
      assert.deepEqual(before, Object.fromEntries(mine.map((w) => [w, 2])));
      const live = new TaskDirectory(dir).task(CORRUPT_TASK).live;
      await flushToSst(live);
      corrupt(live);

      const lines = await run(dir, WORDS);

      const warnings = lines.filter((l) => l.includes('its RocksDB is corrupt'));
      assert.equal(warnings.length, 1, lines.join('\n'));
      assert.ok(
        warnings[0]!.includes(
          `task 0_1: its RocksDB is corrupt (cannot open RocksDB at ${live}: its files are corrupt: `,
        ),
        warnings[0],
      );
      assert.ok(
        warnings[0]!.includes(`wiping the task's local state and restoring it from the changelogs (${COUNTS})`),
        warnings[0],
      );
      assert.ok(
        lines.some((l) => /task 0_1: restored \d+ changelog records/.test(l)),
        lines.join('\n'),
      );
      // the corrupt task went on from the counts it had: none restarted from 0
      assert.deepEqual(await countsOf(dir, CORRUPT_TASK.partition), Object.fromEntries(mine.map((w) => [w, 3])));
      const last: Record<string, number> = {};
      await readTopic(dir, 'counts', (r) => (last[r.key] = (r.value as LinkBatch).discoveredAt));
      assert.deepEqual(last, Object.fromEntries(WORDS.map((w) => [w, 3])));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

for (const during of ['a record', 'init'] as const)
  test(`a read by ${during} that finds a task RocksDB corrupt while the engine runs reopens the task: wiped, restored, its records processed again, nothing dead-lettered`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-corrupt-read-'));
    try {
      // enough keys for an SST of many blocks: the garbled one holds words of the next run
      const words = Array.from({ length: 6_000 }, (_, i) => `word-${i}`);
      await run(dir, [...words, ...words]);
      const live = new TaskDirectory(dir).task(CORRUPT_TASK).live;
      await flushToSst(live);
      garbleSstMiddle(live);

      // init's scan reads every block: the garbled one before any record comes
      const { lines, engine } = await runEngine(dir, words, during === 'init');

      const found = lines.filter((l) => l.includes('task 0_1: a read found its RocksDB corrupt'));
      assert.ok(found.length >= 1, lines.join('\n'));
      assert.match(found[0]!, /Corruption: block checksum mismatch/);
      assert.ok(
        lines.some((l) => l.includes('task 0_1: its stores reopened and restored after a corrupt read')),
        lines.join('\n'),
      );
      assert.ok(
        lines.some((l) => /task 0_1: restored \d+ changelog records/.test(l)),
        lines.join('\n'),
      );
      assert.equal(engine.metrics.counter(M.storeWipes, 'corrupt-read'), 1);
      // the records that met the bad block were processed again on the restored state: none is a dead
      // letter, every count went on from 2, and the counts topic's last word on each is 3
      const dead: string[] = [];
      await readTopic(dir, deadLetterTopicOf(APP), (r) => dead.push(r.key));
      assert.deepEqual(dead, []);
      const mine = words.filter((w) => partitionFor(Buffer.from(w), PARTITIONS) === CORRUPT_TASK.partition);
      assert.deepEqual(await countsOf(dir, CORRUPT_TASK.partition), Object.fromEntries(mine.map((w) => [w, 3])));
      const last: Record<string, number> = {};
      await readTopic(dir, 'counts', (r) => (last[r.key] = (r.value as LinkBatch).discoveredAt));
      assert.deepEqual(last, Object.fromEntries(words.map((w) => [w, 3])));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

const ID = { subtopology: 0, partition: 1 };

/** Opens task ID of `topology` on `dataDir` over `cluster`, its log lines into `lines`. */
function open(
  dataDir: string,
  cluster: ScriptedCluster,
  lines: string[],
  topology = countTopology(),
): Promise<LocalTaskState> {
  const logger = createLogger({ level: 'info', write: (l) => lines.push(l) });
  const dir = new TaskDirectory(dataDir).task(ID);
  return openTaskState({ id: ID, sub: topology.sub, topology: topology.topology, dir, source: cluster, logger });
}

/** Every committed entry of the counting store, as text. */
function entries(state: LocalTaskState): Map<string, string> {
  const store = state.changelogged[0]!.store;
  return new Map([...store.entries()].map(([k, v]) => [k.toString('hex'), v.toString()]));
}

test('a task RocksDB a read found corrupt while open is marked, and its next opening wipes it and restores every key from the changelog', async () => {
  const dataDir = tempDataDir();
  const cluster = new ScriptedCluster();
  cluster.batch = 5000;
  const taskDir = new TaskDirectory(dataDir).task(ID);
  try {
    let state = await open(dataDir, cluster, []);
    const store = state.stores.get(STORE) as unknown as KeyValueStore<string, number>;
    for (let i = 0; i < 20_000; i++) store.put(`key-${String(i).padStart(6, '0')}-${'x'.repeat(40)}`, i);
    const prepared = prepareCommit(state, ID.partition, 1);
    applyCommitted(prepared, cluster.append(prepared.records));
    const committed = entries(state);
    assert.equal(committed.size, 20_000);
    await closeTaskState(state);
    await flushToSst(taskDir.live);
    garbleSstMiddle(taskDir.live);

    // the RocksDB opens: only a read of the garbled block finds it
    state = await open(dataDir, cluster, []);
    try {
      assert.throws(
        () => entries(state),
        (err: unknown) => isCrawlError(err) && err.code === 'CS_STORE_CORRUPT',
      );
    } finally {
      await closeTaskState(state);
    }
    assert.match(taskDir.corruption() ?? '', /^RocksDB read failed at .*: Corruption: block checksum mismatch/);

    const lines: string[] = [];
    state = await open(dataDir, cluster, lines);
    try {
      assert.equal(state.changelogged[0]!.store.checkpoint(), 0, 'opened empty');
      await restoreTaskState(state, cluster);
      assert.deepEqual(entries(state), committed);
      assert.equal(taskDir.corruption(), undefined, 'the mark goes with the wiped copy');
      assert.equal(lines.filter((l) => l.includes('its RocksDB is corrupt')).length, 1, lines.join('\n'));
      assert.ok(
        lines.some((l) =>
          /task 0_1: its RocksDB is corrupt \(RocksDB read failed at .*: Corruption: block checksum mismatch.*\); wiping the task's local state and restoring it from the changelogs \(counts\)/.test(
            l,
          ),
        ),
        lines.join('\n'),
      );
    } finally {
      await closeTaskState(state);
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a corrupt task RocksDB holding a store without a changelog stays fatal (CS_STORE_CORRUPT naming that store) and is not wiped', async () => {
  const dataDir = tempDataDir();
  const cluster = new ScriptedCluster();
  const scratch: StoreBuilder = {
    name: 'scratch',
    changelog: false,
    build: (c) => new RocksKeyValueStore('scratch', c.db, stringSerde, stringSerde),
  };
  const withScratch = () => {
    const { topology } = countTopology();
    topology.addStateStore(scratch, 'counter');
    return { topology, sub: topology.build()[0]! };
  };
  const taskDir = new TaskDirectory(dataDir).task(ID);
  try {
    const state = await open(dataDir, cluster, [], withScratch());
    await closeTaskState(state);
    corruptionsAtOpen['a truncated MANIFEST']!(taskDir.live);
    const manifests = () => fs.readdirSync(taskDir.live).filter((n) => n.startsWith('MANIFEST-'));
    const left = manifests();

    const lines: string[] = [];
    await assert.rejects(open(dataDir, cluster, lines, withScratch()), (err: unknown) => {
      assert.ok(isCrawlError(err) && err.code === 'CS_STORE_CORRUPT', String(err));
      assert.match(
        err.message,
        /^task 0_1: cannot open RocksDB at .*: its files are corrupt: .*; not wiped: store scratch keeps state in it with no changelog to restore it from; repair or remove /,
      );
      return true;
    });
    assert.deepEqual(manifests(), left, 'the corrupt copy is left as it was');
    assert.equal(lines.filter((l) => l.includes('wiping')).length, 0, lines.join('\n'));
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
