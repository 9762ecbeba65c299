import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Admin } from 'kafkajs';
import { KafkaAdmin } from '../../runtime/engines/kafka/kafka-admin.js';

type Meta = Awaited<ReturnType<Admin['fetchTopicMetadata']>>;
const led = (name: string, leader = 1): Meta['topics'][number] => ({
  name,
  partitions: [0, 1].map((partitionId) => ({
    partitionErrorCode: 0,
    partitionId,
    leader,
    replicas: [1],
    isr: [1],
    offlineReplicas: [],
  })),
});
const unknownTopic = () =>
  Object.assign(new Error('This server does not host this topic-partition'), {
    type: 'UNKNOWN_TOPIC_OR_PARTITION',
    retriable: true,
  });

/** A KafkaAdmin over an Admin whose fetchTopicMetadata answers from `answers` in turn. */
function adminAnswering(answers: (() => Meta)[]): { admin: KafkaAdmin; asked: string[][] } {
  const asked: string[][] = [];
  const fake = {
    fetchTopicMetadata: ({ topics }: { topics: string[] }) => {
      asked.push(topics);
      const next = answers.shift();
      return next === undefined ? Promise.reject(new Error('no more answers')) : Promise.resolve().then(next);
    },
  } as unknown as Admin;
  return { admin: new KafkaAdmin(fake, () => undefined), asked };
}

test('awaitLeaders asks again while a broker has not heard of the new topics, then while a leader is elected', async () => {
  const { admin, asked } = adminAnswering([
    () => {
      throw unknownTopic();
    },
    () => ({ topics: [led('a'), led('b', -1)] }),
    () => ({ topics: [led('b')] }),
  ]);
  await admin.awaitLeaders(['a', 'b']);
  assert.deepEqual(asked, [['a', 'b'], ['a', 'b'], ['b']]);
});

test('awaitLeaders gives up on a non-retriable error at once, and on retriable ones at its deadline', async () => {
  const { admin } = adminAnswering([
    () => {
      throw Object.assign(new Error('not authorized'), { type: 'TOPIC_AUTHORIZATION_FAILED', retriable: false });
    },
  ]);
  await assert.rejects(admin.awaitLeaders(['a']), {
    code: 'CS_KAFKA',
    message: /cannot read the metadata of a: .*not authorized/,
  });
  const forever = adminAnswering(
    Array.from({ length: 100 }, () => () => {
      throw unknownTopic();
    }),
  );
  await assert.rejects(forever.admin.awaitLeaders(['a'], 300), {
    code: 'CS_KAFKA',
    message: /^topics a have no leader for every partition after 300 ms: UNKNOWN_TOPIC_OR_PARTITION/,
  });
});

test("endOffsets asks again after kafkajs' TypeError of a broker just back, and gives up on any other TypeError", async () => {
  let calls = 0;
  const answers: (() => unknown)[] = [
    () => {
      // what kafkajs 2.2.4's fetchTopicOffsets throws when a broker answers for partitions it no longer leads
      throw new TypeError("Cannot destructure property 'partitions' of 'low.pop(...)' as it is undefined.");
    },
    () => [
      { partition: 0, offset: '7', high: '7', low: '0' },
      { partition: 1, offset: '3', high: '3', low: '0' },
    ],
  ];
  const fake = {
    fetchTopicOffsets: () => {
      calls++;
      return Promise.resolve().then(answers.shift()!);
    },
  } as unknown as Admin;
  const admin = new KafkaAdmin(fake, () => undefined);
  assert.deepEqual(
    await admin.endOffsets('t'),
    new Map([
      [0, 7],
      [1, 3],
    ]),
  );
  assert.equal(calls, 2);
  const broken = new KafkaAdmin(
    {
      fetchTopicOffsets: () => Promise.reject(new TypeError('something else is undefined')),
    } as unknown as Admin,
    () => undefined,
  );
  await assert.rejects(broken.endOffsets('t'), { code: 'CS_KAFKA', message: /cannot read the end offsets of t/ });
});
