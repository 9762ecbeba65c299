import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { crawlTopology } from '../../topology/crawl-topology.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { PageSpec, SiteSpec } from '../../synthetic-web/sites.js';
import { loopbackConfig, seedLinks, untilIdle } from '../processors/fetcher/pipeline.js';

test(
  'through a crawl, a 10-hop redirect chain stops after 5 hops and a redirect loop ends',
  { timeout: 60_000 },
  async (t) => {
    const moved = (location: string): PageSpec => ({
      status: 302,
      headers: { location },
      title: `moved to ${location}`,
    });
    const chain: Record<string, PageSpec> = { '/': { title: 'chain home', links: ['/hop/0'] } };
    for (let i = 0; i < 10; i++) chain[`/hop/${i}`] = moved(`/hop/${i + 1}`);
    chain['/hop/10'] = { title: 'end of the chain' };
    const sites: SiteSpec[] = [
      { host: 'chain.test', seed: true, robots: { status: 200, body: 'User-agent: *\nDisallow:\n' }, pages: chain },
      {
        host: 'loop.test',
        seed: true,
        pages: { '/': { title: 'loop home', links: ['/a'] }, '/a': moved('/b'), '/b': moved('/a') },
      },
    ];
    const web = await SyntheticWeb.start({ sites });
    const dir = mkdtempSync(join(tmpdir(), 'crawlstream-redirects-'));
    const engine = new EmbeddedEngine(
      crawlTopology({ config: loopbackConfig(), partitions: 2, warcDir: join(dir, 'warc') }),
      { dataDir: join(dir, 'data') },
    );
    try {
      await engine.start();
      const now = Date.now();
      await seedLinks(engine, web.seedUrls(), now);
      await untilIdle(engine, 50_000);
      const paths = (host: string): string[] =>
        web
          .requests()
          .filter((e) => e.host === host)
          .map((e) => e.path);
      const chainPaths = paths('chain.test');
      t.diagnostic(`chain.test requests: ${chainPaths.join(' ')}`);
      for (let i = 0; i <= 5; i++)
        assert.ok(chainPaths.includes(`/hop/${i}`), `hop ${i} was not fetched: ${chainPaths.join(' ')}`);
      assert.deepEqual(
        chainPaths.filter((p) => /^\/hop\/([6-9]|10)$/.test(p)),
        [],
        'the chain was followed past 5 hops',
      );
      const loopPaths = paths('loop.test')
        .filter((p) => p !== '/robots.txt')
        .sort();
      assert.deepEqual(loopPaths, ['/', '/a', '/b'], 'each URL of the loop is fetched once');
    } finally {
      await engine.stop();
      await web.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
