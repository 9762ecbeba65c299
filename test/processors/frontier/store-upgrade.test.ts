import { test } from 'node:test';
import assert from 'node:assert/strict';
import avro from 'avsc';
import { loadSchema } from '../../../schemas/index.js';
import { avroSerde } from '../../../processors/frontier/frontier-stores.js';
import type { SiteState, UrlHistory } from '../../../schemas/types.js';

/** The schema as it was before its last `dropped` fields were added. */
function olderType(name: 'SiteState' | 'UrlHistory', dropped: number): avro.Type {
  const json = JSON.parse(loadSchema(name).text) as { fields: unknown[] };
  return avro.Type.forSchema({ ...json, fields: json.fields.slice(0, json.fields.length - dropped) } as avro.Schema);
}

const HISTORY: UrlHistory = {
  url: 'http://a.test/p',
  kind: 'PAGE',
  depth: 1,
  lastFetch: 1_000,
  status: 200,
  etag: '"x"',
  lastModified: null,
  digest: 'sha1:AAAA',
  simhash: Buffer.alloc(8, 1),
  intervalMs: 60_000,
  nextDue: 61_000,
  visits: 3,
  changes: 1,
  queuedAt: 0,
};

test('a URL history written before the change-rate fields is read whole, with no evidence and no bucket', () => {
  const old = olderType('UrlHistory', 4).toBuffer(HISTORY);
  const read = avroSerde<UrlHistory>('UrlHistory').deserialize(old);
  assert.deepEqual({ ...read }, { ...HISTORY, rateVisits: 0, rateChanges: 0, rateExposureMs: 0, rateBucket: -1 });
  // and one written now round-trips
  const now = { ...HISTORY, rateVisits: 2.5, rateChanges: 1.2, rateExposureMs: 9e5, rateBucket: 31 };
  const serde = avroSerde<UrlHistory>('UrlHistory');
  assert.deepEqual({ ...serde.deserialize(serde.serialize(now)) }, now);
});

test('a site state written before overrides, cycles, change rates or template rates is read whole, at their defaults', () => {
  const base = {
    site: 'a.test',
    admitted: 4,
    linkingSites: ['b.test'],
    seeded: true,
    recentPages: 2,
    recentDuplicates: 0,
    dupCut: false,
    control: null,
    templates: [{ key: 7, internal: 3, external: 1 }],
  };
  const serde = avroSerde<SiteState>('SiteState');
  const defaults = {
    overrides: null,
    cycleStartedAt: 0,
    hostRates: [],
    rateVisits: 0,
    rateChanges: 0,
    rateExposureMs: 0,
    templateRates: [],
  };
  // before the template rates (1), the change-rate fields (5), and before cycleStartedAt (6) and overrides (7) too
  for (const dropped of [1, 5, 6, 7]) {
    const written = { ...base, overrides: null, cycleStartedAt: 99 };
    const read = serde.deserialize(olderType('SiteState', dropped).toBuffer(written));
    const expected = { ...written, ...defaults, ...(dropped <= 5 ? { cycleStartedAt: 99 } : {}) };
    assert.deepEqual(JSON.parse(JSON.stringify(read)), JSON.parse(JSON.stringify(expected)), `dropped ${dropped}`);
  }
  assert.throws(() => serde.deserialize(Buffer.from([1, 2, 3])));
});
