import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { readTopic } from '../../runtime/engines/embedded/topic-reader.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';
import type { PageRecord } from '../../schemas/types.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import {
  CHARSET_VARIANTS,
  charsetLinkRequests,
  charsetWeb,
  robotsTagExpectations,
  robotsTagSiteExpectation,
} from '../../synthetic-web/charset-pages.js';
import { loopbackConfig, seedLinks, untilIdle } from '../processors/fetcher/pipeline.js';

test(
  'a crawl of legacy-encoded pages requests their links with queries in each page’s encoding, and honours X-Robots-Tag and meta robots (server log)',
  { timeout: 120_000 },
  async () => {
    const web = await SyntheticWeb.start({ sites: charsetWeb() });
    const dir = mkdtempSync(join(tmpdir(), 'crawlstream-charset-crawl-'));
    const engine = new EmbeddedEngine(
      crawlTopology({ config: loopbackConfig(), partitions: 2, warcDir: join(dir, 'warc') }),
      { dataDir: join(dir, 'data') },
    );
    try {
      await engine.start();
      const now = Date.now();
      await seedLinks(engine, web.seedUrls(), now);
      await untilIdle(engine, 100_000);
      await engine.stop();
      await engine.done;
      const records: PageRecord[] = [];
      await readTopic(join(dir, 'data'), TOPICS.pageRecords, (r) => records.push(r.value as PageRecord));
      const requested = (host: string) =>
        new Set(
          web
            .requests()
            .filter((e) => e.host === host)
            .map((e) => e.path),
        );

      // every article page; the links of each one that is no near copy of a page of its site fetched before it
      const linkRequests = charsetLinkRequests();
      const originals = new Set<string>();
      for (const v of CHARSET_VARIANTS) {
        const log = requested(v.host);
        assert.ok(log.has(v.path), `${v.host}${v.path} requested`);
        const record = records.find((r) => r.url === web.url(v.host, v.path))!;
        assert.equal(record.charset, v.declaration === 'bom-over-header' ? 'UTF-8' : v.encoding, v.path);
        assert.equal(record.language, v.article.lang, v.path);
        if (record.duplicateOf !== null) continue;
        originals.add(`${v.host} ${v.article.lang} ${record.charset}`);
        for (const path of linkRequests[v.path]!) assert.ok(log.has(path), `${path} from ${v.path} requested`);
      }
      // each article has one original per site, so the links of a page in every encoding were followed
      assert.deepEqual([...originals].sort(), [
        'charset.test fr windows-1252',
        'charset.test ja Shift_JIS',
        'charset.test zh GBK',
        'unicode.test fr UTF-8',
        'unicode.test ja UTF-8',
        'unicode.test zh UTF-8',
      ]);

      // robots-tag.test: nofollow pages' links never requested, another agent's nofollow ignored
      const robots = requested('robots-tag.test');
      const expected = robotsTagSiteExpectation();
      for (const path of expected.fetch) assert.ok(robots.has(path), `${path} requested`);
      for (const path of expected.never) assert.ok(!robots.has(path), `${path} never requested`);
      const { noindex, indexed } = robotsTagExpectations();
      for (const p of [...noindex, ...indexed])
        assert.equal(
          records.find((r) => r.url === web.url('robots-tag.test', p))?.noindex,
          noindex.includes(p),
          `${p} noindex recorded`,
        );
    } finally {
      await engine.stop().catch(() => undefined);
      await web.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
