import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { leaseIssuer } from '../../../processors/common/lease-id.js';
import { seedLinks } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

test("fetch requests are keyed by their host's address, so one fetcher task takes every lease of an address; a host without one by its site", async () => {
  // two hosts on one IPv4 address, one without an address, two HTTPS hosts on one IPv6 address
  const addresses: Record<string, string | null> = {
    'a.test': '10.0.0.7',
    'b.test': '10.0.0.7',
    'c.test': null,
    'd.test': '2001:db8::7',
    'e.test': '2001:db8::7',
  };
  const h = await FrontierHarness.open(validateCrawlConfig({}), (host) => addresses[host] ?? null);
  try {
    for (const host of Object.keys(addresses)) seedLinks(h, host, [`${host < 'd' ? 'http' : 'https'}://${host}/`]);
    for (let t = 0; t < 3_000 && h.requests.length < 5; t += 10) await h.advance(10, 10);
    const keyOf = new Map(h.requests.map((r, i) => [r.host, h.requestKeys[i]]));
    assert.deepEqual(Object.fromEntries(keyOf), {
      'a.test': '10.0.0.7',
      'b.test': '10.0.0.7',
      'c.test': 'c.test',
      'd.test': '2001:db8::7',
      'e.test': '2001:db8::7',
    });
    assert.ok(
      h.requests.some((r) => r.url.startsWith('https://')),
      h.requests.map((r) => r.url).join(' '),
    );
    // the fetcher reads back which frontier partition issued each lease
    for (const r of h.requests) assert.equal(leaseIssuer(r.leaseId), '0', r.leaseId);
  } finally {
    await h.close();
  }
});
