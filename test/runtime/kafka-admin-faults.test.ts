import { test } from 'node:test';
import assert from 'node:assert/strict';
import kafkajs, { type Admin } from 'kafkajs';
import { KafkaAdmin } from '../../runtime/engines/kafka/kafka-admin.js';
import { isTransientFault } from '../../runtime/engines/kafka/kafka-common.js';
import { isCrawlError } from '../../core/errors.js';

const { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError, KafkaJSSASLAuthenticationError } =
  kafkajs;

/** kafkajs' constructors as its JavaScript has them (its typings leave out the arguments). */
const make = (ctor: unknown, ...args: unknown[]): Error => new (ctor as new (...a: unknown[]) => Error)(...args);
const authFailed = () => make(KafkaJSSASLAuthenticationError, 'SASL PLAIN authentication failed');

const refused = () => new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:39192');
const unknownTopic = () =>
  make(KafkaJSProtocolError, {
    type: 'UNKNOWN_TOPIC_OR_PARTITION',
    code: 3,
    retriable: true,
    message: 'This server does not host this topic-partition',
  });

/** An admin whose describeCluster throws each of `faults` in turn, then answers. */
function flakyAdmin(faults: Error[]): { admin: KafkaAdmin; calls: () => number } {
  let calls = 0;
  const raw = {
    describeCluster: () => {
      const fault = faults[calls++];
      return fault ? Promise.reject(fault) : Promise.resolve({ clusterId: 'c1', brokers: [{}, {}, {}] });
    },
    disconnect: () => Promise.resolve(),
  } as unknown as Admin;
  return { admin: new KafkaAdmin(raw, () => undefined), calls: () => calls };
}

test('a broker that refuses connections while others serve is asked again, not fatal at start (chaos run, seed 96148467)', async () => {
  const { admin, calls } = flakyAdmin([
    refused(),
    new KafkaJSNumberOfRetriesExceeded(refused(), { retryCount: 8, retryTime: 2000 }),
  ]);
  assert.equal(await admin.clusterId(), 'c1');
  assert.equal(calls(), 3);
});

test('an authentication failure or a missing topic fails at once with CS_KAFKA', async () => {
  for (const fault of [authFailed(), unknownTopic()]) {
    const { admin, calls } = flakyAdmin([fault]);
    await assert.rejects(admin.brokerCount(), (e: unknown) => isCrawlError(e) && e.code === 'CS_KAFKA');
    assert.equal(calls(), 1, fault.name);
  }
});

test('isTransientFault looks through spent retries to their cause', () => {
  assert.equal(isTransientFault(refused()), true);
  assert.equal(isTransientFault(new KafkaJSNumberOfRetriesExceeded(refused(), { retryCount: 5, retryTime: 1 })), true);
  assert.equal(
    isTransientFault(new KafkaJSNumberOfRetriesExceeded(authFailed(), { retryCount: 5, retryTime: 1 })),
    false,
  );
  assert.equal(isTransientFault(unknownTopic()), false);
  assert.equal(isTransientFault(new Error('ECONNREFUSED')), false);
});
