import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { FetchRequest } from '../../../schemas/types.js';
import { fetchResultFor, seedLinks } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

const FETCH_MS = 20;

interface Delivered {
  readonly request: FetchRequest;
  /** When the fetcher looks at it: issue + delivery latency, or its notBefore if later. */
  readonly at: number;
  /** Started in its window: a request the web sees. */
  readonly fetched: boolean;
  answered: boolean;
}

/**
 * Leases reach their fetcher `latencyMs` after their issue (a Kafka engine's commit interval and
 * more): one that arrives after its notAfter is dropped unfetched (CS_LEASE_EXPIRED), as the
 * real fetcher does; the rest start at max(arrival, notBefore).
 */
async function crawlWithLatency(latencyMs: number, hosts: string[], ms: number) {
  const config = validateCrawlConfig({ ipConcurrency: 4, ipGapMs: 100, minDelayMs: 1_000 });
  const h = await FrontierHarness.open(config, () => '10.0.0.1');
  const log: Delivered[] = [];
  try {
    for (const host of hosts)
      seedLinks(
        h,
        host,
        ['/', '/a.html', '/b.html'].map((p) => `http://${host}${p}`),
      );
    for (let t = 0; t < ms; t += 10) {
      await h.advance(10, 10);
      await new Promise(setImmediate);
      for (const r of h.requests.slice(log.length)) {
        const at = Math.max(r.issuedAt + latencyMs, r.notBefore);
        log.push({ request: r, at, fetched: at <= r.notAfter, answered: false });
      }
      for (const d of log) {
        const doneAt = d.fetched ? d.at + FETCH_MS : d.at;
        if (d.answered || doneAt > h.clock) continue;
        d.answered = true;
        const r = d.request;
        const result = fetchResultFor(r, d.at, {
          status: d.fetched ? (r.kind === 'ROBOTS' ? 404 : 200) : 0,
          durationMs: d.fetched ? FETCH_MS : 0,
          errorCode: d.fetched ? null : 'CS_LEASE_EXPIRED',
          errorMessage: d.fetched ? null : `lease started ${d.at - r.notAfter} ms after its not-after deadline`,
          remoteAddress: d.fetched ? '10.0.0.1' : null,
        });
        h.feed(TOPICS.fetchResults, r.site, result);
      }
    }
    return { config, log };
  } finally {
    await h.close();
  }
}

test('leases to a shared address that reach their fetcher 350 ms after issue widen the start window until they fit: every page is fetched, the per-IP gap kept', async () => {
  const hosts = ['a.test', 'b.test', 'c.test', 'd.test', 'e.test', 'f.test'];
  const { config, log } = await crawlWithLatency(350, hosts, 30_000);
  const fetched = log.filter((d) => d.fetched);
  const pages = new Set(fetched.filter((d) => d.request.kind === 'PAGE').map((d) => d.request.url));
  assert.equal(pages.size, hosts.length * 3, `pages fetched: ${[...pages].join(', ')}`);
  const dropped = log.filter((d) => !d.fetched).length;
  // each drop widens the window by its lateness plus 100 ms: a few drops, not one per lease
  assert.ok(dropped >= 1, 'no lease was late: the test does not exercise the window');
  assert.ok(dropped <= 6, `${dropped} leases dropped for arriving late (of ${log.length})`);
  const starts = fetched.map((d) => d.at).sort((a, b) => a - b);
  for (let i = 1; i < starts.length; i++)
    assert.ok(
      starts[i]! - starts[i - 1]! >= config.ipGapMs,
      `two starts on 10.0.0.1 ${starts[i]! - starts[i - 1]!} ms apart`,
    );
});

test('leases that arrive at once keep the narrow 100 ms start window: none is dropped', async () => {
  const { log } = await crawlWithLatency(0, ['a.test', 'b.test', 'c.test'], 15_000);
  assert.equal(log.filter((d) => !d.fetched).length, 0);
  assert.ok(
    log.every((d) => d.request.notAfter - d.request.notBefore === 100),
    'a window other than 100 ms',
  );
  assert.equal(log.filter((d) => d.request.kind === 'PAGE').length, 9);
});
