import { test } from 'node:test';
import assert from 'node:assert/strict';
import { partitionFor } from '../../runtime/partitioner.js';

// Expected partitions computed by Kafka's Java client (Utils.toPositive(Utils.murmur2(key)) % n)
// for these UTF-8 keys; any client using the Java default partitioner agrees.
const PINS: [string, number, number][] = [
  ['example.com', 4, 1],
  ['example.co.uk', 4, 0],
  ['alpha.test', 4, 0],
  ['beta.test', 12, 4],
  ['wikipedia.org', 16, 0],
];

test('sites land in the partitions the Java murmur2 partitioner picks', () => {
  for (const [site, partitions, expected] of PINS) {
    assert.equal(
      partitionFor(Buffer.from(site, 'utf8'), partitions),
      expected,
      `${site} over ${partitions} partitions`,
    );
  }
});
