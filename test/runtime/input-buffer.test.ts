import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InputBuffer } from '../../runtime/engines/kafka/input-bounds.js';
import { BATCH_BYTES, BATCH_RECORDS } from '../../runtime/batch-bounds.js';
import type { ConsumedRawRecord } from '../../runtime/record.js';
import { seededRandom } from '../../synthetic-web/seeded-random.js';

const record = (offset: number, valueBytes: number | null): ConsumedRawRecord => ({
  topic: 't',
  partition: 0,
  offset,
  key: Buffer.from(`k${offset}`),
  value: valueBytes === null ? null : Buffer.alloc(valueBytes, 1),
  timestamp: offset,
});
const sum = (records: readonly ConsumedRawRecord[]) =>
  records.reduce((n, r) => n + r.key.length + (r.value?.length ?? 0), 0);

test('the bytes held follow every push, take and put-back, in offset order', () => {
  const random = seededRandom(7);
  const buffer = new InputBuffer();
  const all: ConsumedRawRecord[] = [];
  let next = 0;
  const held: ConsumedRawRecord[] = [];
  for (let round = 0; round < 300; round++) {
    for (let i = Math.floor(random() * 40); i > 0; i--) {
      // tombstones, tiny records and pages bigger than a whole batch
      const roll = random();
      const r = record(next++, roll < 0.1 ? null : roll < 0.2 ? BATCH_BYTES * 2 : Math.floor(random() * 40_000));
      all.push(r);
      buffer.push(r);
      held.push(r);
    }
    const taken = buffer.take();
    if (held.length > 0) assert.ok(taken.length >= 1, 'at least one record when any is held');
    assert.ok(taken.length <= BATCH_RECORDS);
    // past BATCH_BYTES only by its last record
    assert.ok(
      taken.length <= 1 || sum(taken.slice(0, -1)) < BATCH_BYTES,
      `${taken.length} records, ${sum(taken)} bytes`,
    );
    assert.deepEqual(taken, held.splice(0, taken.length));
    // some of what was taken goes back, as a task stopped part-way or rewound puts it
    const back = taken.slice(Math.floor(random() * (taken.length + 1)));
    buffer.putBack(back);
    held.unshift(...back);
    assert.equal(buffer.length, held.length);
    assert.equal(buffer.bytes, sum(held));
  }
  while (buffer.length > 0) held.splice(0, buffer.take().length);
  assert.equal(held.length, 0);
  assert.equal(buffer.bytes, 0);
  assert.deepEqual(buffer.take(), []);
  assert.ok(all.length > 3_000, `${all.length} records pushed`);
});

test('tiny records are taken BATCH_RECORDS at a time', () => {
  const buffer = new InputBuffer();
  for (let i = 0; i < BATCH_RECORDS * 2 + 3; i++) buffer.push(record(i, 4));
  assert.equal(buffer.take().length, BATCH_RECORDS);
  assert.equal(buffer.take().length, BATCH_RECORDS);
  assert.equal(buffer.take().length, 3);
});
