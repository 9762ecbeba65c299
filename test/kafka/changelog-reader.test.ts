import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { CrawlError, isCrawlError } from '../../core/errors.js';
import { readChangelogs } from '../../runtime/engines/kafka/changelog-reader.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { kafkaInfra } from './infra.js';

test('a restore whose store throws on a batch fails with that error, and no later batch reaches the store', async (t) => {
  const { brokers } = kafkaInfra();
  const port = new KafkaPort([brokers], 'crawlstream-test');
  t.after(() => port.close());
  const topic = `reader-throws-${randomUUID().slice(0, 8)}`;
  const admin = await port.admin();
  try {
    await admin.createTopics([{ name: topic, partitions: 1, config: {} }]);
  } finally {
    await admin.close();
  }
  const producer = await port.transactionalProducer(`reader-throws-${randomUUID()}`);
  try {
    // two transactions: the reader sees at least two batches' worth only if it goes on after the throw
    for (let batch = 0; batch < 2; batch++)
      await producer.commit(
        Array.from({ length: 50 }, (_, i) => ({
          topic,
          partition: 0,
          key: Buffer.from(`k${batch}-${i}`),
          value: Buffer.from('v'),
          timestamp: Date.now(),
        })),
        'reader-throws',
        [],
      );
  } finally {
    await producer.close();
  }
  const full = new CrawlError('CS_DISK_FULL', 'No space left on device');
  let calls = 0;
  // a stall bound far beyond what the read needs: the old reader hid the throw until it, then
  // failed with its own CS_KAFKA; this one must fail with the store's error
  const read = readChangelogs(
    port,
    [{ topic, partition: 0, from: 0 }],
    () => {
      calls++;
      throw full;
    },
    30_000,
  );
  await assert.rejects(read, (err: unknown) => isCrawlError(err) && err === full);
  assert.equal(calls, 1);
});
