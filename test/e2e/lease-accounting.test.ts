import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import type { FetchRequest, FetchResult } from '../../schemas/types.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { assertWarcioCheckPasses, warcioIndex } from '../python/warcio.js';
import {
  failedFetchRecords,
  fetchRecords,
  lease,
  loopbackConfig,
  seedLinks,
  Tap,
  untilIdle,
} from '../processors/fetcher/pipeline.js';

function countBy<T>(items: T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of items) m.set(key(i), (m.get(key(i)) ?? 0) + 1);
  return m;
}

const sorted = (m: Map<string, number>): [string, number][] => [...m].sort(([a], [b]) => a.localeCompare(b));

test(
  'every lease of a crawl of the synthetic web ends in exactly one fetch result and one WARC record, but one of a refused type, which has none',
  { timeout: 60_000 },
  async (t) => {
    const web = await SyntheticWeb.start();
    const dir = mkdtempSync(join(tmpdir(), 'crawlstream-leases-'));
    const warcDir = join(dir, 'warc');
    const topology = crawlTopology({ config: loopbackConfig(), partitions: 2, warcDir });
    // taps: their own consumer groups read every lease and every result as they flow
    const leases: FetchRequest[] = [];
    const results: FetchResult[] = [];
    topology
      .addSource('tap-requests', TOPICS.fetchRequests)
      .addProcessor('tap-requests-p', () => new Tap(leases), ['tap-requests']);
    topology
      .addSource('tap-results', TOPICS.fetchResults)
      .addProcessor('tap-results-p', () => new Tap(results), ['tap-results']);
    const engine = new EmbeddedEngine(topology, { dataDir: join(dir, 'data') });
    try {
      await engine.start();
      const now = Date.now();
      await seedLinks(engine, web.seedUrls(), now);
      // leases that reach a fetcher after their deadline (a backlog): dropped unfetched, yet answered and archived
      const late = [
        lease(web.url('beta.test', '/late.html'), { notAfter: now - 1 }),
        lease(web.url('gamma.test', '/robots.txt'), { kind: 'ROBOTS', notAfter: now - 1 }),
      ];
      await engine.produce(
        TOPICS.fetchRequests,
        late.map((l) => ({ key: l.site, value: l, timestamp: now })),
      );
      await untilIdle(engine, 55_000);
      await engine.stop();
      await engine.done;

      t.diagnostic(
        `${leases.length} leases (${leases.filter((l) => l.kind === 'ROBOTS').length} robots.txt), ${results.length} results`,
      );
      assert.ok(leases.filter((l) => l.kind === 'ROBOTS').length >= 10, 'robots.txt leases are part of the crawl');
      assert.ok(leases.filter((l) => l.kind === 'PAGE').length >= 50, 'page leases are part of the crawl');

      // exactly one result per lease, and no result without a lease
      const resultsPerLease = countBy(results, (r) => r.leaseId);
      assert.deepEqual(
        [...resultsPerLease].filter(([, n]) => n !== 1),
        [],
        'a lease got more than one result',
      );
      assert.deepEqual(
        new Set(resultsPerLease.keys()),
        new Set(leases.map((l) => l.leaseId)),
        'leases and results differ',
      );
      for (const l of late) assert.equal(results.find((r) => r.leaseId === l.leaseId)?.errorCode, 'CS_LEASE_EXPIRED');

      // a response of a type --accept-type refuses (the standard web's PDF and images) is recorded, not archived
      const refused = new Set(results.filter((r) => r.errorCode === 'CS_REFUSED_TYPE').map((r) => r.leaseId));
      assert.ok(refused.size > 0, 'no response was refused by type: the exception below proves nothing');
      const archived = leases.filter((l) => !refused.has(l.leaseId));
      // exactly one WARC record per other lease: request + response when a response came, metadata otherwise
      const files = readdirSync(warcDir)
        .filter((f) => f.endsWith('.warc.gz'))
        .map((f) => join(warcDir, f));
      assert.ok(files.length > 0, 'no WARC file');
      const index = files.flatMap((f) => warcioIndex(f, ['warc-type', 'warc-target-uri', 'warc-concurrent-to']));
      const answered = fetchRecords(index);
      assert.deepEqual(
        sorted(countBy(answered, (r) => r['warc-target-uri']!)),
        sorted(countBy(archived, (l) => l.url)),
        'WARC records and leases differ by URL',
      );
      // an exact copy's response is archived as a revisit record, which carries no request record
      const withResponse = results.filter((r) => r.status > 0 && !refused.has(r.leaseId)).length;
      const responses = index.filter((r) => r['warc-type'] === 'response').length;
      assert.equal(responses + index.filter((r) => r['warc-type'] === 'revisit').length, withResponse);
      assert.equal(
        index.filter((r) => r['warc-type'] === 'request').length,
        responses,
        'each response has its request',
      );
      assert.equal(failedFetchRecords(index).length, results.length - refused.size - withResponse);
      // each response and revisit carries its fetch facts for replay reparse
      assert.equal(
        index.filter((r) => r['warc-type'] === 'metadata').length - failedFetchRecords(index).length,
        withResponse,
      );
      for (const f of files) assertWarcioCheckPasses(f);
    } finally {
      await engine.stop();
      await web.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
