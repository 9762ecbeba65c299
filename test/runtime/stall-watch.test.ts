import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineHealth } from '../../runtime/engine.js';
import { describePending, StallWatch } from '../../runtime/stall-watch.js';

const reading = (progress: number, pending?: string): EngineHealth => ({
  live: true,
  ready: true,
  state: 'running',
  tasks: 1,
  restoring: 0,
  progress,
  ...(pending !== undefined ? { pending } : {}),
});

test('a stall is work pending with the same progress for the whole limit, timed from the first such reading', () => {
  let now = 1_000_000;
  const watch = new StallWatch(60_000, () => now);
  assert.equal(watch.observe(reading(5, '3 in flight')), 0);
  now += 59_999;
  const almost = watch.observe(reading(5, '3 in flight'));
  assert.equal(almost, 59_999);
  assert.equal(watch.stalled(almost), false);
  now += 1;
  const stuck = watch.observe(reading(5, '3 in flight'));
  assert.equal(stuck, 60_000);
  assert.equal(watch.stalled(stuck), true);
  // any progress restarts the clock
  now += 10;
  assert.equal(watch.observe(reading(6, '3 in flight')), 0);
  now += 30_000;
  assert.equal(watch.observe(reading(6, '3 in flight')), 30_000);
});

test('an engine idle for a long time is not stalled the moment work arrives, and nothing pending stops the clock', () => {
  let now = 0;
  const watch = new StallWatch(1_000, () => now);
  assert.equal(watch.observe(reading(7)), 0);
  now += 3_600_000; // an hour idle, progress unchanged
  assert.equal(watch.observe(reading(7)), 0);
  assert.equal(watch.observe(reading(7, '1 input record not yet taken')), 0, 'the clock starts with the work');
  now += 999;
  assert.equal(watch.observe(reading(7, '1 input record not yet taken')), 999);
  now += 1;
  assert.equal(watch.stalled(watch.observe(reading(7, '1 input record not yet taken'))), true);
  assert.equal(watch.observe(reading(7)), 0, 'nothing pending: not stalled, however long');
  now += 5_000;
  assert.equal(watch.observe(reading(7, '1 in flight')), 0, 'pending again: a new clock');
});

test('pending work reads as counts, and is absent when there is none', () => {
  assert.equal(describePending({}), undefined);
  assert.equal(describePending({ unread: 0, inFlight: 0, uncommitted: 0, opening: 0 }), undefined);
  assert.equal(describePending({ unread: 1 }), '1 input record not yet taken');
  assert.equal(
    describePending({ unread: 12, inFlight: 3, uncommitted: 2, opening: 1 }),
    '12 input records not yet taken, 3 in flight, 2 tasks with work to commit, 1 assigned task not running',
  );
});
