import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { taskIdString } from '../../core/ids.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { RECORDED_STORE } from '../../processors/parser/parser-processor.js';
import { ConfluentSchemaRegistry } from '../../runtime/engines/kafka/confluent-registry.js';
import { KafkaPort, type OutRecord } from '../../runtime/engines/kafka/kafka-port.js';
import { partitionFor } from '../../runtime/partitioner.js';
import { buildSerdes } from '../../runtime/serdes.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';
import { CLI, removeDir, sleep, startCli, tempDir } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { fetchedPageOf, recordedUrls, runArgs } from './page-records.js';

const run = promisify(execFile);
/**
 * Changelog records the restore reads: several times what restores in one session timeout here.
 * Restores ran at ~100,000/s (600,000 in 5.8 s) and, with bounded memtables and universal
 * compaction, ~205,000/s (600,000 in 2.9 s, under the 3 s timeout: the test then showed nothing).
 */
const FLOOD = 1_800_000;
const SESSION_TIMEOUT_MS = 3_000;
const BODY_BYTES = 10 * 1024 * 1024;

test(
  'a restore longer than the session timeout completes without losing the member, and a 10 MB page crosses Kafka into page-records',
  { timeout: 600_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const dir = tempDir('kafka-restore');
    const site = `restore-${randomUUID().slice(0, 8)}.test`;
    const topology = crawlTopology({ config: validateCrawlConfig({}), partitions: 4, warcDir: join(dir, 'warc') });
    const parserSub = topology.build().find((s) => s.sourceTopics.includes(TOPICS.fetched))!;
    const partition = partitionFor(Buffer.from(site), 4);
    const port = new KafkaPort([brokers], 'crawlstream-test');
    let stderr = '';
    let instance: ReturnType<typeof startCli> | undefined;
    try {
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers]);
      // a long changelog for the task's store: what a partition that crawled for weeks restores
      const changelog = topology.changelogTopic(RECORDED_STORE);
      const producer = await port.producer();
      try {
        for (let sent = 0; sent < FLOOD; sent += 50_000) {
          const batch: OutRecord[] = [];
          for (let i = 0; i < 50_000; i++)
            batch.push({
              topic: changelog,
              partition,
              key: randomBytes(16),
              value: randomBytes(8),
              timestamp: Date.now(),
            });
          await producer.send(batch);
        }
        const serdes = await buildSerdes(topology, new ConfluentSchemaRegistry(registry));
        const url = `http://${site}/big`;
        const page = fetchedPageOf(url, Buffer.alloc(BODY_BYTES, 'x'));
        await producer.send([
          {
            topic: TOPICS.fetched,
            partition,
            key: serdes.key(TOPICS.fetched).serialize(site),
            value: serdes.value(TOPICS.fetched).serialize(page),
            timestamp: Date.now(),
          },
        ]);
      } finally {
        await producer.close();
      }

      instance = startCli(
        runArgs('parser', join(dir, 'parser'), brokers, registry, ['--session-timeout', String(SESSION_TIMEOUT_MS)]),
      );
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const restoredLine = new RegExp(
        `task ${taskIdString({ subtopology: parserSub.id, partition })}: restored (\\d+) changelog records in (\\d+) ms`,
      );
      const until = Date.now() + 300_000;
      let urls: string[] = [];
      while (Date.now() < until && instance.child.exitCode === null) {
        if (restoredLine.test(stderr)) {
          urls = await recordedUrls(brokers, registry, site);
          if (urls.length > 0) break;
        }
        await sleep(1_000);
      }
      const m = restoredLine.exec(stderr);
      assert.ok(m, `the task never restored\n${stderr.slice(-3000)}`);
      t.diagnostic(`restored ${m[1]} changelog records in ${m[2]} ms (session timeout ${SESSION_TIMEOUT_MS} ms)`);
      assert.ok(Number(m[1]) >= FLOOD, `restored ${m[1]} records`);
      assert.ok(
        Number(m[2]) > SESSION_TIMEOUT_MS,
        `the restore took ${m[2]} ms, within one session timeout: this test shows nothing on this machine`,
      );
      assert.deepEqual(urls, [`http://${site}/big`], `page-records for ${site}\n${stderr.slice(-3000)}`);
      // the member kept its place: no eviction, no task lost, the instance still runs
      assert.doesNotMatch(stderr, /not aware of this member|lost \(CS_/, stderr.slice(-3000));
      assert.equal(instance.child.exitCode, null, stderr.slice(-3000));
    } finally {
      instance?.child.kill('SIGTERM');
      await instance?.exited;
      await port.close();
      removeDir(dir);
    }
  },
);
