import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { REJOIN_GIVE_UP_MS, RejoinSchedule } from '../../runtime/engines/kafka/rejoin-schedule.js';

const flush = () => new Promise((r) => setImmediate(r));

test('a rejoin waits 1 s, doubled per loss within a minute; losses while one waits share it; failures retry, then give up', async () => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 });
  try {
    const joins: number[] = [];
    let fail = false;
    let gaveUp: unknown;
    const schedule = new RejoinSchedule({
      rejoin: async () => {
        joins.push(Date.now());
        if (fail) throw new Error('no coordinator');
      },
      running: () => true,
      retrying: () => undefined,
      giveUp: (err) => (gaveUp = err),
    });
    schedule.request();
    schedule.request(); // shares the pending one
    mock.timers.tick(999);
    await flush();
    assert.deepEqual(joins, []);
    mock.timers.tick(1);
    await flush();
    assert.deepEqual(joins, [1_001_000]);
    // another loss soon after: 2 s
    schedule.request();
    mock.timers.tick(2_000);
    await flush();
    assert.deepEqual(joins, [1_001_000, 1_003_000]);
    // a minute of quiet: back to 1 s
    mock.timers.tick(61_000);
    schedule.request();
    mock.timers.tick(1_000);
    await flush();
    assert.equal(joins.length, 3);
    // failing rejoins retry with growing waits until five minutes have passed
    fail = true;
    schedule.request();
    for (let i = 0; i < 40 && gaveUp === undefined; i++) {
      mock.timers.tick(30_000);
      await flush();
    }
    assert.ok(gaveUp instanceof Error, 'never gave up');
    assert.ok(joins.at(-1)! - joins[3]! >= REJOIN_GIVE_UP_MS - 30_000, 'gave up too soon');
  } finally {
    mock.timers.reset();
  }
});

test('a stopped engine drops a pending rejoin', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    let joined = false;
    let running = true;
    const schedule = new RejoinSchedule({
      rejoin: async () => void (joined = true),
      running: () => running,
      retrying: () => undefined,
      giveUp: () => undefined,
    });
    schedule.request();
    running = false;
    mock.timers.tick(1_000);
    await flush();
    assert.equal(joined, false);
  } finally {
    mock.timers.reset();
  }
});
