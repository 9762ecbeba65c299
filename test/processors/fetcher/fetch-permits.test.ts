import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FetchPermits } from '../../../processors/fetcher/fetch-permits.js';

test('fetch permits: at most the size held at once, handed to waiters in the order they asked', async () => {
  const permits = new FetchPermits(2);
  assert.equal(await permits.take(), true);
  assert.equal(await permits.take(), true);
  const order: number[] = [];
  const waiters = [1, 2, 3].map((n) => permits.take().then((taken) => (order.push(n), taken)));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, [], 'a third permit was handed out');
  assert.equal(permits.queued, 3);
  permits.give();
  permits.give();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, [1, 2]);
  // closing ends the last wait (false), and every later take; permits given back after that are kept
  permits.close();
  assert.deepEqual(await Promise.all(waiters), [true, true, false]);
  assert.equal(await permits.take(), false);
  permits.give();
  assert.equal(permits.queued, 0);
});
