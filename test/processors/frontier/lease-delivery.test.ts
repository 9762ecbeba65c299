import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { FetchRequest } from '../../../schemas/types.js';
import { fetchResultFor, seedLinks } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';
import { WIRE_GATE_MARGIN_MS } from '../../../processors/fetcher/wire-gate.js';

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
 * Leases reach their fetcher `latencyMs` after their issue (a loaded event loop, a Kafka engine's
 * commit interval and more) and leave through one wire gate, as the real fetcher's do: at
 * max(arrival, notBefore, the last send + the gap + the gate's margin); one that would leave after
 * its notAfter is dropped unfetched (CS_LEASE_EXPIRED).
 */
async function crawlWithLatency(latencyMs: number, hosts: string[], ms: number) {
  const config = validateCrawlConfig({ ipConcurrency: 4, ipGapMs: 100, minDelayMs: 1_000 });
  const h = await FrontierHarness.open(config, () => '10.0.0.1');
  const log: Delivered[] = [];
  let lastSent = -Infinity;
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
        const at = Math.max(r.issuedAt + latencyMs, r.notBefore, lastSent + config.ipGapMs + WIRE_GATE_MARGIN_MS);
        const fetched = at <= r.notAfter;
        if (fetched) lastSent = at;
        log.push({ request: r, at, fetched, answered: false });
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

test('leases to a shared address that reach their fetcher 350 ms after issue are all fetched, and leave the per-IP gap apart', async () => {
  const hosts = ['a.test', 'b.test', 'c.test', 'd.test', 'e.test', 'f.test'];
  const { config, log } = await crawlWithLatency(350, hosts, 30_000);
  const fetched = log.filter((d) => d.fetched);
  const pages = new Set(fetched.filter((d) => d.request.kind === 'PAGE').map((d) => d.request.url));
  assert.equal(pages.size, hosts.length * 3, `pages fetched: ${[...pages].join(', ')}`);
  // overlapping leases get the usual lease window: a late one waits at the gate, not dropped
  assert.equal(log.length - fetched.length, 0, 'leases dropped for arriving late');
  assert.ok(
    log.some((d) => d.at > d.request.notBefore + 100),
    'no lease left more than 100 ms after its notBefore: the test does not exercise late delivery',
  );
  const starts = fetched.map((d) => d.at).sort((a, b) => a - b);
  for (let i = 1; i < starts.length; i++)
    assert.ok(
      starts[i]! - starts[i - 1]! >= config.ipGapMs,
      `two starts on 10.0.0.1 ${starts[i]! - starts[i - 1]!} ms apart`,
    );
});

test('leases that arrive at once get the usual lease window: none is dropped', async () => {
  const { config, log } = await crawlWithLatency(0, ['a.test', 'b.test', 'c.test'], 15_000);
  assert.equal(log.filter((d) => !d.fetched).length, 0);
  assert.ok(
    log.every((d) => d.request.notAfter - d.request.notBefore === config.leaseWindowMs),
    'a window other than the lease window',
  );
  assert.equal(log.filter((d) => d.request.kind === 'PAGE').length, 9);
});
