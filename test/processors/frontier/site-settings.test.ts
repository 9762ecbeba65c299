import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { parseSiteOverride } from '../../../processors/common/site-overrides.js';
import { SitePolicy } from '../../../processors/frontier/site-policy.js';
import type { ControlCommand, SiteState } from '../../../schemas/types.js';
import { loadSchema } from '../../../schemas/index.js';
import { memoryKv } from './memory-kv.js';

const set = (site: string, settings: Record<string, string>, issuedAt = 1): ControlCommand => ({
  site,
  action: 'SET',
  minGapMs: null,
  issuedAt,
  issuedBy: null,
  settings,
});

function policy(store = memoryKv<SiteState>('frontier-sites')) {
  const config = validateCrawlConfig({
    sitePageBudget: 10,
    sites: [
      parseSiteOverride('example.org', { 'min-delay': 2000, budget: 3 }, 'crawl.yaml'),
      parseSiteOverride('*.example.org', { 'min-delay': 4000 }, 'crawl.yaml'),
    ],
  });
  return { store, config, sites: new SitePolicy(store, config) };
}

test('a site gets its config-file min-delay and budget; other sites keep the options', () => {
  const { sites, config } = policy();
  assert.equal(sites.settings.minDelayMs('example.org', 'example.org'), 2000);
  assert.equal(sites.settings.minDelayMs('example.org', 'www.example.org'), 4000);
  assert.equal(sites.settings.hostConfig('example.org', 'www.example.org').minDelayMs, 4000);
  assert.equal(sites.settings.minDelayMs('other.org', 'other.org'), config.minDelayMs);
  assert.equal(
    sites.settings.hostConfig('other.org', 'other.org'),
    config,
    'no copy of the config without an override',
  );
  assert.equal(sites.admitMany('example.org', 10).admitted, 3, 'the fixed budget instead of the earned one');
  assert.equal(sites.admitMany('other.org', 20).admitted, 10);
});

test('control set overrides the config file live, is kept in the site state across a restart, and default lifts it', () => {
  const { sites, store } = policy();
  sites.apply(set('example.org', { 'min-delay': '6000', budget: '5' }));
  assert.equal(sites.settings.minDelayMs('example.org', 'www.example.org'), 6000, 'live over the file, for every host');
  // the state goes through its Avro schema, as the store and its changelog keep it
  const type = loadSchema('SiteState').type;
  const stored = type.fromBuffer(type.toBuffer(store.get('example.org'))) as SiteState;
  assert.deepEqual({ ...stored.overrides }, { minDelayMs: 6000, budget: 5, maxDepth: null, issuedAt: 1 });

  const restarted = policy(store).sites;
  assert.equal(restarted.settings.minDelayMs('example.org', 'example.org'), 6000);
  assert.equal(restarted.admitMany('example.org', 10).admitted, 5);
  restarted.apply(set('example.org', { 'min-delay': 'default' }, 2));
  assert.equal(restarted.settings.minDelayMs('example.org', 'www.example.org'), 4000, 'the file applies again');
  restarted.apply(set('example.org', { budget: 'default' }, 3));
  assert.equal(store.get('example.org')!.overrides, null, 'nothing live is left');
});

test('a control set below the politeness floor changes nothing and says why', () => {
  const { sites, store } = policy();
  assert.throws(() => sites.apply(set('example.org', { 'min-delay': '10' })), /example\.org: control set: min-delay/);
  assert.equal(sites.settings.minDelayMs('example.org', 'example.org'), 2000);
  assert.equal(store.get('example.org')?.overrides ?? null, null);
});
