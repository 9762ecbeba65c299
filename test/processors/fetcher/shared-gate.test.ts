import { test } from 'node:test';
import { Socket } from 'node:net';
import assert from 'node:assert/strict';
import { checkPoliteness, formatPolitenessReport } from '../../../synthetic-web/politeness.js';
import type { SiteSpec } from '../../../synthetic-web/sites.js';
import { SyntheticWeb } from '../../../synthetic-web/synthetic-web.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import { fetcherDriver, lease, loopbackConfig } from './pipeline.js';

const GAP_MS = 400;
const HOSTS = ['gate-a.test', 'gate-b.test', 'gate-c.test', 'gate-d.test'];

const site = (host: string): SiteSpec => ({ host, seed: true, pages: { '/': { title: host, links: [] } } });

/**
 * Two fetcher tasks of one process, as an engine runs two partitions (every host of the web on
 * 127.0.0.1), each handed the leases of half of `sites` at once, all due now: leases that frontier
 * partitions issue for one address on their own can reach the fetchers together. Returns the web's
 * log and the judge's per-address verdicts under `limits` (robots.txt first is the frontier's rule,
 * and no frontier leased these).
 */
async function twoTasksAtOnce(sites: SiteSpec[], limits: { ipGapMs: number; ipConcurrency: number }) {
  const web = await SyntheticWeb.start({ sites });
  const inProcess = new Map<string, unknown>();
  const config = loopbackConfig(limits);
  const tasks = await Promise.all(
    [0, 1].map((partition) => fetcherDriver(config, undefined, { partition, partitions: 2, inProcess })),
  );
  try {
    const half = Math.ceil(sites.length / 2);
    await Promise.all(
      tasks.map((driver, t) =>
        driver.pipeInputs(
          TOPICS.fetchRequests,
          sites.slice(half * t, half * (t + 1)).map(({ host }) => ({ key: host, value: lease(web.url(host, '/')) })),
        ),
      ),
    );
    const log = web.requests();
    assert.equal(log.length, sites.length, 'one request per lease');
    const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf, ...limits });
    const perAddress = report.violations.filter((v) => v.kind === 'ip-gap' || v.kind === 'ip-concurrency');
    return { starts: log.map((e) => e.start).sort((x, y) => x - y), perAddress, report };
  } finally {
    await Promise.all(tasks.map((d) => d.close()));
    await web.close();
  }
}

test('two fetcher tasks of one process send to one address no closer than --ip-gap, whatever leases they are handed at once', async () => {
  const { starts, perAddress, report } = await twoTasksAtOnce(HOSTS.map(site), { ipGapMs: GAP_MS, ipConcurrency: 8 });
  assert.deepEqual(perAddress, [], formatPolitenessReport(report));
  // the judge saw the gap: one lease waited it out three times over
  assert.ok(starts.at(-1)! - starts[0]! >= 3 * GAP_MS, `starts ${starts.map((s) => s - starts[0]!).join(', ')} ms`);
});

test('fetcher tasks of one process keep at most --ip-concurrency requests open on one address, whichever frontier leased them', async () => {
  // slow pages: each response takes longer than the gap, so only the concurrency keeps them apart
  const hosts = ['conc-a.test', 'conc-b.test', 'conc-c.test', 'conc-d.test', 'conc-e.test', 'conc-f.test'];
  const sites = hosts.map((host): SiteSpec => ({ ...site(host), delayMs: 300 }));
  const { starts, perAddress, report } = await twoTasksAtOnce(sites, { ipGapMs: 50, ipConcurrency: 2 });
  assert.deepEqual(perAddress, [], formatPolitenessReport(report));
  // and the limit was what held them: six 300 ms responses two at a time take three rounds
  assert.ok(
    starts.at(-1)! - starts[0]! >= 2 * 300,
    `starts spread over ${Math.round(starts.at(-1)! - starts[0]!)} ms only`,
  );
});

test('a pause between the send hook and the write of a request head (a GC, a preempted thread) lengthens the gap to the next request on its address, never eats it', async () => {
  const PAUSE_MS = 120;
  const IP_GAP_MS = 100;
  const hosts = ['pause-a.test', 'pause-b.test'];
  const web = await SyntheticWeb.start({ sites: hosts.map(site) });
  const driver = await fetcherDriver(loopbackConfig({ ipGapMs: IP_GAP_MS }));
  // the first head undici writes to pause-a.test finds the thread stalled right before the write
  const write = Socket.prototype.write;
  let paused = false;
  Socket.prototype.write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
    if (!paused && typeof chunk === 'string' && chunk.startsWith('GET / ') && chunk.includes('host: pause-a.test')) {
      paused = true;
      const until = performance.now() + PAUSE_MS;
      while (performance.now() < until);
    }
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof write;
  try {
    await driver.pipeInputs(
      TOPICS.fetchRequests,
      hosts.map((host) => ({ key: host, value: lease(web.url(host, '/')) })),
    );
    assert.ok(paused, 'the head was never written through the patched socket');
    const log = web.requests();
    assert.deepEqual(
      log.map((e) => e.host),
      hosts,
      'one request per lease, in order',
    );
    const gap = log[1]!.start - log[0]!.start;
    // before the fix the gate counted from the hook: the second head left ~30 ms after the first
    assert.ok(
      gap >= IP_GAP_MS,
      `the second request came ${gap.toFixed(1)} ms after the first; --ip-gap is ${IP_GAP_MS} ms`,
    );
  } finally {
    Socket.prototype.write = write;
    await driver.close();
    await web.close();
  }
});
