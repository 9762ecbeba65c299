import type { TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import type { KafkaAdmin } from '../../runtime/engines/kafka/kafka-admin.js';
import { KafkaChangelogSource } from '../../runtime/engines/kafka/kafka-changelog-source.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { topicDefinitions } from '../../runtime/engines/kafka/topics.js';
import type { Topology } from '../../runtime/topology.js';
import { kafkaInfra } from './infra.js';

export interface TestTopics {
  readonly port: KafkaPort;
  readonly admin: KafkaAdmin;
  /** The keys of every committed record of `topic` (logical name) on its `partitions`, in partition and offset order. */
  keysOf(topic: string, partitions: number): Promise<string[]>;
}

/**
 * Creates every topic of `topology` (its topics, changelogs and dead letters) on the test broker,
 * with a port and an admin onto it; when `t` ends they are closed and the topics deleted. The
 * topology's application id and topic prefix must be fresh per run: the broker is shared.
 */
export async function testTopics(t: TestContext, topology: Topology): Promise<TestTopics> {
  const { brokers } = kafkaInfra();
  const port = new KafkaPort([brokers], 'crawlstream-test', undefined, {}, topology);
  const admin = await port.admin();
  const definitions = topicDefinitions(topology);
  t.after(async () => {
    await admin.close();
    await port.close();
    const raw = new kafkajs.Kafka({ brokers: [brokers], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await raw.connect();
    await raw.deleteTopics({ topics: definitions.map((d) => d.name), timeout: 30_000 }).catch(() => undefined);
    await raw.disconnect();
  });
  await admin.createTopics(definitions);
  const source = new KafkaChangelogSource(port, admin, false);
  const keysOf = async (topic: string, partitions: number): Promise<string[]> => {
    const ends = await source.endOffsets(topic, partitions);
    const keys: string[] = [];
    const ranges = ends.map((to, partition) => ({ topic, partition, from: 0, to })).filter((r) => r.to > 0);
    if (ranges.length > 0)
      await source.read(ranges, (_t, _p, records) => {
        for (const r of records) keys.push(r.key.toString());
      });
    return keys;
  };
  return { port, admin, keysOf };
}
