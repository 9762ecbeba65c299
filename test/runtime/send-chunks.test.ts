import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunksOf, SEND_CHUNK_BYTES, type OutRecord } from '../../runtime/engines/kafka/kafka-port.js';

const record = (n: number, bytes: number): OutRecord => ({
  topic: 't',
  partition: n % 3,
  key: Buffer.from(`k${n}`),
  value: Buffer.alloc(bytes),
  timestamp: n,
});

test('a commit is sent in chunks of at most the limit, in order, each oversized record alone, none lost', () => {
  const records = [
    record(0, 100_000),
    record(1, 300_000),
    record(2, 200_000),
    record(3, 10 * 1024 * 1024),
    record(4, 10),
    record(5, 600_000),
  ];
  const chunks = chunksOf(records, SEND_CHUNK_BYTES);
  assert.deepEqual(
    chunks.map((c) => c.map((r) => r.timestamp)),
    [[0, 1], [2], [3], [4], [5]],
  );
  assert.deepEqual(chunks.flat(), records);
  for (const c of chunks)
    if (c.length > 1) assert.ok(c.reduce((n, r) => n + r.key.length + r.value!.length, 0) <= SEND_CHUNK_BYTES);
  assert.deepEqual(chunksOf([], SEND_CHUNK_BYTES), []);
  assert.equal(chunksOf([record(0, 0), { ...record(1, 0), value: null }], 1000).length, 1, 'tombstones are small');
});
