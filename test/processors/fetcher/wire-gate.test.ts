import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WIRE_GATE_MARGIN_MS, WireGate } from '../../../processors/fetcher/wire-gate.js';

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

test('the wire gate lets one start per address through every gap plus its margin, and none of another address waits', async () => {
  const g = gated(100);
  assert.ok(await g.gate.pass('127.0.0.2', g.wait));
  assert.ok(await g.gate.pass('127.0.0.3', g.wait), 'another address');
  assert.deepEqual(g.waited, []);
  g.advance(40);
  assert.ok(await g.gate.pass('127.0.0.2', g.wait));
  assert.deepEqual(
    g.waited,
    [100 + WIRE_GATE_MARGIN_MS - 40],
    'the second start on 127.0.0.2 waits out the rest of the gap',
  );
  const second = g.at();
  assert.ok(await g.gate.pass('127.0.0.2', g.wait));
  assert.equal(g.at() - second, 100 + WIRE_GATE_MARGIN_MS, 'and the third a whole gap after the second');
});

test('a wait ended by a closing task reserves nothing; a gap of 0 never waits', async () => {
  const g = gated(100);
  await g.gate.pass('127.0.0.2', g.wait);
  assert.equal(await g.gate.pass('127.0.0.2', async () => false), false);
  g.advance(100 + WIRE_GATE_MARGIN_MS);
  assert.ok(await g.gate.pass('127.0.0.2', async () => assert.fail('the gap has passed: no wait')));
  const open = gated(0);
  for (let i = 0; i < 3; i++) assert.ok(await open.gate.pass('127.0.0.2', async () => assert.fail('no gap')));
});
