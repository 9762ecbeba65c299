import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { topicDefinitions } from '../../runtime/engines/kafka/topics.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';
import { CLI, removeDir, tempDir, writeSeeds } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { crawlAppUntilRecorded, injectArgs, threePageSite } from './page-records.js';

const run = promisify(execFile);
// fresh ids per run (a broker may be kept up across runs), but the same web for both crawls
const RUN = Date.now().toString(36);
const IDS = [`first-${RUN}`, `second-${RUN}`];
const HOST = 'app-id.test';
const PAGES = ['/', '/a.html', '/b.html'];

/** End offsets of the default id's data topics that exist: a crawl under another id must not move them. */
async function defaultDataTopics(brokers: string): Promise<Map<string, string>> {
  const port = new KafkaPort([brokers], 'crawlstream-test');
  const admin = await port.admin();
  try {
    const existing = new Set(await admin.listTopics());
    const out = new Map<string, string>();
    for (const topic of Object.values(TOPICS))
      out.set(topic, existing.has(topic) ? JSON.stringify([...(await admin.endOffsets(topic))]) : 'absent');
    return out;
  } finally {
    await admin.close();
    await port.close();
  }
}

test(
  'two crawls with different --app-id on one broker crawl the same web, each into its own prefixed topics and changelogs, each recording every page; the default topics are untouched',
  { timeout: 240_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    // the same bodies in both crawls: the second one must not take them for copies of the first one's
    const web = await SyntheticWeb.start({ sites: [threePageSite(HOST, 'app id')] });
    const dir = tempDir('kafka-app-id');
    try {
      const before = await defaultDataTopics(brokers);
      const seeds = writeSeeds(dir, web.seedUrls());
      for (const id of IDS) {
        await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', id]);
        await run(process.execPath, [CLI, ...injectArgs(seeds, brokers, registry, id)]);
        await crawlAppUntilRecorded(brokers, registry, join(dir, id), id, PAGES);
      }

      const port = new KafkaPort([brokers], 'crawlstream-test');
      const admin = await port.admin();
      const existing = new Set(await admin.listTopics().finally(() => admin.close().then(() => port.close())));
      for (const id of IDS) {
        const topology = crawlTopology({
          config: validateCrawlConfig({}),
          partitions: 4,
          warcDir: tmpdir(),
          applicationId: id,
        });
        const names = topicDefinitions(topology).map((d) => d.name);
        assert.ok(names.includes(`${id}.links`) && names.includes(`${id}-dead-letters`));
        assert.ok(names.some((n) => n.startsWith(`${id}-`) && n.endsWith('-changelog')));
        assert.deepEqual(
          names.filter((n) => !existing.has(n)),
          [],
          `topics of ${id} missing`,
        );
        const subjects = (await (await fetch(`${registry}/subjects`)).json()) as string[];
        assert.ok(subjects.includes(`${id}.page-records-value`), `no registry subject for ${id}.page-records`);
      }
      assert.deepEqual(await defaultDataTopics(brokers), before, 'a crawl under another id touched the default topics');
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
