import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics } from '../../../core/metrics.js';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { admitLinks } from '../../../processors/frontier/admission.js';
import { SitePolicy } from '../../../processors/frontier/site-policy.js';
import { DeferredSet } from '../../../processors/frontier/deferred-set.js';
import { memoryKv } from './memory-kv.js';
import { packedFingerprints } from '../../../processors/common/fingerprint.js';
import type { KeyValueStore } from '../../../state/state-store.js';
import { SeenSet } from '../../../state/seen-set.js';
import type { LinkBatch, SiteState } from '../../../schemas/types.js';
import { MemoryFingerprintStore } from '../../state/seen-set-memory-store.js';

/** A site store in RAM (the budget bookkeeping is not under test here). */
function siteStore(): KeyValueStore<string, SiteState> {
  const map = new Map<string, SiteState>();
  return {
    name: 'frontier-sites',
    get: (k) => map.get(k),
    getMany: (ks) => ks.map((k) => map.get(k)),
    put: (k, v) => void map.set(k, v),
    delete: (k) => void map.delete(k),
    *range() {
      yield* [...map].sort(([a], [b]) => (a < b ? -1 : 1));
    },
    flush() {},
    close() {},
  };
}

function setup() {
  const config = validateCrawlConfig({});
  const seen = new SeenSet(new MemoryFingerprintStore(), { expectedCount: 1_000, falsePositiveRate: 0.01 });
  seen.init();
  const metrics = new Metrics();
  const sites = new SitePolicy(siteStore(), config);
  const deferred = new DeferredSet(memoryKv<Buffer>('frontier-deferred'));
  const admit = (batch: LinkBatch) =>
    admitLinks(batch, 1, config, seen, sites, deferred, metrics).entries.map((e) => e.url);
  return { admit, metrics };
}

const link = (url: string) => ({ url, depth: 1, redirectHops: 0 });
const batchOf = (urls: string[], fingerprints?: Buffer | null): LinkBatch => ({
  site: 'example.test',
  sourceUrl: 'https://other.test/',
  discoveredAt: 1,
  links: urls.map(link),
  fingerprints,
});

test('fingerprints a batch carries are the ones the seen-set checks; a trap-dropped link takes its own out', () => {
  const { admit, metrics } = setup();
  const a = 'https://example.test/a';
  const b = 'https://example.test/b';
  const trap = `https://example.test/${'x/'.repeat(40)}`;
  // link a carries b's fingerprint: afterwards b counts as seen and a does not, so the carried one was used
  const carried = Buffer.concat([packedFingerprints([trap]), packedFingerprints([b])]);
  assert.deepEqual(admit(batchOf([trap, a], carried)), [a]);
  assert.deepEqual(admit(batchOf([b])), [], 'the carried fingerprint (b) was not recorded');
  assert.deepEqual(admit(batchOf([a])), [a], 'the fingerprint of a was computed instead of taken from the batch');
  assert.equal(metrics.counter('urls_dropped', 'too-deep'), 1);
  assert.equal(metrics.counter('link_fingerprints_invalid'), 0);
});

test('a batch whose fingerprints do not match its links in number is fingerprinted by the frontier, and counted', () => {
  const { admit, metrics } = setup();
  const urls = ['https://example.test/1', 'https://example.test/2'];
  assert.deepEqual(admit(batchOf(urls, packedFingerprints(urls.slice(0, 1)))), urls);
  assert.equal(metrics.counter('link_fingerprints_invalid'), 1);
  // the parser's own fingerprints and the frontier's agree: carried or not, each URL is admitted once
  assert.deepEqual(admit(batchOf(urls, packedFingerprints(urls))), []);
  assert.deepEqual(admit(batchOf([...urls, 'https://example.test/3'], null)), ['https://example.test/3']);
});
