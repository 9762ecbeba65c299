import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EXPIRY_GRACE_MS } from '../../../processors/common/lease-expiry.js';
import type { FetchResult } from '../../../schemas/types.js';
import { startHttp } from './loopback.js';
import { fetcherDriver, lease, loopbackConfig, TOPIC } from './pipeline.js';

/** The host's gap the test's frontier keeps between the end of one fetch and the start of the next. */
const GAP_MS = 1_000;
/** How far ahead of its issue the test's frontier hands out a lease, and how long after its notBefore it may start. */
const AHEAD_MS = 300;
const WINDOW_MS = 1_000;
const FETCH_TIMEOUT_MS = 2_000;

/** A server answering `ok` that keeps when each request came and when its answer was sent, on `now`. */
async function servedOn(now: () => number) {
  const served: { start: number; end: number }[] = [];
  const server = await startHttp((_req, res) => {
    const entry = { start: now(), end: 0 };
    served.push(entry);
    res.on('finish', () => (entry.end = now()));
    res.end('ok');
  });
  return { served, server };
}

/** Both leases answered 200, and the server saw the second start the host's gap after the first ended. */
function bothFetchedAGapApart(results: FetchResult[], served: readonly { start: number; end: number }[]): void {
  assert.deepEqual(
    results.map((r) => [r.status, r.errorCode]),
    [
      [200, null],
      [200, null],
    ],
    results.map((r) => r.errorMessage ?? '').join('\n'),
  );
  assert.equal(served.length, 2);
  const gap = served[1]!.start - served[0]!.end;
  assert.ok(gap >= GAP_MS, `the second request came ${gap} ms after the first ended; the gap is ${GAP_MS} ms`);
}

// 10 s behind: more than a lease's window, the fetch timeout and the grace after them, when the frontier gives it up
for (const fetcherAheadMs of [5_000, -10_000]) {
  test(
    `a fetcher whose clock runs ${Math.abs(fetcherAheadMs)} ms ${fetcherAheadMs > 0 ? 'ahead of' : 'behind'} the frontier's starts each lease no earlier than the frontier meant, drops none as late, answers it before the frontier gives it up, and reports times the frontier's gap arithmetic can use`,
    { timeout: 30_000 },
    async () => {
      // the frontier's clock, as the fetcher's (this process's) sees it
      const frontierNow = () => Date.now() - fetcherAheadMs;
      const { served, server } = await servedOn(() => Date.now());
      const driver = await fetcherDriver(loopbackConfig({ fetchTimeoutMs: FETCH_TIMEOUT_MS }));
      const answeredInTime = (notAfter: number, which: string) =>
        assert.ok(
          frontierNow() <= notAfter + FETCH_TIMEOUT_MS + EXPIRY_GRACE_MS,
          `the ${which} lease was answered after the frontier had given it up`,
        );
      try {
        const url = (page: string) => `http://skewed.test:${server.port}/${page}`;
        // two leases of one host, the second planned as the frontier does: the first's reported end plus the gap
        const issued1 = Date.now();
        const first = lease(url('1'), {
          issuedAt: frontierNow(),
          notBefore: frontierNow() + AHEAD_MS,
          notAfter: frontierNow() + AHEAD_MS + WINDOW_MS,
        });
        await driver.pipeInput(TOPIC.requests, first.site, first);
        answeredInTime(first.notAfter, 'first');
        const [result1] = driver.output<FetchResult>(TOPIC.results).map((r) => r.value!);
        assert.equal(result1?.errorCode, null, `the first lease: ${result1?.errorMessage}`);
        const notBefore = Math.max(frontierNow(), result1!.startedAt + result1!.durationMs + GAP_MS);
        const second = lease(url('2'), {
          issuedAt: frontierNow(),
          notBefore,
          notAfter: notBefore + WINDOW_MS,
        });
        await driver.pipeInput(TOPIC.requests, second.site, second);
        answeredInTime(second.notAfter, 'second');
        const results = driver.output<FetchResult>(TOPIC.results).map((r) => r.value!);
        bothFetchedAGapApart(results, served);
        assert.ok(
          served[0]!.start >= issued1 + AHEAD_MS,
          `the first request came ${issued1 + AHEAD_MS - served[0]!.start} ms before its notBefore`,
        );
      } finally {
        await driver.close();
        await server.close();
      }
    },
  );
}

test(
  "the frontier's clock steps 7 s forward between two fetches of a host (a VM paused, an NTP step): at most the host's next lease is dropped as late, never the ones after it, and every request keeps the gap",
  { timeout: 60_000 },
  async () => {
    // more than a lease's window plus the grace a fetcher may run ahead of the frontier
    const STEP_MS = 7_000;
    const wall = Date.now;
    let step = 0;
    // the wall clock (the frontier's, in this process) steps; performance.now, the fetcher's, does not
    Date.now = () => wall() + step;
    const { served, server } = await servedOn(() => performance.now());
    const driver = await fetcherDriver(loopbackConfig({ fetchTimeoutMs: FETCH_TIMEOUT_MS }));
    try {
      const url = (page: number) => `http://stepped.test:${server.port}/${page}`;
      let results: FetchResult[] = [];
      // leases planned as the frontier plans them: a gap after the last fetch that was sent (a
      // dropped lease starts none), never before now on its clock
      for (let page = 1; page <= 4; page++) {
        if (page === 2) step = STEP_MS;
        const sent = results.filter((r) => r.errorCode === null).at(-1);
        const notBefore = Math.max(
          Date.now() + (page === 1 ? AHEAD_MS : 0),
          sent === undefined ? 0 : sent.startedAt + sent.durationMs + GAP_MS,
        );
        const next = lease(url(page), { issuedAt: Date.now(), notBefore, notAfter: notBefore + WINDOW_MS });
        await driver.pipeInput(TOPIC.requests, next.site, next);
        results = driver.output<FetchResult>(TOPIC.results).map((r) => r.value!);
      }
      const outcomes = results.map((r) => r.errorCode ?? r.status);
      assert.equal(outcomes.length, 4, outcomes.join(', '));
      assert.equal(outcomes[0], 200, results[0]!.errorMessage ?? '');
      // before the fix every lease after the step was dropped so, forever
      assert.deepEqual(outcomes.slice(2), [200, 200], results.map((r) => r.errorMessage ?? '').join('\n'));
      assert.ok(outcomes[1] === 200 || outcomes[1] === 'CS_LEASE_EXPIRED', `the lease after the step: ${outcomes[1]}`);
      assert.equal(served.length, outcomes.filter((o) => o === 200).length);
      for (let i = 1; i < served.length; i++) {
        const gap = served[i]!.start - served[i - 1]!.end;
        assert.ok(
          gap >= GAP_MS,
          `request ${i + 1} came ${gap.toFixed(0)} ms after the one before ended; the gap is ${GAP_MS} ms`,
        );
      }
    } finally {
      Date.now = wall;
      await driver.close();
      await server.close();
    }
  },
);

test(
  "a lease of the frontier's old owner that waited in the log across a restart is fetched, and the new owner's next lease for the host, planned from its report, keeps the gap",
  { timeout: 30_000 },
  async () => {
    // one clock for the frontier, the fetcher and the server, as on the embedded engine
    const { served, server } = await servedOn(() => Date.now());
    const driver = await fetcherDriver(loopbackConfig({ fetchTimeoutMs: FETCH_TIMEOUT_MS }));
    try {
      const url = (page: string) => `http://restarted.test:${server.port}/${page}`;
      // issued by epoch 3 of frontier partition 0 just before it was killed; read by the restarted fetcher 1.5 s later
      const waited = 1_500;
      const old = lease(url('1'), {
        leaseId: '3-0-1',
        ownerEpoch: 3,
        issuedAt: Date.now() - waited,
        notBefore: Date.now() - waited + 100,
        notAfter: Date.now() + WINDOW_MS,
      });
      await driver.pipeInput(TOPIC.requests, old.site, old);
      const [result1] = driver.output<FetchResult>(TOPIC.results).map((r) => r.value!);
      assert.equal(result1?.errorCode, null, `the old owner's lease: ${result1?.errorMessage}`);
      // epoch 4 took the result and plans the host's next lease from it, as the frontier does
      const notBefore = Math.max(Date.now(), result1!.startedAt + result1!.durationMs + GAP_MS);
      const next = lease(url('2'), {
        leaseId: '4-0-1',
        ownerEpoch: 4,
        issuedAt: Date.now(),
        notBefore,
        notAfter: notBefore + WINDOW_MS,
      });
      await driver.pipeInput(TOPIC.requests, next.site, next);
      const results = driver.output<FetchResult>(TOPIC.results).map((r) => r.value!);
      // before the fix the new owner's lease reset the host's report offset and started at once
      bothFetchedAGapApart(results, served);
    } finally {
      await driver.close();
      await server.close();
    }
  },
);
