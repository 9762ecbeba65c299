import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createLogger } from '../../core/logger.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { KafkaChangelogSource } from '../../runtime/engines/kafka/kafka-changelog-source.js';
import { KafkaEngine } from '../../runtime/engines/kafka/kafka-engine.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { topicDefinitions } from '../../runtime/engines/kafka/topics.js';
import { deadLetterTopicOf } from '../../runtime/dead-letter.js';
import type { Topology } from '../../runtime/topology.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';
import { roleFilter } from '../../cli/run.js';
import { removeDir, sleep, tempDir } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';

/**
 * Runs the parser role of a fresh application id on the real broker, writes one undecodable,
 * incompressible `fetched` record of 2 MiB (past the broker's 1 MiB default) and returns the
 * value of the dead letter it became, and the engine's log. `dlqConfig` adjusts the dead-letter
 * topic's config before the topics are made (an older `topics create` set none).
 */
async function deadLetterOfLargePage(
  name: string,
  dlqConfig: (config: Record<string, string>) => Record<string, string>,
): Promise<{ input: Buffer; letter: Buffer | null; lines: string[] }> {
  const { brokers, registry } = kafkaInfra();
  const applicationId = `${name}-${Date.now().toString(36)}`;
  const dir = tempDir('kafka-dead-letters');
  const topology: Topology = crawlTopology({
    config: validateCrawlConfig({}),
    // 4 partitions, as test/kafka/topics.test.ts expects of every changelog on the cluster
    partitions: 4,
    warcDir: join(dir, 'warc'),
    applicationId,
  });
  const dlq = deadLetterTopicOf(applicationId);
  const port = new KafkaPort([brokers], 'crawlstream-test', undefined, {}, topology);
  const admin = await port.admin();
  const lines: string[] = [];
  const engine = new KafkaEngine(topology, {
    brokers: [brokers],
    registryUrl: registry,
    dataDir: join(dir, 'data'),
    runs: roleFilter('parser'),
    commitIntervalMs: 200,
    logger: createLogger({ level: 'info', write: (l) => lines.push(l) }),
  });
  try {
    await admin.createTopics(
      topicDefinitions(topology).map((d) => (d.name === dlq ? { ...d, config: dlqConfig(d.config) } : d)),
    );
    await engine.start();
    const input = randomBytes(2 * 1024 * 1024);
    const producer = await port.producer();
    await producer.send([
      { topic: TOPICS.fetched, partition: 0, key: Buffer.from('big.test'), value: input, timestamp: Date.now() },
    ]);
    await producer.close();
    const source = new KafkaChangelogSource(port, admin, false);
    // a dead letter the topic refuses aborts every commit of the task (each abort leaves a marker
    // in the topic, no record): this never ends
    const deadline = Date.now() + 90_000;
    const letters: (Buffer | null)[] = [];
    while (letters.length === 0) {
      if (Date.now() > deadline) assert.fail(`no dead letter in ${dlq} after 90 s:\n${lines.join('\n')}`);
      await sleep(250);
      const end = (await source.endOffsets(dlq, 1))[0]!;
      if (end > 0)
        await source.read([{ topic: dlq, partition: 0, from: 0, to: end }], (_t, _p, records) => {
          for (const r of records) letters.push(r.value);
        });
    }
    assert.equal(letters.length, 1, 'one failed record, one dead letter');
    const letter = letters[0]!;
    return { input, letter, lines };
  } finally {
    await engine.stop().catch(() => undefined);
    await admin.close();
    await port.close();
    removeDir(dir);
  }
}

test(
  'a 2 MiB record that fails is dead-lettered whole on Kafka: the dead-letter topic is sized for the inputs',
  { timeout: 180_000 },
  async () => {
    const { input, letter } = await deadLetterOfLargePage('dlq-whole', (c) => c);
    assert.ok(letter !== null && input.equals(letter), `a dead letter of ${(letter as Buffer | null)?.length} bytes`);
  },
);

test(
  'on a dead-letter topic of 1 MiB (made by an older topics create) a 2 MiB dead letter is a reference, never a wedged partition',
  { timeout: 180_000 },
  async () => {
    const { input, letter, lines } = await deadLetterOfLargePage('dlq-reference', (c) => {
      const { ['max.message.bytes']: _dropped, ...rest } = c;
      return rest;
    });
    const digest = createHash('sha256').update(input).digest('hex');
    assert.match(String(letter), new RegExp(`^oversized dead letter: fetched-0@0 2097152 bytes sha256:${digest}$`));
    assert.ok(
      lines.some((l) => /holds records of up to 1048588 bytes/.test(l)),
      `no warning about the topic's size:\n${lines.join('\n')}`,
    );
  },
);
