import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { isCrawlError } from '../../core/errors.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { readChangelogs } from '../../runtime/engines/kafka/changelog-reader.js';
import { kafkaInfra } from './infra.js';

// A task's new owner opens its transactional producer, then restores the task's stores from the
// changelog up to its end. That end is final only if opening the producer already fenced the
// previous owner: it must not commit afterwards, and its open transaction must be ended.

async function withTopic<T>(port: KafkaPort, work: (topic: string) => Promise<T>): Promise<T> {
  const topic = `fencing-${randomUUID().slice(0, 8)}`;
  const admin = await port.admin();
  try {
    await admin.createTopics([{ name: topic, partitions: 1, config: {} }]);
  } finally {
    await admin.close();
  }
  return work(topic);
}

test(
  'opening a transactional producer fences the previous one: its next commit fails with CS_FENCED',
  { timeout: 120_000 },
  async () => {
    const { brokers } = kafkaInfra();
    const port = new KafkaPort([brokers], 'crawlstream-test');
    try {
      await withTopic(port, async (topic) => {
        const txId = `fencing-${randomUUID()}`;
        const record = { topic, partition: 0, key: Buffer.from('k'), value: Buffer.from('v'), timestamp: Date.now() };
        const old = await port.transactionalProducer(txId);
        const bases = await old.commit([record], 'fencing-test', []);
        assert.equal(bases.get(`${topic}\u00000`), 0, 'the first owner commits before it is fenced');
        const successor = await port.transactionalProducer(txId);
        await assert.rejects(
          old.commit([record], 'fencing-test', []),
          (err: unknown) => isCrawlError(err) && err.code === 'CS_FENCED',
        );
        // the successor itself commits
        const next = await successor.commit([record], 'fencing-test', []);
        assert.ok((next.get(`${topic}\u00000`) ?? -1) > 0);
        await old.close();
        await successor.close();
      });
    } finally {
      await port.close();
    }
  },
);

test(
  "opening a transactional producer ends the previous owner's open transaction, so a restore reads to the end at once",
  { timeout: 120_000 },
  async () => {
    const { brokers } = kafkaInfra();
    const port = new KafkaPort([brokers], 'crawlstream-test');
    const kafka = new kafkajs.Kafka({
      clientId: 'crawlstream-test-zombie',
      brokers: [brokers],
      logLevel: kafkajs.logLevel.NOTHING,
    });
    const txId = `fencing-${randomUUID()}`;
    const zombie = kafka.producer({
      transactionalId: txId,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 60_000,
    });
    try {
      await withTopic(port, async (topic) => {
        await zombie.connect();
        const tx = await zombie.transaction();
        await tx.send({ topic, messages: [{ key: 'k', value: 'uncommitted', partition: 0 }] });
        // the zombie's transaction stays open: read_committed readers cannot pass it until it ends
        const successor = await port.transactionalProducer(txId);
        const seen: string[] = [];
        // the read reaches the end without handing over the aborted record; what proves the fencing
        // is the zombie's commit failing below (the read alone would also end with the transaction
        // still open: it counts the fetch's progress past it). No wall-clock figure is asserted.
        await readChangelogs(
          port,
          [{ topic, partition: 0, from: 0 }],
          (_t, _p, records) => seen.push(...records.map((r) => String(r.value))),
          40_000,
        );
        assert.deepEqual(seen, [], 'the open transaction was aborted, not committed');
        await assert.rejects(tx.commit());
        await successor.close();
      });
    } finally {
      await zombie.disconnect().catch(() => undefined);
      await port.close();
    }
  },
);
