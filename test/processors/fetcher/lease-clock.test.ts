import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseClock, OFFSET_WINDOW_MS } from '../../../processors/fetcher/lease-clock.js';

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
});

test('reset forgets the samples and the hosts: a new frontier owner may run on another clock', () => {
  const c = skewed(5_000);
  c.arrive(10);
  c.clock.reported('a.test', c.clock.offset);
  c.clock.reset();
  assert.equal(c.clock.known, false);
  assert.equal(c.clock.offset, 0);
  c.arrive(30);
  assert.equal(c.clock.offset, 5_030);
  assert.equal(c.clock.offsetFor('a.test'), 5_030);
});
