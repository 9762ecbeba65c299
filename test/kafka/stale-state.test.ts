import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { topicDefinitions } from '../../runtime/engines/kafka/topics.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { crawlTopology } from '../../topology/crawl-topology.js';
import { CLI, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import {
  crawlAppUntilRecorded,
  injectArgs,
  LOOPBACK_WEB_ARGS,
  pageRecordsOf,
  runArgs,
  threePageSite,
} from './page-records.js';

const run = promisify(execFile);
const ID = `stale-${Date.now().toString(36)}`;
const HOST = 'stale-state.test';
const PAGES = ['/', '/a.html', '/b.html'];

/** Every topic of the crawl under ID, changelogs and dead letters included, as the cluster names them. */
function topicsOfId(): string[] {
  const topology = crawlTopology({
    config: validateCrawlConfig({}),
    partitions: 4,
    warcDir: tmpdir(),
    applicationId: ID,
  });
  return topicDefinitions(topology).map((d) => d.name);
}

/** Deletes the topics and waits until the cluster no longer lists any of them. */
async function deleteTopics(brokers: string, topics: string[]): Promise<void> {
  const admin = new Kafka({ brokers: [brokers], clientId: 'crawlstream-test', logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics, timeout: 30_000 });
    const until = Date.now() + 60_000;
    while (Date.now() < until) {
      const left = new Set(await admin.listTopics());
      if (!topics.some((t) => left.has(t))) return;
      await sleep(500);
    }
    assert.fail('the deleted topics are still listed after 60 s');
  } finally {
    await admin.disconnect();
  }
}

test(
  'a crawl whose topics were deleted and created again, run on its old state directory, wipes the local state that is ahead of the new changelogs and crawls its seeds again',
  { timeout: 300_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    const web = await SyntheticWeb.start({ sites: [threePageSite(HOST, 'stale state')] });
    const dir = tempDir('kafka-stale-state');
    const data = join(dir, 'data');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const crawl = async (): Promise<string> => {
        // topics create may race the end of a deletion: try again for a while
        for (let attempt = 0; ; attempt++) {
          try {
            await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', ID]);
            break;
          } catch (err) {
            if (attempt >= 20) throw err;
            await sleep(1_000);
          }
        }
        await run(process.execPath, [CLI, ...injectArgs(seeds, brokers, registry, ID)]);
        return crawlAppUntilRecorded(brokers, registry, data, ID, PAGES);
      };

      const first = await crawl();
      assert.doesNotMatch(first, /local state is ahead of the cluster/, 'a fresh state directory is never stale');
      const requestsBefore = web.requests().filter((r) => r.path !== '/robots.txt').length;
      await deleteTopics(brokers, topicsOfId());
      const second = await crawl();
      assert.match(second, /local state is ahead of the cluster .*wiping the task's local state/);
      const fetchedAgain = web.requests().filter((r) => r.path !== '/robots.txt').length - requestsBefore;
      assert.ok(fetchedAgain >= PAGES.length, `the seeds were crawled again: ${fetchedAgain} page requests`);
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);

test(
  "a data dir that held another cluster's state is wiped at start and its tasks restore from this cluster's changelogs",
  { timeout: 300_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    const id = `${ID}-moved`;
    const web = await SyntheticWeb.start({ sites: [threePageSite(`moved.${HOST}`, 'moved state')] });
    const dir = tempDir('kafka-moved-state');
    const data = join(dir, 'data');
    const admin = new Kafka({ brokers: [brokers], clientId: 'crawlstream-test', logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const { clusterId } = await admin.describeCluster();
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', id]);
      await run(process.execPath, [CLI, ...injectArgs(writeSeeds(dir, web.seedUrls()), brokers, registry, id)]);
      await crawlAppUntilRecorded(brokers, registry, data, id, PAGES);
      assert.equal(readFileSync(join(data, 'cluster-id'), 'utf8'), `${clusterId}\n`, 'the data dir names its cluster');

      // the volume "comes from" another cluster: its id differs, and a task dir holds state this cluster never wrote
      writeFileSync(join(data, 'cluster-id'), 'AnotherClusterIdAAAAAA\n');
      const foreign = new TaskDirectory(data).task({ subtopology: 9, partition: 9 });
      mkdirSync(foreign.path, { recursive: true });
      writeFileSync(join(foreign.path, 'planted'), 'x');
      const instance = startCli(runArgs('all', data, brokers, registry, [...LOOPBACK_WEB_ARGS], id));
      let stderr = '';
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      try {
        const until = Date.now() + 90_000;
        while (
          Date.now() < until &&
          instance.child.exitCode === null &&
          !/restored [1-9]\d* changelog records/.test(stderr)
        )
          await sleep(200);
        instance.child.kill('SIGTERM');
        assert.equal((await instance.exited).code, 0, stderr.slice(-4000));
      } finally {
        instance.child.kill('SIGKILL');
      }
      assert.match(
        stderr,
        new RegExp(`held task state of cluster AnotherClusterIdAAAAAA, the brokers are cluster ${clusterId}: wiped`),
      );
      assert.match(stderr, /restored [1-9]\d* changelog records/, 'the wiped tasks restored from the changelogs');
      assert.ok(!existsSync(foreign.path), "the other cluster's task state is gone");
      assert.equal(readFileSync(join(data, 'cluster-id'), 'utf8'), `${clusterId}\n`);
      const pages = (await pageRecordsOf(brokers, registry, `${id}.page-records`)).map((r) => new URL(r.url).pathname);
      assert.deepEqual(pages.sort(), PAGES, 'each page recorded once');
    } finally {
      await admin.disconnect();
      await web.close();
      removeDir(dir);
    }
  },
);
