import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createLogger } from '../../core/logger.js';
import { stringSerde, type Serde } from '../../core/serde.js';
import { KafkaEngine } from '../../runtime/engines/kafka/kafka-engine.js';
import { partitionFor } from '../../runtime/partitioner.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import { openRocks } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore } from '../../state/store-builder.js';
import { removeDir, sleep, tempDir } from '../e2e/harness.js';
import { corruptionsAtOpen, flushToSst, garbleSstMiddle } from '../state/rocks-corruption.js';
import { kafkaInfra } from './infra.js';
import { testTopics } from './test-topics.js';

const COUNTS = 'counts';
// 4 partitions: test/kafka/topics.test.ts expects it of every changelog on the broker
const PARTITIONS = 4;

const countSerde: Serde<number> = {
  serialize: (n) => Buffer.from(String(n)),
  deserialize: (b) => Number(b.toString()),
};

/**
 * Counts records per key; forwards the running count in `discoveredAt`. With `scanAtInit` its
 * init reads every count, as a frontier's init reads its host states.
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

const word = (w: string): StreamRecord<string, LinkBatch> => ({
  key: w,
  value: { site: w, sourceUrl: null, discoveredAt: 1, links: [] },
  timestamp: Date.now(),
});

/** What a scenario does to one task's RocksDB between two runs, and what the second run must have said. */
interface Scenario {
  /** How many words each run counts (the first run counts each twice). */
  readonly words: number;
  /** Damages the closed RocksDB at `live`. */
  readonly corrupt: (live: string) => void;
  /** Checks the second run's log lines; `partition` is the damaged task's. */
  readonly said: (lines: string[], partition: number, live: string) => void;
  /** Whether the counter's init reads every count (then it meets the damage before any record). */
  readonly scanAtInit?: boolean;
}

/**
 * Counts words twice on a real broker, damages one task's RocksDB, counts them once more: the
 * second run must make each total exactly once and every count must end at 3.
 */
async function damagedRun(t: TestContext, scenario: Scenario): Promise<void> {
  const { brokers, registry } = kafkaInfra();
  const applicationId = `corrupt-${Date.now().toString(36)}`;
  // the first run's counter reads nothing at init: only the damaged run's does
  const scanner = { scanAtInit: false };
  const topology = new Topology(applicationId, { topicPrefix: `${applicationId}.` })
    .addTopic({ name: 'words', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'totals', partitions: PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('counter', () => new Counter(scanner.scanAtInit) as Processor, ['words-source'])
    .addStateStore(keyValueStore(COUNTS, stringSerde, countSerde), 'counter')
    .addSink('totals-sink', 'totals', 'counter');
  const { keysOf } = await testTopics(t, topology);
  const dir = tempDir('kafka-corrupt-store');
  t.after(() => removeDir(dir));
  const data = join(dir, 'data');
  const words = Array.from({ length: scenario.words }, (_, i) => `word-${i}`);

  /** Runs an engine on `data` until `expected` totals are committed; returns its log lines. */
  const runUntil = async (produce: string[], expected: number): Promise<string[]> => {
    const lines: string[] = [];
    const engine = new KafkaEngine(topology, {
      brokers: [brokers],
      registryUrl: registry,
      dataDir: data,
      commitIntervalMs: 200,
      sessionTimeoutMs: 6_000,
      logger: createLogger({ write: (l) => lines.push(l) }),
    });
    let failed: unknown;
    engine.done.catch((err: unknown) => (failed = err));
    try {
      await engine.start();
      await engine.produce('words', produce.map(word));
      const deadline = Date.now() + 120_000;
      for (;;) {
        if (failed !== undefined) assert.fail(`the engine stopped: ${String(failed)}\n${lines.join('\n')}`);
        if ((await countTotals()) >= expected) break;
        if (Date.now() > deadline) assert.fail(`fewer than ${expected} totals after 120 s\n${lines.join('\n')}`);
        await sleep(250);
      }
    } finally {
      await engine.stop().catch(() => undefined);
    }
    assert.equal(failed, undefined, String(failed));
    return lines;
  };
  const countTotals = async (): Promise<number> => (await keysOf('totals', PARTITIONS)).length;

  await runUntil([...words, ...words], 2 * words.length);
  const partition = partitionFor(Buffer.from(words[0]!), PARTITIONS);
  const live = new TaskDirectory(data).task({ subtopology: 0, partition }).live;
  await flushToSst(live);
  scenario.corrupt(live);

  scanner.scanAtInit = scenario.scanAtInit === true;
  const lines = await runUntil(words, 3 * words.length);
  scenario.said(lines, partition, live);
  assert.ok(lines.some((l) => new RegExp(`task 0_${partition}: restored \\d+ changelog records`).test(l)));
  assert.equal(await countTotals(), 3 * words.length, 'no total was made twice');
  // every word, those of the wiped task included, counted on from its restored count
  const counts: Record<string, number> = {};
  for (let p = 0; p < PARTITIONS; p++) {
    const db = await openRocks(new TaskDirectory(data).task({ subtopology: 0, partition: p }).live);
    try {
      for (const [k, v] of new RocksKeyValueStore(COUNTS, db, stringSerde, countSerde).entries())
        counts[k.toString()] = countSerde.deserialize(v);
    } finally {
      await db.close();
    }
  }
  assert.deepEqual(counts, Object.fromEntries(words.map((w) => [w, 3])));
}

test(
  'a task whose RocksDB has a truncated MANIFEST is wiped and restored from its Kafka changelog: the member starts and every count goes on',
  { timeout: 300_000 },
  (t) =>
    damagedRun(t, {
      words: 40,
      corrupt: (live) => corruptionsAtOpen['a truncated MANIFEST']!(live),
      said: (lines, partition, live) => {
        const warning = lines.find((l) => l.includes(`task 0_${partition}: its RocksDB is corrupt`));
        assert.ok(warning, lines.join('\n'));
        assert.ok(warning.includes(`cannot open RocksDB at ${live}: its files are corrupt: Corruption:`), warning);
      },
    }),
);

test(
  'a read that finds a task RocksDB corrupt on Kafka hands the task back: its next opening wipes and restores it, the record is counted once, none dead-lettered',
  { timeout: 300_000 },
  (t) =>
    damagedRun(t, {
      // an SST of many blocks: the garbled one holds words of the next run
      words: 4_000,
      corrupt: garbleSstMiddle,
      said: (lines, partition) => {
        const found = lines.find((l) => l.includes(`task 0_${partition}: a read found its RocksDB corrupt`));
        assert.ok(found, lines.join('\n'));
        assert.match(found, /Corruption: block checksum mismatch/);
        assert.ok(
          lines.some((l) => l.includes(`task 0_${partition} lost (CS_STORE_CORRUPT)`)),
          lines.join('\n'),
        );
        // the next opening, on this member or another, wipes what the read marked
        assert.ok(
          lines.some((l) =>
            new RegExp(`task 0_${partition}: its RocksDB is corrupt \\(RocksDB \\w+ failed at`).test(l),
          ),
          lines.join('\n'),
        );
      },
    }),
);

test(
  'a scan by init that finds a task RocksDB corrupt on Kafka hands the task back instead of quarantining it: wiped, restored, every count goes on once',
  { timeout: 300_000 },
  (t) =>
    damagedRun(t, {
      words: 4_000,
      corrupt: garbleSstMiddle,
      scanAtInit: true,
      said: (lines, partition) => {
        const found = lines.find((l) => l.includes(`task 0_${partition}: a read found its RocksDB corrupt`));
        assert.ok(found, lines.join('\n'));
        assert.match(found, /Corruption: block checksum mismatch/);
        assert.ok(!lines.some((l) => l.includes('quarantined')), lines.join('\n'));
        assert.ok(
          lines.some((l) =>
            new RegExp(`task 0_${partition}: its RocksDB is corrupt \\(RocksDB \\w+ failed at`).test(l),
          ),
          lines.join('\n'),
        );
      },
    }),
);
