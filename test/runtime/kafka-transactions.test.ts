import { test } from 'node:test';
import assert from 'node:assert/strict';
import kafkajs, { type Producer } from 'kafkajs';
import { KafkajsTransactionalProducer } from '../../runtime/engines/kafka/kafka-transactions.js';
import { transactionBusy, type OutRecord } from '../../runtime/engines/kafka/kafka-common.js';
import { BARE_TOPIC_NAMES } from '../../runtime/topology.js';

const record = (partition: number): OutRecord => ({
  topic: 'changelog',
  partition,
  key: Buffer.from(`k${partition}`),
  value: Buffer.from('v'),
  timestamp: 1,
});

type SendBatch = (req: {
  topicMessages: { topic: string; messages: { partition: number }[] }[];
  compression?: number;
}) => Promise<{ topicName: string; partition: number; errorCode: number; baseOffset: string }[]>;

/** A kafkajs producer whose transactions send with `sendBatch` and log commit and abort in `events`. */
function fakeProducer(sendBatch: SendBatch, events: string[]): Producer {
  const tx = {
    sendBatch,
    sendOffsets: () => Promise.resolve(),
    commit: () => (events.push('commit'), Promise.resolve()),
    abort: () => (events.push('abort'), Promise.resolve()),
    isActive: () => true,
  };
  return { transaction: () => Promise.resolve(tx), disconnect: () => Promise.resolve() } as unknown as Producer;
}

/** The port's transactional producer over `producer`, as task 0's. */
const transactional = (producer: Producer, compression = kafkajs.CompressionTypes.None) =>
  new KafkajsTransactionalProducer(producer, 'task-0', () => undefined, BARE_TOPIC_NAMES, compression);

const partitionsOf = (req: Parameters<SendBatch>[0]) => [
  ...new Set(req.topicMessages.flatMap((t) => t.messages.map((m) => m.partition))),
];

test('a send that leaves a partition out (kafkajs after a leader move) is aborted and the whole transaction sent again, never committed without it', async () => {
  // partition 1's first send answers like kafkajs after its leader moved to a broker that had
  // already answered: no result for it (and nothing written)
  const events: string[] = [];
  const sent = new Map<number, number>();
  const producer = fakeProducer((req) => {
    const [p] = partitionsOf(req) as [number];
    const n = (sent.get(p) ?? 0) + 1;
    sent.set(p, n);
    const answered = p === 1 && n === 1 ? [] : [p];
    events.push(`send ${p}${answered.length === 0 ? ' (no result)' : ''}`);
    return Promise.resolve(
      answered.map((q) => ({ topicName: 'changelog', partition: q, errorCode: 0, baseOffset: String(10 * n + q) })),
    );
  }, events);
  const tp = transactional(producer);
  const bases = await tp.commit([record(0), record(1), record(2)], 'group', []);
  assert.deepEqual(events, ['send 0', 'send 1 (no result)', 'send 2', 'abort', 'send 0', 'send 1', 'send 2', 'commit']);
  assert.deepEqual(
    [...bases].map(([k, v]) => [k.replace('\u0000', '/'), v]),
    [
      ['changelog/0', 20],
      ['changelog/1', 21],
      ['changelog/2', 22],
    ],
  );
});

test('each send carries one partition, and a failed send aborts the transaction only after every other send has settled', async () => {
  // kafkajs retries a multi-broker send while other brokers' requests are in flight and appends
  // their partitions twice; here partition 0's send fails at once while partition 2's is slow
  const events: string[] = [];
  let attempt = 0;
  const producer = fakeProducer(async (req) => {
    const partitions = partitionsOf(req);
    events.push(`send ${partitions.join(',')}`);
    assert.equal(req.compression, kafkajs.CompressionTypes.LZ4, "a send without the port's codec");
    const [p] = partitions as [number];
    if (p === 0 && attempt++ === 0)
      throw Object.assign(new Error('CONCURRENT_TRANSACTIONS'), { type: 'CONCURRENT_TRANSACTIONS' });
    if (p === 2) await new Promise((r) => setTimeout(r, 50));
    events.push(`sent ${p}`);
    return [{ topicName: 'changelog', partition: p, errorCode: 0, baseOffset: String(p) }];
  }, events);
  const tp = transactional(producer, kafkajs.CompressionTypes.LZ4);
  await tp.commit([record(0), record(2), record(0), record(1)], 'group', []);
  assert.ok(
    events.every((e) => !e.startsWith('send ') || !e.includes(',')),
    `a send carried several partitions: ${events.join(' | ')}`,
  );
  assert.ok(
    events.indexOf('sent 2') < events.indexOf('abort'),
    `aborted while a send was in flight: ${events.join(' | ')}`,
  );
  assert.equal(events.at(-1), 'commit');
});

test("a transaction kafkajs gave up retrying on the broker's CONCURRENT_TRANSACTIONS is aborted and sent again, not lost", async () => {
  // seen in the 64-partition rolling test: AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS
  // past kafkajs' own retries, which throws KafkaJSNumberOfRetriesExceeded naming the broker's
  // answer only as its cause; the fetcher task lost its commit and the results of its fetches
  const busy = new kafkajs.KafkaJSProtocolError({
    type: 'CONCURRENT_TRANSACTIONS',
    code: 51,
    retriable: true,
    message:
      'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing',
  } as unknown as Error);
  const events: string[] = [];
  let attempt = 0;
  const producer = fakeProducer((req) => {
    const [p] = partitionsOf(req) as [number];
    events.push(`send ${p}`);
    if (attempt++ === 0) throw new kafkajs.KafkaJSNumberOfRetriesExceeded(busy, { retryCount: 5, retryTime: 1_000 });
    return Promise.resolve([{ topicName: 'changelog', partition: p, errorCode: 0, baseOffset: '7' }]);
  }, events);
  const tp = transactional(producer);
  const bases = await tp.commit([record(3)], 'group', []);
  assert.deepEqual(events, ['send 3', 'abort', 'send 3', 'commit']);
  assert.equal(bases.get('changelog\u00003'), 7);
});

test('transactionBusy: the busy answers by type, message or cause; any other failure is not busy', () => {
  const busy = (type: string) => Object.assign(new Error(type.toLowerCase()), { type });
  const wrapped = (cause: unknown) =>
    new kafkajs.KafkaJSNumberOfRetriesExceeded(cause as Error, { retryCount: 5, retryTime: 1 });
  assert.equal(transactionBusy(busy('CONCURRENT_TRANSACTIONS')), true);
  assert.equal(transactionBusy(wrapped(busy('NOT_COORDINATOR'))), true);
  assert.equal(transactionBusy(new Error('x', { cause: wrapped(busy('COORDINATOR_LOAD_IN_PROGRESS')) })), true);
  assert.equal(transactionBusy(busy('INVALID_PRODUCER_EPOCH')), false);
  assert.equal(transactionBusy(wrapped(busy('INVALID_PRODUCER_EPOCH'))), false);
  assert.equal(transactionBusy(new Error('Connection refused')), false);
  assert.equal(transactionBusy(undefined), false);
});
