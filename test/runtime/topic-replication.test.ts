import { test } from 'node:test';
import assert from 'node:assert/strict';
import { replicationFor } from '../../runtime/engines/kafka/topics.js';

test('topics create replicates 3 times with min.insync.replicas 2 on a cluster of 3 or more brokers', () => {
  for (const brokers of [3, 4, 9]) {
    const r = replicationFor(brokers);
    assert.equal(r.replicationFactor, 3, `${brokers} brokers`);
    assert.equal(r.minInsyncReplicas, 2, `${brokers} brokers`);
    assert.equal(r.said, `replication factor 3 (the cluster has ${brokers} brokers), min.insync.replicas 2`);
  }
});

test('on fewer than 3 brokers topics get one replica per broker, and the line says what that costs', () => {
  const one = replicationFor(1);
  assert.equal(one.replicationFactor, 1);
  assert.equal(one.minInsyncReplicas, undefined, "the broker's own: 2 would refuse every write to one replica");
  assert.match(one.said, /^replication factor 1 \(the cluster has 1 broker, fewer than the 3 .*its partitions\)/);
  const two = replicationFor(2);
  assert.equal(two.replicationFactor, 2);
  assert.equal(two.minInsyncReplicas, undefined);
  assert.match(
    two.said,
    /^replication factor 2 \(the cluster has 2 brokers, .*redundancy\), the broker's min\.insync\.replicas$/,
  );
});

test("an explicit --replication-factor or --min-insync-replicas wins over the cluster's default", () => {
  assert.deepEqual(replicationFor(5, { replicationFactor: 1 }), {
    replicationFactor: 1,
    said: "replication factor 1 (--replication-factor), the broker's min.insync.replicas",
  });
  assert.deepEqual(replicationFor(5, { minInsyncReplicas: 3 }), {
    replicationFactor: 3,
    minInsyncReplicas: 3,
    said: 'replication factor 3 (the cluster has 5 brokers), min.insync.replicas 3 (--min-insync-replicas)',
  });
  const both = replicationFor(5, { replicationFactor: 5, minInsyncReplicas: 1 });
  assert.equal(both.replicationFactor, 5);
  assert.equal(both.minInsyncReplicas, 1);
});

test('a replication factor the cluster cannot hold, or a min.insync.replicas above it, is refused by name', () => {
  assert.throws(
    () => replicationFor(1, { replicationFactor: 3 }),
    (err: Error & { code?: string }) =>
      err.code === 'CS_INVALID_OPTION' && /--replication-factor 3 exceeds the cluster's 1 broker/.test(err.message),
  );
  assert.throws(
    () => replicationFor(2, { minInsyncReplicas: 3 }),
    (err: Error & { code?: string }) =>
      err.code === 'CS_INVALID_OPTION' &&
      /--min-insync-replicas 3 exceeds the replication factor 2 \(the cluster has 2 brokers\)/.test(err.message),
  );
});
