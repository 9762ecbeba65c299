import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LeaseClock,
  OFFSET_WINDOW_MS,
  ProcessFrame,
  SETTLE_MS,
  SHARED_FRAME_TOLERANCE_MS,
} from '../../../processors/fetcher/lease-clock.js';

/**
 * A fetcher's lease clock `skewMs` off the frontier's (positive: ahead), on a local clock the test
 * moves. `arrive(transitMs)` delivers a lease issued `transitMs` ago on the frontier's clock.
 */
function skewed(skewMs: number) {
  let local = 50_000;
  const clock = new LeaseClock(() => local);
  const frontierNow = () => local - skewMs;
  return {
    clock,
    frontierNow,
    arrive: (transitMs: number) => clock.observe(frontierNow() - transitMs),
    advance: (ms: number) => (local += ms),
  };
}

for (const skewMs of [5_000, -5_000, 0]) {
  test(`a fetcher clock ${skewMs} ms off the frontier's reads lease times as the frontier meant them, at most the least transit late`, () => {
    const c = skewed(skewMs);
    for (const transit of [300, 40, 120, 15, 900]) {
      c.arrive(transit);
      c.advance(200);
    }
    assert.equal(c.clock.offset, skewMs + 15, 'skew plus the least transit');
    // the frontier's notBefore 1 s from now falls 15 ms later on the fetcher's clock, never earlier
    const notBefore = c.frontierNow() + 1_000;
    assert.equal(c.clock.toLocal(notBefore) - c.clock.now(), 1_015);
    // a fetch started now is reported on the frontier's clock, 15 ms before its now
    assert.equal(c.clock.toFrontier(c.clock.now()), c.frontierNow() - 15);
  });
}

test("a fetcher reads how far its wall clock runs ahead of the frontier's, whatever its monotonic clock counts from: the skew plus the least transit", () => {
  const origin = 1_796_552_000_000;
  for (const skewMs of [3_000, -10_000]) {
    let mono = 1_234;
    const clock = new LeaseClock(() => mono);
    const wall = () => mono + origin;
    assert.equal(clock.wallAheadMs(wall()), undefined, 'nothing to tell before a lease');
    for (const transit of [250, 60, 400]) {
      clock.observe(wall() - skewMs - transit);
      mono += 100;
    }
    assert.equal(clock.wallAheadMs(wall()), skewMs + 60);
  }
});

test("the offset is the least sample of the last minute: a slow lease never raises it, and the minimum's expiry does (the frontier's clock stepped back or drifted)", () => {
  const c = skewed(5_000);
  c.arrive(10);
  c.advance(OFFSET_WINDOW_MS / 2);
  c.arrive(200);
  assert.equal(c.clock.offset, 5_010, 'a slower lease leaves the minimum');
  c.advance(OFFSET_WINDOW_MS / 2 + 1);
  assert.equal(c.clock.offset, 5_200, 'the 10 ms sample left the window; the next least one counts');
  c.advance(10 * OFFSET_WINDOW_MS);
  assert.equal(c.clock.offset, 5_200, 'with no lease since, the newest sample stays');
  c.arrive(-3_000);
  assert.equal(c.clock.offset, 2_000, 'the frontier stepped 3 s ahead: followed at once');
});

test('a lease that waited for the assignment sets a large offset, which falls with the first fast lease', () => {
  const c = skewed(0);
  c.arrive(4_000);
  assert.equal(c.clock.offset, 4_000);
  c.arrive(20);
  assert.equal(c.clock.offset, 20);
});

test("a host's lease keeps the offset its last report used when the offset has fallen since, so its gap holds on the fetcher's clock", () => {
  const c = skewed(-5_000);
  c.arrive(4_000);
  c.clock.reported('a.test', c.clock.offset);
  c.arrive(20);
  assert.equal(c.clock.offsetFor('a.test'), -1_000, 'the offset of the report, 3,980 ms above the current one');
  assert.equal(c.clock.offsetFor('b.test'), -4_980, 'a host without a report takes the current offset');
  c.clock.reported('a.test', c.clock.offset);
  assert.equal(c.clock.offsetFor('a.test'), -4_980, 'once reported with the lower offset, the host follows it');
  c.arrive(-200);
  assert.equal(c.clock.offsetFor('a.test'), -4_980, 'never below its last report');
  c.clock.forget('a.test');
  assert.equal(c.clock.offsetFor('a.test'), c.clock.offset, 'a host whose lease was dropped takes the current offset');
  assert.ok(c.clock.offset < -4_980);
});

test("reset forgets the samples, not the hosts' reports: a new frontier owner may run on another clock, and plans a host from its last report", () => {
  const c = skewed(5_000);
  c.arrive(10);
  c.clock.reported('a.test', c.clock.offset);
  c.clock.reset();
  assert.equal(c.clock.known, false);
  assert.equal(c.clock.offset, 0);
  c.arrive(30);
  assert.equal(c.clock.offset, 5_030);
  assert.equal(c.clock.offsetFor('b.test'), 5_030, 'a host without a report takes the new offset');
  c.arrive(-2_000);
  assert.equal(c.clock.offset, 3_000, "the new owner's clock runs 2 s ahead of the old one's");
  assert.equal(c.clock.offsetFor('a.test'), 5_010, 'the offset its report subtracted, above the new one');
});

test("the fetcher tasks of one process read leases on the process's least offset, so two partitions' slots on one address stay a slot apart when their leases travel unlike", () => {
  let local = 50_000;
  const frame = new ProcessFrame();
  const slow = new LeaseClock(() => local, OFFSET_WINDOW_MS, frame);
  const fast = new LeaseClock(() => local, OFFSET_WINDOW_MS, frame);
  // one frontier clock, 2 s behind this machine's; one partition's leases take 150 ms at least, the other's 20 ms
  const frontierNow = () => local - 2_000;
  for (let i = 0; i < 5; i++) {
    slow.observe(frontierNow() - 150 - 40 * i);
    fast.observe(frontierNow() - 20 - 10 * i);
    local += 100;
  }
  assert.equal(slow.offset, 2_020, 'the process floor, not its own 2,150');
  assert.equal(fast.offset, 2_020);
  // slots 230 ms apart on the frontier's clock start 230 ms apart here, whichever task starts them
  const slot = frontierNow() + 1_000;
  assert.equal(fast.toLocal(slot + 230) - slow.toLocal(slot), 230);
  // a lease of the slow partition past its window by the floor is late, though not by its own offset
  assert.ok(slow.toFrontier(slow.now()) > frontierNow() - 150);
  // without a frame, each keeps its own
  const alone = new LeaseClock(() => local);
  alone.observe(frontierNow() - 150);
  assert.equal(alone.offset, 2_150);
});

test('a task whose leases come from a frontier clock off the others by more than the tolerance keeps its own offset', () => {
  const local = 50_000;
  const frame = new ProcessFrame();
  const synced = new LeaseClock(() => local, OFFSET_WINDOW_MS, frame);
  const off = new LeaseClock(() => local, OFFSET_WINDOW_MS, frame);
  synced.observe(local - 30);
  off.observe(local - 30 - SHARED_FRAME_TOLERANCE_MS - 3_000);
  assert.equal(synced.offset, 30);
  assert.equal(
    off.offset,
    30 + SHARED_FRAME_TOLERANCE_MS + 3_000,
    'its own: the floor would drop all its leases as late',
  );
  // within the tolerance, the floor
  const near = new LeaseClock(() => local, OFFSET_WINDOW_MS, frame);
  near.observe(local - 30 - SHARED_FRAME_TOLERANCE_MS);
  assert.equal(near.offset, 30);
  // a reset task reads 0 until its first lease, whatever the frame holds
  near.reset();
  assert.equal(near.offset, 0);
});

test("a new task whose first leases waited for its assignment judges them late on the process floor, and waits on its own offset; once settled, a far offset is another frontier's clock", () => {
  let local = 50_000;
  const frame = new ProcessFrame();
  const running = new LeaseClock(() => local, OFFSET_WINDOW_MS, frame);
  running.observe(local - 30);
  const fresh = new LeaseClock(() => local, OFFSET_WINDOW_MS, frame);
  // its first lease was written 5 s ago, while the partition had no fetcher
  fresh.observe(local - 5_000);
  assert.equal(fresh.offsetFor('h.test'), 5_000, 'waits on its own: never early');
  assert.equal(fresh.lateOffsetFor('h.test'), 30, 'judged on the floor: a start 5 s late is dropped, not made');
  // a lease that travelled as fast as the others brings it onto the floor for both
  fresh.observe(local - 40);
  assert.equal(fresh.offsetFor('h.test'), 30);
  assert.equal(fresh.lateOffsetFor('h.test'), 30);
  // a task whose leases stay 3 s above the floor past SETTLE_MS reads another frontier clock: its own for both
  const other = new LeaseClock(() => local, OFFSET_WINDOW_MS, frame);
  other.observe(local - 3_030);
  assert.equal(other.lateOffsetFor('h.test'), 30);
  local += SETTLE_MS;
  running.observe(local - 30);
  other.observe(local - 3_030);
  assert.equal(other.offsetFor('h.test'), 3_030);
  assert.equal(other.lateOffsetFor('h.test'), 3_030);
});
