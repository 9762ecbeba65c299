import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { FetchRequest } from '../../../schemas/types.js';
import { fetchResultFor, seedLinks } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

const FETCH_MS = 5;

test('on an address kept busy by 150 small sites, a site of 30 pages is still fetched at its own 1 s rate and the per-IP gap holds', async (t) => {
  // every limit at its default (8 in flight per address, 100 ms between starts there, 1 s per host)
  const config = validateCrawlConfig({});
  const h = await FrontierHarness.open(config, () => '10.0.0.1');
  const started: { request: FetchRequest; at: number }[] = [];
  try {
    const feed = (host: string, paths: string[]) =>
      seedLinks(
        h,
        host,
        paths.map((p) => `http://${host}${p}`),
      );
    for (let i = 0; i < 150; i++) feed(`small${i}.test`, ['/', '/a.html', '/b.html']);
    feed(
      'big.test',
      Array.from({ length: 30 }, (_, i) => `/p/${i}`),
    );
    const answered = new Set<string>();
    for (let t = 0; t < 110_000; t += 10) {
      await h.advance(10, 10);
      await new Promise(setImmediate);
      for (const r of h.requests.slice(started.length))
        started.push({ request: r, at: Math.max(r.issuedAt, r.notBefore) });
      for (const { request: r, at } of started) {
        if (answered.has(r.leaseId) || at + FETCH_MS > h.clock) continue;
        answered.add(r.leaseId);
        const result = fetchResultFor(r, at, {
          status: r.kind === 'ROBOTS' ? 404 : 200,
          durationMs: FETCH_MS,
          remoteAddress: '10.0.0.1',
        });
        h.feed(TOPICS.fetchResults, r.site, result);
      }
    }
  } finally {
    await h.close();
  }
  const starts = started.map((s) => s.at).sort((a, b) => a - b);
  for (let i = 1; i < starts.length; i++)
    assert.ok(starts[i]! - starts[i - 1]! >= config.ipGapMs, `two starts ${starts[i]! - starts[i - 1]!} ms apart`);
  const small = started.filter((s) => s.request.host.startsWith('small') && s.request.kind === 'PAGE');
  assert.equal(small.length, 450, 'every small site fetched');
  const big = started.filter((s) => s.request.host === 'big.test' && s.request.kind === 'PAGE').map((s) => s.at);
  assert.equal(big.length, 30, 'every page of the big site fetched');
  // the small sites keep the address busy for most of the run (600 requests at ~150 ms each)
  const busyUntil = small[small.length - 1]!.at - starts[0]!;
  assert.ok(busyUntil > 40_000, `the address was busy only ${busyUntil} ms: the test proves nothing`);
  // its own gap is 1 s + 30 ms slack; on the busy address it may wait one start (≤ 150 ms) more
  const gaps = big.slice(1).map((at, i) => at - big[i]!);
  const worst = Math.max(...gaps.filter((_, i) => big[i]! - starts[0]! < busyUntil));
  t.diagnostic(
    `address busy until ${busyUntil} ms; big site's gaps while busy: worst ${worst} ms, all ${JSON.stringify(gaps)}`,
  );
  assert.ok(worst <= 1_030 + 250, `the big site waited ${worst} ms between two pages while the address was busy`);
});
