import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createLogger } from '../../core/logger.js';
import { KafkaEngine } from '../../runtime/engines/kafka/kafka-engine.js';
import { KafkaPort, type OutRecord } from '../../runtime/engines/kafka/kafka-port.js';
import { partitionFor } from '../../runtime/partitioner.js';
import { removeDir, sleep, tempDir } from '../e2e/harness.js';
import { COUNT_PARTITIONS, COUNTS, countingTopology, wordRecord } from './counting.js';
import { kafkaInfra } from './infra.js';
import { testTopics } from './test-topics.js';
const PARTITIONS = COUNT_PARTITIONS;
/** Changelog records of the slow task: a restore of several seconds here (~100–200 k records/s). */
const FLOOD = 1_500_000;

/** When each word was processed, in this process. */
const processedAt = new Map<string, number>();

/** `count` words whose partition is `partition`, from `from` on. */
function wordsOn(partition: number, count: number, from = 0): string[] {
  const out: string[] = [];
  for (let i = from; out.length < count; i++)
    if (partitionFor(Buffer.from(`w${i}`), PARTITIONS) === partition) out.push(`w${i}`);
  return out;
}

test(
  "a task's long restore does not hold up the member's other partitions: records produced to them while it restores are processed before it ends",
  { timeout: 300_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const applicationId = `restore-pause-${Date.now().toString(36)}`;
    const topology = countingTopology(applicationId, (w) => processedAt.set(w, Date.now()));
    await testTopics(t, topology);
    const dir = tempDir('kafka-restore-pause');
    t.after(() => removeDir(dir));
    const SLOW = 0;
    const FAST = 1;
    // the slow task's changelog: a restore of seconds
    const port = new KafkaPort([brokers], 'crawlstream-test');
    const producer = await port.producer();
    try {
      for (let sent = 0; sent < FLOOD; sent += 50_000)
        await producer.send(
          Array.from({ length: 50_000 }, (): OutRecord => ({
            topic: topology.changelogTopic(COUNTS),
            partition: SLOW,
            key: randomBytes(12),
            value: Buffer.from('1'),
            timestamp: Date.now(),
          })),
        );
    } finally {
      await producer.close();
      await port.close();
    }
    const lines: string[] = [];
    let slowRestoredAt: number | undefined;
    const engine = new KafkaEngine(topology, {
      brokers: [brokers],
      registryUrl: registry,
      dataDir: join(dir, 'data'),
      commitIntervalMs: 200,
      sessionTimeoutMs: 6_000,
      logger: createLogger({
        write: (l) => {
          lines.push(l);
          if (new RegExp(`task 0_${SLOW}: restored \\d+`).test(l)) slowRestoredAt ??= Date.now();
        },
      }),
    });
    t.after(() => engine.stop().catch(() => undefined));
    await engine.start();
    // one word for each task, then, once the fast task has taken its first, more words for it
    await engine.produce('words', [...wordsOn(SLOW, 1), ...wordsOn(FAST, 1)].map(wordRecord));
    const deadline = Date.now() + 120_000;
    while (!processedAt.has(wordsOn(FAST, 1)[0]!)) {
      assert.ok(Date.now() < deadline, `the fast task took nothing in 120 s\n${lines.join('\n')}`);
      await sleep(50);
    }
    assert.equal(
      slowRestoredAt,
      undefined,
      `the slow task restored before the test could produce: raise FLOOD\n${lines.join('\n')}`,
    );
    const later = wordsOn(FAST, 20, 1_000);
    await engine.produce('words', later.map(wordRecord));
    while (!later.every((w) => processedAt.has(w))) {
      assert.ok(Date.now() < deadline, `the later words were not done in 120 s\n${lines.join('\n')}`);
      await sleep(50);
    }
    const laterDoneAt = Math.max(...later.map((w) => processedAt.get(w)!));
    assert.ok(
      slowRestoredAt === undefined || laterDoneAt < slowRestoredAt,
      `the fast task's later words waited for the slow task's restore (done ${laterDoneAt - slowRestoredAt!} ms after it)\n${lines.join('\n')}`,
    );
    // and the slow task then takes its own word
    while (!processedAt.has(wordsOn(SLOW, 1)[0]!)) {
      assert.ok(Date.now() < deadline, `the slow task's word was not done in 120 s\n${lines.join('\n')}`);
      await sleep(100);
    }
    assert.ok(slowRestoredAt !== undefined, 'the slow task restored');
  },
);
