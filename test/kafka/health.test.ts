import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { KafkaEngine } from '../../runtime/engines/kafka/kafka-engine.js';
import { startOpsServer } from '../../runtime/ops-server.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';
import { roleFilter } from '../../cli/run.js';
import { CLI, removeDir, sleep, tempDir } from '../e2e/harness.js';
import { python } from '../python/python.js';
import { kafkaInfra } from './infra.js';

const run = promisify(execFile);

/**
 * Writes one record with Kafka's snappy codec, as a Java or librdkafka producer configured with
 * `compression.type=snappy` does: kafkajs ships no snappy codec (and crawlstream installs only
 * lz4 and zstd), so its consumer cannot decode the batch. That is a non-retriable error
 * (KafkaJSNotImplemented): kafkajs' consumer crashes and does not restart.
 */
async function produceSnappy(brokers: string, topic: string): Promise<void> {
  const script = [
    'import sys',
    'from confluent_kafka import Producer',
    "p = Producer({'bootstrap.servers': sys.argv[1], 'compression.type': 'snappy', 'linger.ms': 0})",
    // compressible: librdkafka sends a batch that snappy would not shrink uncompressed
    "p.produce(sys.argv[2], key=b'snappy.test', value=b'written by another client ' * 400, partition=0)",
    'left = p.flush(30)',
    'sys.exit(1 if left else 0)',
  ].join('\n');
  await run(python(), ['-c', script, brokers, topic], { timeout: 60_000 });
}

test(
  "/healthz turns 503, naming the crash, once kafkajs' consumer crashes on a real broker, and the engine fails rather than run tasks nobody feeds",
  { timeout: 240_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const applicationId = `health-${Date.now().toString(36)}`;
    // its own topics: the undecodable batch must reach no other test's consumers
    await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', applicationId]);
    const dir = tempDir('kafka-health');
    t.after(() => removeDir(dir));
    const topology = crawlTopology({
      config: validateCrawlConfig({}),
      partitions: 4,
      warcDir: join(dir, 'warc'),
      applicationId,
    });
    const engine = new KafkaEngine(topology, {
      brokers: [brokers],
      registryUrl: registry,
      dataDir: join(dir, 'data'),
      runs: roleFilter('parser'),
      sessionTimeoutMs: 6_000,
    });
    t.after(() => engine.stop().catch(() => undefined));
    const ops = await startOpsServer({ engine, port: 0, host: '127.0.0.1' });
    t.after(() => ops.close());
    const get = async (path: string) => {
      const res = await fetch(`http://${ops.address}${path}`);
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    await engine.start();
    const until = async (what: string, check: () => Promise<boolean>) => {
      const deadline = Date.now() + 120_000;
      while (Date.now() < deadline) {
        if (await check()) return;
        await sleep(200);
      }
      assert.fail(`never happened: ${what}`);
    };
    await until('every parser task running', async () => (await get('/readyz')).status === 200);
    const healthy = await get('/healthz');
    assert.equal(healthy.status, 200, JSON.stringify(healthy.body));

    await produceSnappy(brokers, topology.physicalTopic(TOPICS.fetched));
    let last = healthy;
    await until('/healthz 503', async () => (last = await get('/healthz')).status === 503);
    assert.equal(last.body['live'], false);
    assert.equal(last.body['state'], 'failed');
    assert.match(String(last.body['reason']), /^failed: the consumer of group \S+-parser crashed: .*snappy/i);
    await assert.rejects(engine.done, (err: Error & { code?: string }) => {
      assert.equal(err.code, 'CS_KAFKA');
      assert.match(err.message, /crashed/);
      return true;
    });
  },
);
