import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GenerationCache } from '../../state/generation-cache.js';
import { SitePolicy } from '../../processors/frontier/site-policy.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import type { KeyValueStore } from '../../state/state-store.js';
import type { SiteState } from '../../schemas/types.js';

test('a generation cache keeps what is used, within its byte budget, and drops the rest a generation at a time', () => {
  const cache = new GenerationCache<number>(1_000, () => 10);
  // 50 entries fill the young generation (half the budget); the 51st starts a new one
  for (let i = 0; i < 200; i++) {
    cache.set(`k${i}`, i);
    // one hot key, used all along, survives every turnover
    assert.equal(cache.get('k0'), 0, `the hot key was dropped at ${i}`);
  }
  assert.ok(cache.size <= 100, `${cache.size} entries held against a budget of 100`);
  assert.ok(cache.bytes <= 1_000 && cache.bytes >= 500, `${cache.bytes} bytes counted against a budget of 1,000`);
  assert.equal(cache.get('k199'), 199);
  assert.equal(cache.get('k60'), undefined, 'an old unused entry stayed');
  cache.delete('k0');
  assert.equal(cache.get('k0'), undefined);
  assert.throws(() => new GenerationCache(-1, () => 1), { code: 'CS_INVALID_OPTION' });
});

test('a site linked to again is not read from the store, and its state stays the one written', () => {
  const map = new Map<string, SiteState>();
  let reads = 0;
  const store: KeyValueStore<string, SiteState> = {
    name: 'frontier-sites',
    get: (k) => (reads++, map.get(k)),
    getMany: (ks) => ks.map((k) => (reads++, map.get(k))),
    put: (k, v) => void map.set(k, v),
    delete: (k) => void map.delete(k),
    *range() {
      yield* [...map].sort(([a], [b]) => (a < b ? -1 : 1));
    },
    flush() {},
    close() {},
  };
  map.set('old.test', {
    site: 'old.test',
    cycleStartedAt: 0,
    admitted: 5,
    linkingSites: ['a.test'],
    seeded: false,
    recentPages: 0,
    recentDuplicates: 0,
    dupCut: false,
    control: null,
    templates: [],
  });
  const sites = new SitePolicy(store, validateCrawlConfig({ sitePageBudget: 10, siteBudgetPerInlink: 0 }));
  for (let i = 0; i < 100; i++) {
    sites.noteInlink('old.test', `from${i % 3}.test`);
    sites.admitMany('old.test', 1);
  }
  assert.equal(reads, 1, `${reads} reads of one known site`);
  // the budget (10) counted the 5 admitted before and stopped there
  assert.equal(map.get('old.test')!.admitted, 10);
  assert.deepEqual(map.get('old.test')!.linkingSites, ['a.test', 'from0.test', 'from1.test', 'from2.test']);
});
