import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IP_START_WINDOW_MAX_MS, IP_START_WINDOW_MS, IpLimiter } from '../../../processors/frontier/ip-limiter.js';
import { newHost } from '../../../processors/frontier/host-state.js';
import { GAP_SAFETY_MS } from '../../../processors/frontier/politeness.js';

const host = (name: string, ip: string | null = null) => ({ ...newHost(name, `http://${name}`, name), ip });

test('two starts on one address are at least the gap (plus slack and the start window) apart, and no more leases than the concurrency run there', () => {
  const ips = new IpLimiter(2, 500);
  const a = host('a.test', '10.0.0.1');
  assert.equal(ips.tryAcquire(a, 1_000), true);
  // leases may overlap here: each must start within the window, and the next is planned after it
  assert.equal(ips.startWindow(a), IP_START_WINDOW_MS);
  const next = 1_000 + 500 + GAP_SAFETY_MS + IP_START_WINDOW_MS;
  assert.equal(ips.tryAcquire(host('b.test', '10.0.0.1'), next - 1), false);
  assert.equal(ips.tryAcquire(host('b.test', '10.0.0.1'), next), true);
  assert.equal(ips.tryAcquire(host('c.test', '10.0.0.1'), 10_000), false, 'a third lease in flight');
  assert.equal(ips.tryAcquire(host('d.test', '10.0.0.2'), 1_000), true, 'another address is not held back');
});

test('the start window widens when leases reach their fetcher too late, plans the next start after it, and narrows back while they arrive in time', () => {
  const ips = new IpLimiter(4, 500);
  const a = host('a.test', '10.0.0.1');
  ips.startedLate(90);
  const widened = IP_START_WINDOW_MS + 90 + IP_START_WINDOW_MS;
  assert.equal(ips.startWindow(a), widened);
  assert.equal(ips.tryAcquire(a, 1_000), true);
  const next = 1_000 + 500 + GAP_SAFETY_MS + widened;
  assert.equal(
    ips.tryAcquire(host('b.test', '10.0.0.1'), next - 1),
    false,
    'a start late by the whole window still keeps the gap',
  );
  assert.equal(ips.tryAcquire(host('b.test', '10.0.0.1'), next), true);
  for (let i = 0; i < 50; i++) ips.startedLate(1_000);
  assert.equal(ips.startWindow(a), IP_START_WINDOW_MAX_MS, 'the window has a ceiling');
  for (let i = 0; i < 2_000; i++) ips.startedInTime();
  assert.equal(ips.startWindow(a), IP_START_WINDOW_MS, 'and a floor');
  assert.equal(new IpLimiter(1, 500).startWindow(a), undefined, 'no window where leases cannot overlap');
});

test('a fetch that started later than its lease said pushes the next start on its address back', () => {
  const ips = new IpLimiter(1, 500);
  const a = host('a.test', '10.0.0.1');
  assert.equal(ips.tryAcquire(a, 1_000), true);
  assert.equal(ips.startWindow(a), undefined, 'one lease at a time needs no start window: its start is reported');
  const freed = ips.release('10.0.0.1', 1_400);
  assert.equal(freed.at, 1_400 + 500 + GAP_SAFETY_MS);
  assert.equal(ips.tryAcquire(host('b.test', '10.0.0.1'), 1_600), false);
  assert.equal(ips.tryAcquire(host('b.test', '10.0.0.1'), freed.at), true);
});

test('with no gap configured no slack is added between starts', () => {
  const ips = new IpLimiter(10, 0);
  assert.equal(ips.tryAcquire(host('a.test', '10.0.0.1'), 1_000), true);
  assert.equal(ips.tryAcquire(host('b.test', '10.0.0.1'), 1_000), true);
});

test('a new host waits for its address before its first lease, then counts on that address', async () => {
  let answer: (ip: string) => void = () => undefined;
  const ips = new IpLimiter(1, 0, () => new Promise<string>((r) => (answer = r)));
  assert.equal(ips.tryAcquire(host('known.test', '10.0.0.1'), 1_000), true);
  const fresh = host('fresh.test');
  assert.equal(ips.tryAcquire(fresh, 1_000), false, 'leased before its address was known');
  answer('10.0.0.1');
  await Promise.resolve();
  assert.deepEqual(ips.due(1_000), [{ hosts: ['fresh.test'], at: 1_000 }]);
  assert.equal(ips.tryAcquire(fresh, 1_000), false, 'its first fetch did not count against the shared address');
  assert.equal(fresh.ip, '10.0.0.1');
  ips.release('10.0.0.1', 1_000);
  assert.equal(ips.tryAcquire(fresh, 1_100), true);
});
