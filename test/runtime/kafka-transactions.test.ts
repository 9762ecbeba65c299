import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Producer } from 'kafkajs';
import { KafkajsTransactionalProducer } from '../../runtime/engines/kafka/kafka-transactions.js';
import type { OutRecord } from '../../runtime/engines/kafka/kafka-common.js';
import { BARE_TOPIC_NAMES } from '../../runtime/topology.js';

const record = (partition: number): OutRecord => ({
  topic: 'changelog',
  partition,
  key: Buffer.from(`k${partition}`),
  value: Buffer.from('v'),
  timestamp: 1,
});

/**
 * A kafkajs producer whose first send answers like kafkajs after a leader moved to a broker that
 * had already answered: partition 1 is missing from the results (and was never written).
 */
function leaderMoveProducer(): { producer: Producer; events: string[] } {
  const events: string[] = [];
  let sends = 0;
  const tx = {
    sendBatch: ({ topicMessages }: { topicMessages: { topic: string; messages: { partition: number }[] }[] }) => {
      sends++;
      const partitions = [...new Set(topicMessages.flatMap((t) => t.messages.map((m) => m.partition)))];
      const answered = sends === 1 ? partitions.filter((p) => p !== 1) : partitions;
      events.push(`send ${answered.join(',')}`);
      return Promise.resolve(
        answered.map((p) => ({
          topicName: 'changelog',
          partition: p,
          errorCode: 0,
          baseOffset: String(10 * sends + p),
        })),
      );
    },
    sendOffsets: () => Promise.resolve(),
    commit: () => (events.push('commit'), Promise.resolve()),
    abort: () => (events.push('abort'), Promise.resolve()),
    isActive: () => true,
  };
  const producer = { transaction: () => Promise.resolve(tx), disconnect: () => Promise.resolve() };
  return { producer: producer as unknown as Producer, events };
}

test('a send that leaves a partition out (kafkajs after a leader move) is aborted and the whole transaction sent again, never committed without it', async () => {
  const { producer, events } = leaderMoveProducer();
  const tp = new KafkajsTransactionalProducer(producer, 'task-0', () => undefined, BARE_TOPIC_NAMES);
  const bases = await tp.commit([record(0), record(1), record(2)], 'group', []);
  assert.deepEqual(events, ['send 0,2', 'abort', 'send 0,1,2', 'commit']);
  assert.deepEqual(
    [...bases].map(([k, v]) => [k.replace('\u0000', '/'), v]),
    [
      ['changelog/0', 20],
      ['changelog/1', 21],
      ['changelog/2', 22],
    ],
  );
});
