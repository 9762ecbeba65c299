import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  WIRE_GATE_MARGIN_MS,
  WIRE_GATE_HOLD_MS,
  WireGate,
  type WireStart,
} from '../../../processors/fetcher/wire-gate.js';

/** A gate on a clock the test moves: `wait` advances the clock by what is asked and records it. */
function gated(gapMs: number) {
  let now = 1_000;
  const waited: number[] = [];
  const gate = new WireGate(gapMs, () => now);
  const wait = async (ms: number) => {
    waited.push(ms);
    now += ms;
    return true;
  };
  return { gate, wait, waited, at: () => now, advance: (ms: number) => (now += ms) };
}

/** Passes the gate, and sends and ends the request at once, as a fetch on an open connection does. */
async function sendNow(gate: WireGate, address: string, wait: (ms: number) => Promise<boolean>): Promise<void> {
  const start = await gate.pass(address, wait);
  assert.ok(start, 'let through');
  start.sent();
  start.done();
}

const SPACING = 100 + WIRE_GATE_MARGIN_MS;

test('the wire gate lets one start per address through every gap plus its margin, and none of another address waits', async () => {
  const g = gated(100);
  await sendNow(g.gate, '127.0.0.2', g.wait);
  await sendNow(g.gate, '127.0.0.3', g.wait);
  assert.deepEqual(g.waited, [], 'another address');
  g.advance(40);
  await sendNow(g.gate, '127.0.0.2', g.wait);
  assert.deepEqual(g.waited, [SPACING - 40], 'the second start on 127.0.0.2 waits out the rest of the gap');
  const second = g.at();
  await sendNow(g.gate, '127.0.0.2', g.wait);
  assert.equal(g.at() - second, SPACING, 'and the third a whole gap after the second');
});

test('a start still connecting holds its address: the next one goes a whole gap after the real send', async () => {
  const g = gated(100);
  const first = (await g.gate.pass('127.0.0.2', g.wait))!;
  const passedAt = g.at();
  // the first request's connect takes 150 ms (a loaded machine, a slow server): it is sent then.
  // A waiter behind it sleeps at most WIRE_GATE_HOLD_MS and is woken by the send, not by polling.
  const woken: string[] = [];
  const waits = async (ms: number, wake?: Promise<void>): Promise<boolean> => {
    if (wake === undefined) return g.wait(ms);
    assert.equal(ms, WIRE_GATE_HOLD_MS);
    g.advance(150 - (g.at() - passedAt));
    first.sent();
    const bound = new Promise<string>((resolve) => setTimeout(resolve, 2_000, 'never woken').unref());
    woken.push(await Promise.race([wake.then(() => 'woken'), bound]));
    return true;
  };
  const second = await g.gate.pass('127.0.0.2', waits);
  assert.ok(second);
  assert.deepEqual(woken, ['woken'], 'the send woke the waiter');
  assert.ok(
    g.at() - passedAt >= 150 + SPACING,
    `the second start came ${g.at() - passedAt} ms after the first passed; its send was at 150 ms`,
  );
  assert.deepEqual(g.waited, [SPACING], 'then it waited one whole gap from the send, nothing else');
  // a start that ends unsent wakes its waiters too
  const h = gated(100);
  const refused = (await h.gate.pass('127.0.0.4', h.wait))!;
  const behind = h.gate.pass('127.0.0.4', async (ms, wake) => {
    if (wake === undefined) return h.wait(ms);
    refused.done();
    await wake;
    return true;
  });
  assert.ok(await behind, 'let through after the first ended unsent');
  // another address was never held by it
  const held = (await h.gate.pass('127.0.0.2', h.wait))!;
  await sendNow(h.gate, '127.0.0.3', h.wait);
  assert.deepEqual(h.waited, [SPACING], 'only the start behind the refused one waited (its planned gap)');
  held.done();
});

test('a start that ends unsent frees its address at the planned gap; a second done or a late sent changes nothing', async () => {
  const g = gated(100);
  const failed: WireStart = (await g.gate.pass('127.0.0.2', g.wait))!;
  g.advance(30);
  failed.done(); // the connect was refused: nothing reached the address
  failed.sent();
  failed.done();
  await sendNow(g.gate, '127.0.0.2', g.wait);
  assert.deepEqual(g.waited, [SPACING - 30], 'the gap planned when it passed, no more');
});

test('a wait ended by a closing task reserves nothing; a gap of 0 never waits', async () => {
  const g = gated(100);
  await sendNow(g.gate, '127.0.0.2', g.wait);
  assert.equal(await g.gate.pass('127.0.0.2', async () => false), undefined);
  g.advance(SPACING);
  await sendNow(g.gate, '127.0.0.2', async () => assert.fail('the gap has passed: no wait'));
  const open = gated(0);
  for (let i = 0; i < 3; i++) {
    const s = await open.gate.pass('127.0.0.2', async () => assert.fail('no gap'));
    assert.ok(s, 'a start never sent holds nothing when there is no gap');
  }
});

test('a closing task stops waiting behind a start that is still connecting', async () => {
  const g = gated(100);
  const connecting = (await g.gate.pass('127.0.0.2', g.wait))!;
  let asked = 0;
  const closing = async () => (asked++, false);
  assert.equal(await g.gate.pass('127.0.0.2', closing), undefined);
  assert.equal(asked, 1);
  connecting.sent();
  connecting.done();
});

test('the wire gate keeps at most --ip-concurrency requests open on an address, whichever task let them through', async () => {
  let now = 1_000;
  const gate = new WireGate(100, () => now, 2);
  const step = async (ms: number) => ((now += ms), true);
  const first = (await gate.pass('127.0.0.2', step))!;
  first.sent();
  const second = (await gate.pass('127.0.0.2', step))!;
  second.sent();
  assert.equal(now, 1_000 + SPACING, 'the second waited out the gap only');
  // both still open: a third waits for one of them to end, however long past the gap
  let freedAt = -1;
  const third = gate.pass('127.0.0.2', async (ms, wake) => {
    if (wake === undefined) return step(ms);
    assert.equal(ms, WIRE_GATE_HOLD_MS);
    now += 400;
    freedAt = now;
    first.done();
    await wake;
    return true;
  });
  // another address is not held by them
  await sendNow(gate, '127.0.0.3', async () => assert.fail('another address waits for nothing'));
  const started = (await third)!;
  assert.ok(started);
  assert.equal(now, freedAt, 'let through when the first ended, the gap long passed');
  // a second done of an ended request frees nothing more
  first.done();
  started.sent();
  now += SPACING;
  assert.equal(await gate.pass('127.0.0.2', async () => false), undefined, 'two open again: the next waits');
  second.done();
  started.done();
  // with no gap the limit still holds
  const open = new WireGate(0, () => now, 1);
  const only = (await open.pass('127.0.0.2', async () => assert.fail('the first does not wait')))!;
  assert.equal(await open.pass('127.0.0.2', async () => false), undefined, 'one open: the next waits');
  only.done();
  assert.ok(await open.pass('127.0.0.2', async () => assert.fail('ended: no wait')));
});
