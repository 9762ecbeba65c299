import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createLogger } from '../../core/logger.js';
import { M } from '../../core/metric-catalogue.js';
import { KafkaEngine } from '../../runtime/engines/kafka/kafka-engine.js';
import { removeDir, sleep, tempDir } from '../e2e/harness.js';
import { COUNT_PARTITIONS, COUNTS, countingTopology, wordRecord } from './counting.js';
import { kafkaInfra } from './infra.js';
import { testTopics } from './test-topics.js';
const PARTITIONS = COUNT_PARTITIONS;
const WORDS = 200;

const words = () => Array.from({ length: WORDS }, (_, i) => wordRecord(`word-${i}`));

test(
  "with --standby-replicas 1 a member keeps a copy of the other's tasks, and when that member dies the copy takes over: no changelog record restored, every count right",
  { timeout: 300_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const applicationId = `standby-${Date.now().toString(36)}`;
    const topology = countingTopology(applicationId);
    const { keysOf } = await testTopics(t, topology);
    const dir = tempDir('kafka-standby');
    t.after(() => removeDir(dir));
    const lines: string[] = [];
    const failures: unknown[] = [];
    const member = (name: string): KafkaEngine => {
      const engine = new KafkaEngine(topology, {
        brokers: [brokers],
        registryUrl: registry,
        dataDir: join(dir, name),
        commitIntervalMs: 200,
        sessionTimeoutMs: 6_000,
        standbyReplicas: 1,
        standbyCatchUpMs: 250,
        logger: createLogger({ write: (l) => lines.push(`${name} ${l}`) }),
      });
      engine.done.catch((err: unknown) => failures.push(err));
      return engine;
    };
    const until = async (what: string, ok: () => boolean | Promise<boolean>): Promise<void> => {
      const deadline = Date.now() + 120_000;
      while (!(await ok())) {
        if (failures.length > 0) assert.fail(`a member stopped: ${String(failures[0])}\n${lines.join('\n')}`);
        if (Date.now() > deadline) assert.fail(`${what}: not within 120 s\n${lines.join('\n')}`);
        await sleep(200);
      }
    };
    const totals = async (): Promise<number> => (await keysOf('totals', PARTITIONS)).length;
    const states = (e: KafkaEngine, state: string): number[] =>
      e
        .taskStatus()
        .filter((s) => s.state === state)
        .map((s) => s.partition);

    const a = member('a');
    const b = member('b');
    t.after(() => Promise.all([a.stop(), b.stop()]).catch(() => undefined));
    await a.start();
    await a.produce('words', words());
    await until('the first round counted', async () => (await totals()) >= WORDS);
    await b.start();
    // two members: each runs two partitions and keeps a standby of the other's two
    await until(
      'each member runs two tasks and keeps standbys of the other two',
      () =>
        [a, b].every((e) => states(e, 'running').length === 2 && states(e, 'standby').length === 2) &&
        states(a, 'standby').every((p) => states(b, 'running').includes(p)),
    );
    await a.produce('words', words());
    await until('the second round counted', async () => (await totals()) >= 2 * WORDS);
    // b's standbys follow what a commits: nothing left behind
    await until(
      "b's standbys caught up",
      () => b.metrics.gauge(M.standbyLagRecords) === 0 && b.metrics.counter(M.standbyRecords) > 0,
    );
    const aRan = states(a, 'running');
    const restoredBefore = b.metrics.counter(M.restoreRecords, COUNTS);
    const followed = b.metrics.counter(M.standbyRecords);

    // a dies: no last commit, its tasks move to b, which opens them on its standby copies
    await (a as unknown as { fail(err: unknown): Promise<void> }).fail(new Error('killed by the test'));
    failures.length = 0;
    await until('b runs every task', () => states(b, 'running').length === PARTITIONS);
    assert.deepEqual(states(b, 'standby'), [], 'a member alone keeps no standby');
    assert.equal(
      b.metrics.counter(M.restoreRecords, COUNTS) - restoredBefore,
      0,
      `b opened ${aRan.join(', ')} from its standbys (which had applied ${followed} records) and restored nothing`,
    );
    for (const p of aRan) assert.ok(lines.some((l) => l.startsWith('b ') && l.includes(`standby 0_${p} opened`)));

    // the counts went on from the standby's copy: every word is at 3 exactly
    await b.produce('words', words());
    await until('the third round counted', async () => (await totals()) >= 3 * WORDS);
    const keys = await keysOf('totals', PARTITIONS);
    assert.equal(keys.length, 3 * WORDS, 'no count made twice');
    for (let i = 0; i < WORDS; i++) assert.ok(keys.includes(`word-${i}#3`), `word-${i} reached 3`);
  },
);
