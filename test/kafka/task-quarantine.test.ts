import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createLogger } from '../../core/logger.js';
import { KafkaEngine } from '../../runtime/engines/kafka/kafka-engine.js';
import { removeDir, sleep, tempDir } from '../e2e/harness.js';
import { keyOn, POISONED, quarantineTopology, word } from '../runtime/quarantine-topology.js';
import { kafkaInfra } from './infra.js';
import { testTopics } from './test-topics.js';

test(
  'a task whose punctuator throws is quarantined alone on Kafka: the member stays live and keeps the partition, paused and uncommitted, while its other partitions go on',
  { timeout: 180_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const applicationId = `quarantine-${Date.now().toString(36)}`;
    // 4 partitions: test/kafka/topics.test.ts expects it of every changelog on the broker
    const topology = quarantineTopology('punctuator', applicationId, `${applicationId}.`);
    const { keysOf } = await testTopics(t, topology);
    const dir = tempDir('kafka-quarantine');
    t.after(() => removeDir(dir));
    // the engine's own lines, printed with any failure below (it failed once in CI after 120 s with nothing to go by)
    const lines: string[] = [];
    const began = Date.now();
    const logger = createLogger({ level: 'debug', write: (l) => lines.push(`+${Date.now() - began} ms ${l}`) });
    const state = (): string =>
      `health ${JSON.stringify(engine.health())}\ntasks ${JSON.stringify(engine.taskStatus())}\n${lines.slice(-200).join('\n')}`;
    const engine = new KafkaEngine(topology, {
      logger,
      brokers: [brokers],
      registryUrl: registry,
      dataDir: join(dir, 'data'),
      commitIntervalMs: 200,
      sessionTimeoutMs: 6_000,
    });
    t.after(() => engine.stop().catch(() => undefined));
    let failed: unknown;
    engine.done.catch((err: unknown) => (failed = err));
    await engine.start();

    const deadline = Date.now() + 120_000;
    while ((engine.health().quarantined?.length ?? 0) === 0) {
      if (failed !== undefined) assert.fail(`the engine stopped: ${String(failed)}\n${state()}`);
      if (Date.now() > deadline) assert.fail(`no quarantine after 120 s\n${state()}`);
      await sleep(100);
    }
    await engine.produce(
      'words',
      [0, 1, 2, 3].map((p) => word(keyOn(p))),
    );

    const marked = async (): Promise<string[]> => (await keysOf('marked', 4)).sort();
    const others = [keyOn(0), keyOn(2), keyOn(3)].sort();
    for (;;) {
      const keys = await marked();
      if (others.every((k) => keys.includes(k))) break;
      if (Date.now() > deadline)
        assert.fail(`the other partitions were not processed after 120 s: ${keys}\n${state()}`);
      await sleep(250);
    }

    assert.equal(failed, undefined, 'the engine did not stop');
    const health = engine.health();
    assert.equal(health.live, true);
    assert.deepEqual(
      health.quarantined?.map((q) => ({ task: q.task, during: q.during, code: q.code })),
      [{ task: `0_${POISONED}`, during: 'punctuator', code: 'CS_STORE' }],
      state(),
    );
    assert.equal(
      engine.taskStatus().find((s) => s.partition === POISONED)?.state,
      'quarantined',
      `the member keeps the partition\n${state()}`,
    );
    await engine.stop();
    assert.deepEqual(await marked(), others, 'the quarantined partition processed nothing and committed nothing');
  },
);
