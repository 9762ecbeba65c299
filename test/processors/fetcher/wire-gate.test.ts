import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
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

test('a start that leaves late holds the next one back from when it left', async () => {
  const g = gated(100);
  assert.ok(await g.gate.pass('127.0.0.2', g.wait));
  // its connection took 30 ms beyond the gate
  g.advance(30);
  g.gate.sent('127.0.0.2');
  g.advance(100 + WIRE_GATE_MARGIN_MS - 30);
  assert.ok(await g.gate.pass('127.0.0.2', g.wait));
  assert.deepEqual(g.waited, [30], 'the gap counts from when the first request left');
  // a send earlier than planned never brings a start forward
  g.gate.sent('127.0.0.3');
  const before = g.waited.length;
  g.advance(1);
  g.gate.sent('127.0.0.2');
  assert.ok(await g.gate.pass('127.0.0.2', g.wait));
  assert.equal(g.waited.length, before + 1);
});

test('a request undici writes to an address moves that address on every live gate of the process', async (t) => {
  const server = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const g = gated(1_000);
  const agent = new Agent();
  t.after(() => agent.close());
  const { port } = server.address() as AddressInfo;
  const res = await agent.request({ origin: `http://127.0.0.1:${port}`, path: '/', method: 'GET' });
  await res.body.text();
  // the clock stood still: the next start on that address waits the whole gap from the send
  assert.ok(await g.gate.pass('127.0.0.1', g.wait));
  assert.deepEqual(g.waited, [1_000 + WIRE_GATE_MARGIN_MS]);
});
