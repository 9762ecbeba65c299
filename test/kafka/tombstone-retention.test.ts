import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { KafkaChangelogSource } from '../../runtime/engines/kafka/kafka-changelog-source.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { kafkaInfra } from './infra.js';

test(
  "a Kafka changelog's tombstone retention is its topic's delete.retention.ms, Kafka's one day when not set",
  { timeout: 120_000 },
  async () => {
    const { brokers } = kafkaInfra();
    const run = randomUUID().slice(0, 8);
    const set = `tombstone-retention-set-${run}-changelog`;
    const unset = `tombstone-retention-unset-${run}-changelog`;
    const port = new KafkaPort([brokers], `tombstone-retention-${run}`);
    const admin = await port.admin();
    try {
      await admin.createTopics([
        { name: set, partitions: 1, config: { 'cleanup.policy': 'compact', 'delete.retention.ms': '1234' } },
        { name: unset, partitions: 1, config: { 'cleanup.policy': 'compact' } },
      ]);
      const source = new KafkaChangelogSource(port, admin, false);
      assert.equal(await source.tombstoneRetentionMs(set), 1234);
      assert.equal(await source.tombstoneRetentionMs(unset), 86_400_000);
    } finally {
      await admin.close();
      await port.close();
    }
  },
);
