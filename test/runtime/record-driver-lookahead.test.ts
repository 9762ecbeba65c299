import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CrawlError } from '../../core/errors.js';
import { RecordDriver } from '../../runtime/record-driver.js';
import type { ConsumedRawRecord } from '../../runtime/record.js';
import type { StreamTask } from '../../runtime/task.js';

const records = (n: number): ConsumedRawRecord[] =>
  Array.from({ length: n }, (_, i) => ({
    topic: 'jobs',
    partition: 0,
    offset: i,
    key: Buffer.from(`k${i}`),
    value: Buffer.from(`v${i}`),
    timestamp: 0,
  }));

interface Gate {
  offset: number;
  release(fail?: boolean): void;
}

/**
 * A task whose records finish when the test releases them, in any order, and a host that logs
 * what the driver reports. `positions` is the offset the next commit would record after each advance.
 */
function harness(lookahead: number) {
  const gates: Gate[] = [];
  const positions: number[] = [];
  const deadLetters: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const task = {
    lookahead,
    concurrency: 1,
    process(r: ConsumedRawRecord): Promise<void> {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      return new Promise<void>((resolve, reject) => {
        gates.push({
          offset: r.offset,
          release: (fail) => {
            inFlight--;
            if (fail) reject(new CrawlError('CS_PARSE', `record ${r.offset} failed`));
            else resolve();
          },
        });
      });
    },
  } as unknown as StreamTask;
  const driver = new RecordDriver(task, {
    advance: (r) => positions.push(r.offset + 1),
    deadLetter: (r) => deadLetters.push(r.offset),
    fatal: (err) => {
      throw err;
    },
  });
  return { driver, gates, positions, deadLetters, maxInFlight: () => maxInFlight };
}

const turns = async (n = 10) => {
  for (let i = 0; i < n; i++) await new Promise(setImmediate);
};

test('with lookahead, records are handed in before earlier ones finish, never more than the lookahead at once', async () => {
  const h = harness(4);
  const done = h.driver.processInOrder(records(10), () => true);
  await turns();
  assert.deepEqual(
    h.gates.map((g) => g.offset),
    [0, 1, 2, 3],
  );
  // finishing in reverse order: no position moves until record 0 has finished
  for (const g of [...h.gates].reverse().slice(0, 3)) g.release();
  await turns();
  assert.deepEqual(h.positions, [], 'a position passed a record still in flight');
  h.gates[0]!.release();
  await turns();
  assert.deepEqual(h.positions, [1, 2, 3, 4], 'positions advance one by one, in order, once the prefix is done');
  // the rest, each as soon as it is handed in
  for (let next = 4; next < 10; next++) {
    while (h.gates.length <= next) await turns(1);
    h.gates[next]!.release();
  }
  assert.equal(await done, 10);
  assert.deepEqual(h.positions, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.equal(h.maxInFlight(), 4);
});

test('with lookahead, a failed record is dead-lettered alone and its position still advances in order', async () => {
  const h = harness(3);
  const done = h.driver.processInOrder(records(3), () => true);
  await turns();
  h.gates[1]!.release(true);
  h.gates[2]!.release();
  await turns();
  assert.deepEqual(h.deadLetters, [1]);
  assert.deepEqual(h.positions, []);
  h.gates[0]!.release();
  assert.equal(await done, 3);
  assert.deepEqual(h.positions, [1, 2, 3]);
});

test('with lookahead, a stop starts nothing new but waits for the records in flight', async () => {
  const h = harness(4);
  let running = true;
  const done = h.driver.processInOrder(records(10), () => running);
  await turns();
  running = false;
  h.gates[0]!.release();
  await turns();
  assert.equal(h.gates.length, 4, 'a record was started after the stop');
  let finished = false;
  void done.then(() => (finished = true));
  await turns();
  assert.equal(finished, false, 'returned with records still in flight');
  for (const g of h.gates.slice(1)) g.release();
  assert.equal(await done, 4);
  assert.deepEqual(h.positions, [1, 2, 3, 4]);
  assert.equal(h.driver.busy(), 0);
});
