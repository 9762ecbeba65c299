import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IpLimiter } from '../../../processors/frontier/ip-limiter.js';
import { newHost } from '../../../processors/frontier/host-state.js';
import { GAP_SAFETY_MS } from '../../../processors/frontier/politeness.js';
import { AddressClock, CLAIM_TTL_MS } from '../../../processors/frontier/address-clock.js';

const host = (name: string, ip: string | null = null) => ({ ...newHost(name, `http://${name}`, name), ip });
/** Whether a lease to `h` that may start at `at` is granted now. */
const may = (ips: IpLimiter, h: ReturnType<typeof host>, at: number) => ips.tryAcquire(h, at) !== undefined;

test('two starts on one address are at least the gap (plus slack) apart, and no more leases than the concurrency run there', () => {
  const ips = new IpLimiter(2, 500);
  const a = host('a.test', '10.0.0.1');
  assert.equal(may(ips, a, 1_000), true);
  // leases may overlap here: the wire gate spaces their sends, and the next start is planned one
  // spacing after this one
  const next = 1_000 + 500 + GAP_SAFETY_MS;
  assert.equal(may(ips, host('b.test', '10.0.0.1'), next - 1), false);
  assert.equal(may(ips, host('b.test', '10.0.0.1'), next), true);
  assert.equal(may(ips, host('c.test', '10.0.0.1'), 10_000), false, 'a third lease in flight');
  assert.equal(may(ips, host('d.test', '10.0.0.2'), 1_000), true, 'another address is not held back');
});

test('a fetch that started later than its lease said pushes the next start on its address back', () => {
  const ips = new IpLimiter(1, 500);
  const a = host('a.test', '10.0.0.1');
  assert.equal(may(ips, a, 1_000), true);
  const freed = ips.release('10.0.0.1', 1_400);
  assert.equal(freed.at, 1_400 + 500 + GAP_SAFETY_MS);
  assert.equal(may(ips, host('b.test', '10.0.0.1'), 1_600), false);
  assert.equal(may(ips, host('b.test', '10.0.0.1'), freed.at), true);
});

test('with no gap configured no slack is added between starts', () => {
  const ips = new IpLimiter(10, 0);
  assert.equal(may(ips, host('a.test', '10.0.0.1'), 1_000), true);
  assert.equal(may(ips, host('b.test', '10.0.0.1'), 1_000), true);
});

test('with no gap, a start planned ahead holds back no host due sooner, of this task or another sharing the clock', () => {
  const clock = new AddressClock(true);
  const [a, b] = [0, 1].map((partition) => new IpLimiter(3, 0, undefined, { partition, partitions: 2, clock }));
  assert.equal(a!.tryAcquire(host('ahead.test', '10.0.0.1'), 1_500), 1_500, 'leased ahead, to start at 1,500');
  assert.equal(a!.tryAcquire(host('sooner.test', '10.0.0.1'), 1_000), 1_000, 'due sooner, not held behind it');
  assert.equal(b!.tryAcquire(host('other.test', '10.0.0.1'), 1_000), 1_000, 'nor a host of another task');
  assert.equal(b!.tryAcquire(host('fourth.test', '10.0.0.1'), 1_000), undefined, 'the concurrency still binds');
  const freed = a!.release('10.0.0.1', 1_000);
  assert.deepEqual(freed.hosts, []);
  assert.deepEqual(
    b!.due(1_010).map((d) => d.hosts),
    [['fourth.test']],
    'a lease ended: the host waiting on the concurrency is due at once',
  );
});

test('a new host waits for its address before its first lease, then counts on that address', async () => {
  let answer: (ip: string) => void = () => undefined;
  const ips = new IpLimiter(1, 0, () => new Promise<string>((r) => (answer = r)));
  assert.equal(may(ips, host('known.test', '10.0.0.1'), 1_000), true);
  const fresh = host('fresh.test');
  assert.equal(may(ips, fresh, 1_000), false, 'leased before its address was known');
  answer('10.0.0.1');
  await Promise.resolve();
  assert.deepEqual(ips.due(1_000), [{ hosts: ['fresh.test'], at: 1_000 }]);
  assert.equal(may(ips, fresh, 1_000), false, 'its first fetch did not count against the shared address');
  assert.equal(fresh.ip, '10.0.0.1');
  ips.release('10.0.0.1', 1_000);
  assert.equal(may(ips, fresh, 1_100), true);
});

/** A fetch on 10.0.0.1 in `sharedAddress`: the task that leased it, when it started and ended. */
interface SimulatedFetch {
  readonly task: number;
  readonly start: number;
  readonly end: number;
}

/**
 * Each task always has a new host on 10.0.0.1 ready; every 20 ms the tasks' dispatches run in
 * order (task 0's first) for 60 s. A granted lease reaches its fetcher up to 300 ms late and
 * leaves when the wire gate lets it (wire-gate.ts): `gapMs` after the send before it, and only
 * while fewer than `concurrency` fetches there are open; each takes 5 ms to 2 s, and its task
 * learns when it really started. `granted` sees each grant (its start, and the dispatch time).
 * Asserts that starts are `gapMs` apart and at most `concurrency` are in flight, and that no task
 * has more in flight than `perTask`; returns the fetches by start.
 */
function sharedAddress(
  tasks: readonly IpLimiter[],
  gapMs: number,
  concurrency: number,
  granted: (at: number, now: number) => void = () => undefined,
  perTask = concurrency,
): SimulatedFetch[] {
  const fetches: SimulatedFetch[] = [];
  let open: SimulatedFetch[] = [];
  let n = 0;
  let lastSent = -Infinity;
  for (let now = 0; now < 60_000; now += 20) {
    for (const f of open.filter((f) => f.end <= now)) tasks[f.task]!.release('10.0.0.1', f.start);
    open = open.filter((f) => f.end > now);
    for (const [i, task] of tasks.entries()) {
      task.due(now);
      const h = host(`h${n++}.test`, '10.0.0.1');
      const at = task.tryAcquire(h, now);
      if (at === undefined) continue;
      granted(at, now);
      // the gate: a gap after the last send, and room under the concurrency (starts only grow)
      let start = Math.max(at + ((n * 37) % 300), lastSent + gapMs);
      for (;;) {
        const inFlight = fetches.filter((g) => g.start <= start && g.end > start);
        if (inFlight.length < concurrency) break;
        start = Math.min(...inFlight.map((g) => g.end));
      }
      lastSent = start;
      const f = { task: i, start, end: start + 5 + ((n * 7919) % 2_000) };
      open.push(f);
      fetches.push(f);
    }
  }
  fetches.sort((a, b) => a.start - b.start);
  for (let i = 1; i < fetches.length; i++)
    assert.ok(
      fetches[i]!.start - fetches[i - 1]!.start >= gapMs,
      `starts ${fetches[i - 1]!.start} and ${fetches[i]!.start}`,
    );
  for (const f of fetches) {
    const inFlight = fetches.filter((g) => g.start <= f.start && g.end > f.start);
    assert.ok(inFlight.length <= concurrency, `${inFlight.length} in flight at ${f.start}`);
    const own = inFlight.filter((g) => g.task === f.task).length;
    assert.ok(own <= perTask, `task ${f.task} had ${own} in flight at ${f.start}`);
  }
  return fetches;
}

test('four frontier tasks sharing an address without a shared clock each lease their share, and through the wire gate the address serves a start a gap as one task would', () => {
  const partitions = 4;
  const gapMs = 100;
  const tasks = Array.from(
    { length: partitions },
    (_, partition) => new IpLimiter(8, gapMs, undefined, { partition, partitions }),
  );
  // no slot to wait for: a lease is planned at once when the task has room on the address
  const fetches = sharedAddress(tasks, gapMs, 8, (at, now) => assert.equal(at, now, 'no slot to wait for'), 2);
  // one task's own pace, a start every gap + slack (rounded up to the 20 ms dispatch), at least:
  // with time slots the address got one start per gap + 330 ms
  const spacing = gapMs + GAP_SAFETY_MS;
  assert.ok(fetches.length >= (0.8 * 60_000) / (spacing + 20), `only ${fetches.length} starts in 60 s`);
  for (let i = 0; i < partitions; i++) {
    const share = fetches.filter((f) => f.task === i).length / fetches.length;
    assert.ok(share > 0.15 && share < 0.35, `task ${i} took ${(100 * share).toFixed(1)} % of the starts`);
  }
  // below the partition count each task still keeps one lease: the gate holds the address to one
  const single = Array.from(
    { length: partitions },
    (_, partition) => new IpLimiter(1, gapMs, undefined, { partition, partitions }),
  );
  assert.ok(sharedAddress(single, gapMs, 1, undefined, 1).length > 0);
  // a host alone on its address starts when its own gap allows
  const lone = host('lone.test', '10.0.0.9');
  for (let t = 100_000; t < 110_000; t += 1_030) {
    assert.equal(tasks[2]!.tryAcquire(lone, t), t);
    tasks[2]!.release('10.0.0.9', t);
  }
});

test('four frontier tasks of one process sharing a clock keep the gap and concurrency as one task would, take the address in turn, and a lone host waits for no slot', () => {
  const partitions = 4;
  const gapMs = 100;
  const clock = new AddressClock(true);
  const tasks = Array.from(
    { length: partitions },
    (_, partition) => new IpLimiter(8, gapMs, undefined, { partition, partitions, clock }),
  );
  const fetches = sharedAddress(tasks, gapMs, 8, (at, now) => assert.equal(at, now, 'no slot to wait for'));
  // as one task: a start every gap + slack (rounded up to the 20 ms dispatch)
  const spacing = gapMs + GAP_SAFETY_MS;
  assert.ok(fetches.length >= (0.8 * 60_000) / (spacing + 20), `only ${fetches.length} starts in 60 s`);
  // more than a plan with a 300 ms start window after each overlapping lease could give
  assert.ok(fetches.length > 60_000 / (spacing + 300 + 20), `${fetches.length} starts in 60 s`);
  for (let i = 0; i < partitions; i++) {
    const share = fetches.filter((f) => f.task === i).length / fetches.length;
    assert.ok(share > 0.2 && share < 0.3, `task ${i} took ${(100 * share).toFixed(1)} % of the starts`);
  }

  // a host alone on its address starts when its own gap allows, whichever task holds it
  const lone = host('lone.test', '10.0.0.9');
  for (let t = 100_000; t < 110_000; t += 1_030) {
    assert.equal(tasks[3]!.tryAcquire(lone, t), t);
    tasks[3]!.release('10.0.0.9', t);
  }
});

test('a task that stops waiting for a shared address loses its place after the claim lifetime, and holds nobody up for longer', () => {
  const clock = new AddressClock(true);
  const [a, b] = [0, 1].map((partition) => new IpLimiter(1, 100, undefined, { partition, partitions: 2, clock }));
  const first = host('x.test', '10.0.0.1');
  assert.equal(a!.tryAcquire(first, 0), 0);
  // task 0 has another host waiting, then forgets it (the host left); task 1 asks later
  assert.equal(a!.tryAcquire(host('y.test', '10.0.0.1'), 10), undefined);
  a!.release('10.0.0.1', 0);
  assert.equal(b!.tryAcquire(host('z.test', '10.0.0.1'), 200), undefined, 'task 0 waited first');
  assert.equal(b!.tryAcquire(host('w.test', '10.0.0.2'), 200), 200, 'a queue on one address holds up no other');
  assert.equal(b!.tryAcquire(host('z.test', '10.0.0.1'), 200 + CLAIM_TTL_MS + 20), 200 + CLAIM_TTL_MS + 20);
});

test('overlapping leases on an address: each planned one spacing after the last, pushed back by a start reported later, never brought forward', () => {
  const gap = 100;
  const spacing = gap + GAP_SAFETY_MS;
  const ip = '10.0.0.1';
  const at = (n: number) => host(`h${n}.test`, ip);

  let ips = new IpLimiter(8, gap);
  assert.equal(ips.tryAcquire(at(1), 1_000), 1_000);
  assert.equal(may(ips, at(2), 1_000 + spacing - 1), false);
  assert.equal(ips.tryAcquire(at(2), 1_000 + spacing), 1_000 + spacing, 'the second overlaps the first');
  ips.release(ip, 1_300); // the first left late: the gate held it, or it reached its fetcher late
  assert.equal(may(ips, at(3), 1_300 + spacing - 1), false);
  assert.equal(may(ips, at(4), 1_300 + spacing), true);

  // a lease that never said when it started, or a fetcher whose clock runs behind, leaves the plan
  for (const reported of [0, 950]) {
    ips = new IpLimiter(8, gap);
    assert.equal(ips.tryAcquire(at(1), 1_000), 1_000);
    ips.release(ip, reported);
    assert.equal(may(ips, at(2), 1_000 + spacing - 1), false, `reported ${reported}`);
    assert.equal(may(ips, at(3), 1_000 + spacing), true, `reported ${reported}`);
  }
});
