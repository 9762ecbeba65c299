import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { LinkBatch } from '../../../schemas/types.js';
import { FrontierHarness } from './frontier-harness.js';

test('a robots.txt lease lost without a result (it may have been answered 5xx) is asked again only after --robots-retry, without counting as unavailable', async () => {
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
    // no result ever comes (its fetcher died after the fetch, before committing it): the lease
    // expires after notAfter + fetch timeout + grace; its answer may have been a 503, which the
    // server expects to be followed by a wait, so the next ask waits --robots-retry from then
    await h.advance(10_000);
    assert.equal(h.requests.length, 1, 'robots.txt was asked again before --robots-retry');
    await h.advance(config.robotsRetryMs);
    assert.equal(h.requests.length, 2, 'robots.txt was not asked again after --robots-retry');
    assert.equal(h.requests[1]!.kind, 'ROBOTS');
    assert.ok(
      h.requests[1]!.notBefore - h.requests[0]!.notAfter >= config.robotsRetryMs,
      'the retry did not wait --robots-retry after the lost lease',
    );
    // not a failure: a second loss waits the same, not twice as long
    await h.advance(10_000);
    await h.advance(config.robotsRetryMs);
    assert.equal(h.requests.length, 3, 'the second retry waited longer than --robots-retry');
    assert.equal(h.task.isIdle(), false, 'the host with a queued URL counts as parked, so --until-idle would drop it');
  } finally {
    await h.close();
  }
});
