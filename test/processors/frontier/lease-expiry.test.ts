import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { LinkBatch } from '../../../schemas/types.js';
import { FrontierHarness } from './frontier-harness.js';

test('a robots.txt lease lost without a result is retried after the gap, not taken as robots.txt unavailable', async () => {
  const config = validateCrawlConfig({ leaseWindowMs: 1_000, fetchTimeoutMs: 1_000, robotsRetryMs: 60_000 });
  const h = await FrontierHarness.open(config);
  try {
    const seeds: LinkBatch = {
      site: 'example.test',
      sourceUrl: null,
      discoveredAt: h.clock,
      links: [{ url: 'http://example.test/', depth: 0, redirectHops: 0 }],
    };
    h.feed(TOPICS.links, 'example.test', seeds);
    await h.advance(2_000);
    assert.deepEqual(
      h.requests.map((r) => r.kind),
      ['ROBOTS'],
    );
    // no result ever comes (its fetcher died): the lease expires after notAfter + fetch timeout + grace
    await h.advance(10_000);
    assert.equal(h.requests.length, 2, 'the host was parked as if robots.txt had answered 5xx');
    assert.equal(h.requests[1]!.kind, 'ROBOTS');
    assert.ok(
      h.requests[1]!.notBefore - h.requests[0]!.notAfter >= config.minDelayMs,
      'the retry did not wait a full gap after the lost lease',
    );
    assert.equal(h.task.isIdle(), false, 'the host with a queued URL counts as parked, so --until-idle would drop it');
  } finally {
    await h.close();
  }
});
