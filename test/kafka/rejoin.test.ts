import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { taskIdString } from '../../core/ids.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { ConfluentSchemaRegistry } from '../../runtime/engines/kafka/confluent-registry.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { transactionalIdOf } from '../../runtime/engines/kafka/topics.js';
import { partitionFor } from '../../runtime/partitioner.js';
import { buildSerdes } from '../../runtime/serdes.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';
import { CLI, removeDir, sleep, startCli, tempDir } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { fetchedPageOf, recordedUrls, runArgs } from './page-records.js';

const run = promisify(execFile);

test(
  'a task fenced while its member still holds the partition: the member joins its group again, takes the task back and records every page once; restarted on a wiped state directory it restores what it recorded',
  { timeout: 300_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    // the topics first: an instance refuses to start without them (on a fresh broker, not one an earlier test set up)
    const created = await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers], {
      encoding: 'utf8',
    });
    assert.match(created.stdout, /page-records/);
    const dir = tempDir('kafka-rejoin');
    const site = `rejoin-${randomUUID().slice(0, 8)}.test`;
    const topology = crawlTopology({ config: validateCrawlConfig({}), partitions: 4, warcDir: join(dir, 'warc') });
    const parserSub = topology.build().find((s) => s.sourceTopics.includes(TOPICS.fetched))!;
    const partition = partitionFor(Buffer.from(site), 4);
    const serdes = await buildSerdes(topology, new ConfluentSchemaRegistry(registry));
    const port = new KafkaPort([brokers], 'crawlstream-test');
    const send = async (url: string) => {
      const producer = await port.producer();
      try {
        await producer.send([
          {
            topic: TOPICS.fetched,
            partition,
            key: serdes.key(TOPICS.fetched).serialize(site),
            value: serdes.value(TOPICS.fetched).serialize(fetchedPageOf(url)),
            timestamp: Date.now(),
          },
        ]);
      } finally {
        await producer.close();
      }
    };
    const waitFor = async (urls: string[], ms: number): Promise<string[]> => {
      const until = Date.now() + ms;
      let got: string[] = [];
      while (Date.now() < until) {
        got = await recordedUrls(brokers, registry, site);
        if (urls.every((u) => got.includes(u))) return got;
        await sleep(1_000);
      }
      return got;
    };
    let stderr = '';
    const startParser = () => {
      const started = startCli(
        runArgs('parser', join(dir, 'parser'), brokers, registry, ['--session-timeout', '6000']),
      );
      started.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      return started;
    };
    let instance = startParser();
    try {
      const first = `http://${site}/one`;
      await send(first);
      assert.deepEqual(await waitFor([first], 90_000), [first], `the parser did not record ${first}\n${stderr}`);

      // another producer takes the task's transactional id: the live task is fenced at its next commit
      const intruder = await port.transactionalProducer(transactionalIdOf(topology, parserSub.id, partition));
      const second = `http://${site}/two`;
      await send(second);
      const got = await waitFor([first, second], 90_000);
      assert.deepEqual(got.sort(), [first, second], `after the fencing\n${stderr}`);
      assert.match(
        stderr,
        new RegExp(
          `task ${taskIdString({ subtopology: parserSub.id, partition })} lost \\(CS_FENCED\\).*joins its group again`,
        ),
      );
      // the member took the task back, so the intruder is fenced in turn
      const deadLetters = `${topology.applicationId}-dead-letters`;
      const probe = { topic: deadLetters, partition: 0, key: Buffer.from('probe'), value: null, timestamp: Date.now() };
      await assert.rejects(intruder.commit([probe], 'nobody', []), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'CS_FENCED', err.message);
        return true;
      });
      await intruder.close().catch(() => undefined);
      assert.equal(instance.child.exitCode, null, `the instance exited\n${stderr}`);
      const third = `http://${site}/three`;
      await send(third);
      assert.deepEqual((await waitFor([first, second, third], 90_000)).sort(), [first, third, second]);

      // restarted on a wiped state directory: the stores come back whole from their changelogs, so
      // a repeat fetch of a recorded page is known as one (a parser without them would record it again)
      instance.child.kill('SIGTERM');
      assert.equal((await instance.exited).code, 0, stderr);
      removeDir(join(dir, 'parser'));
      stderr = '';
      instance = startParser();
      const fourth = `http://${site}/four`;
      await send(first);
      await send(fourth);
      const after = await waitFor([first, second, third, fourth], 90_000);
      assert.match(
        stderr,
        new RegExp(`task ${taskIdString({ subtopology: parserSub.id, partition })}: restored \\d+ changelog records`),
        stderr,
      );
      assert.deepEqual(after.sort(), [fourth, first, third, second], 'a page recorded twice, or one missing');
    } finally {
      instance.child.kill('SIGTERM');
      await instance.exited;
      await port.close();
      removeDir(dir);
    }
  },
);
