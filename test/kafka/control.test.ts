import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { CLI } from '../e2e/harness.js';
import { ConfluentSchemaRegistry } from '../../runtime/engines/kafka/confluent-registry.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { partitionFor } from '../../runtime/partitioner.js';
import type { ConsumedRawRecord } from '../../runtime/record.js';
import { buildSerdes } from '../../runtime/serdes.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';
import type { ControlCommand } from '../../schemas/types.js';
import { kafkaInfra } from './infra.js';

const run = promisify(execFile);

async function cli(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, env });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

test(
  'control on Kafka writes an Avro command keyed by site to the control topic, on the partition the frontier owns',
  { timeout: 120_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    assert.equal((await cli(['topics', 'create', '--brokers', brokers])).code, 0);
    // a site outside the test web: the command stays on the topic for every later crawl test
    const site = `control-${randomUUID().slice(0, 8)}.example`;
    const sent = await cli([
      'control',
      'slow',
      `https://www.${site}/x`,
      '--min-gap',
      '5000',
      '--brokers',
      brokers,
      '--registry',
      registry,
    ]);
    assert.equal(sent.code, 0, sent.stderr);
    assert.match(
      sent.stdout,
      new RegExp(`sent SLOW ${site.replace('.', '\\.')} \\(min gap 5000 ms\\) to the control topic`),
    );

    const topology = crawlTopology({ config: validateCrawlConfig({}), partitions: 4, warcDir: tmpdir() });
    const serdes = await buildSerdes(topology, new ConfluentSchemaRegistry(registry));
    const port = new KafkaPort([brokers], 'crawlstream-test');
    const found: ConsumedRawRecord[] = [];
    let done!: () => void;
    const got = new Promise<void>((r) => (done = r));
    const consumer = await port.groupConsumer(
      { groupId: `control-test-${randomUUID()}`, topics: [TOPICS.control] },
      {
        onAssignment: () => undefined,
        onRecords: async (records) => {
          for (const r of records) if (r.key.toString() === site) found.push(r);
          if (found.length > 0) done();
        },
      },
    );
    try {
      await Promise.race([got, new Promise((r) => setTimeout(r, 60_000))]);
    } finally {
      await consumer.close();
      await port.close();
    }
    assert.equal(found.length, 1, `records for ${site} on the control topic`);
    const [record] = found;
    assert.equal(record!.partition, partitionFor(Buffer.from(site), 4));
    const command = serdes.value(TOPICS.control).deserialize(record!.value!) as ControlCommand;
    assert.deepEqual(
      { site: command.site, action: command.action, minGapMs: command.minGapMs },
      { site, action: 'SLOW', minGapMs: 5000 },
    );
  },
);

test('control refuses --data together with --brokers, and --brokers without --registry', async () => {
  const both = await cli(['control', 'block', 'example.com', '--data', tmpdir(), '--brokers', '127.0.0.1:1']);
  assert.notEqual(both.code, 0);
  assert.match(both.stderr, /--data DIR \(embedded crawl\) or --brokers \(Kafka\), not both/);
  // without the registry npm test exports: every command takes --registry from CRAWLSTREAM_REGISTRY too
  const { CRAWLSTREAM_REGISTRY: _registry, ...env } = process.env;
  const noRegistry = await cli(['control', 'block', 'example.com', '--brokers', '127.0.0.1:1'], env);
  assert.notEqual(noRegistry.code, 0);
  assert.match(noRegistry.stderr, /--registry URL is required with --brokers/);
});
