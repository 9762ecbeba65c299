import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from '../e2e/harness.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { kafkaInfra } from './infra.js';
import { injectArgs } from './page-records.js';

function cli(args: string[]): { status: number | null; signal: string | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

test(
  'topics create makes every topic with its partitions, compacted changelogs and the fetched size limit',
  { timeout: 180_000 },
  async () => {
    const { brokers } = kafkaInfra();
    const r = cli(['topics', 'create', '--brokers', brokers, '--partitions', '4']);
    assert.equal(r.status, 0, r.stderr);
    const port = new KafkaPort([brokers], 'crawlstream-test');
    const admin = await port.admin();
    try {
      const topics = new Set(await admin.listTopics());
      for (const t of [
        'links',
        'fetch-requests',
        'fetch-results',
        'fetched',
        'parsed-pages',
        'page-records',
        'control',
        'crawlstream-dead-letters',
      ])
        assert.ok(topics.has(t), `${t} missing`);
      // the default application's (other tests' applications share the broker)
      const changelogs = [...topics].filter((t) => t.startsWith('crawlstream-') && t.endsWith('-changelog'));
      assert.ok(
        changelogs.includes('crawlstream-frontier-hosts-changelog') &&
          changelogs.includes('crawlstream-parser-recorded-changelog'),
        changelogs.join(', '),
      );
      for (const t of changelogs) {
        const d = await admin.describeTopic(t, ['cleanup.policy']);
        assert.equal(d.config['cleanup.policy'], 'compact', t);
        assert.equal(d.partitions, 4, t);
      }
      const fetched = await admin.describeTopic('fetched', ['cleanup.policy', 'max.message.bytes']);
      assert.equal(fetched.config['cleanup.policy'], 'delete');
      assert.ok(
        Number(fetched.config['max.message.bytes']) > 10 * 1024 * 1024,
        `fetched max.message.bytes ${fetched.config['max.message.bytes']}`,
      );
      // page records are the crawl's product: kept until the operator says otherwise
      const kept = await admin.describeTopic('page-records', ['retention.ms']);
      assert.equal(kept.config['retention.ms'], '-1');
      // a second create is a no-op, not an error
      assert.equal(cli(['topics', 'create', '--brokers', brokers]).status, 0);
    } finally {
      await admin.close();
      await port.close();
    }
  },
);

test(
  'topics create on a single broker makes topics of one replica, says so, and leaves min.insync.replicas to the broker',
  { timeout: 120_000 },
  async () => {
    const { brokers } = kafkaInfra();
    const appId = `replication-${Date.now().toString(36)}`;
    const r = cli(['topics', 'create', '--brokers', brokers, '--app-id', appId, '--partitions', '4']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout.split('\n')[0]!, /^replication factor 1 \(the cluster has 1 broker, fewer than the 3 /);
    const port = new KafkaPort([brokers], 'crawlstream-test');
    const admin = await port.admin();
    try {
      // min.insync.replicas 2 on one replica would refuse every write
      const links = await admin.describeTopic(`${appId}.links`, ['min.insync.replicas']);
      assert.equal(links.config['min.insync.replicas'], '1');
      const refused = cli([
        'topics',
        'create',
        '--brokers',
        brokers,
        '--app-id',
        `${appId}-b`,
        '--replication-factor',
        '3',
      ]);
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /--replication-factor 3 exceeds the cluster's 1 broker/);
    } finally {
      await admin.close();
      await port.close();
    }
  },
);

test(
  'a partition count other than the topics have is refused with a clear error by topics create, inject and run',
  { timeout: 180_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    assert.equal(cli(['topics', 'create', '--brokers', brokers, '--partitions', '4']).status, 0);
    const created = cli(['topics', 'create', '--brokers', brokers, '--partitions', '8']);
    assert.notEqual(created.status, 0, 'topics create accepted topics of 4 partitions for --partitions 8');
    assert.match(created.stdout, /WRONG +links \(8 partitions; it has 4/);
    assert.match(created.stderr, /another partition count than --partitions asks.*\[CS_TOPOLOGY\]/s);

    const dir = mkdtempSync(join(tmpdir(), 'partitions-'));
    try {
      const seeds = join(dir, 'seeds.txt');
      writeFileSync(seeds, 'http://example.test/\n');
      const injected = cli([...injectArgs(seeds, brokers, registry), '--partitions', '8']);
      assert.equal(injected.signal, null, 'inject did not exit by itself');
      assert.notEqual(injected.status, 0, 'inject wrote to 4 partitions as if there were 8');
      assert.match(injected.stderr, /topic links has 4 partitions, --partitions says 8/);
      const ran = cli([
        'run',
        '--role',
        'frontier',
        '--data',
        join(dir, 'data'),
        '--brokers',
        brokers,
        '--registry',
        registry,
        '--partitions',
        '8',
        '--metrics-port',
        '0',
      ]);
      assert.equal(ran.signal, null, 'run did not exit by itself after refusing to start');
      assert.notEqual(ran.status, 0, 'run started on topics with another partition count');
      assert.match(ran.stderr, /partition counts differ from the topology's: links has 4, the topology needs 8/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'an [IPv6]:port seed broker works: topics create and a port reach the cluster through it',
  { timeout: 120_000 },
  async () => {
    const { brokers } = kafkaInfra();
    // an IPv4-mapped IPv6 literal: brackets and colons to the parser and kafkajs, 127.0.0.1 on the wire;
    // 4 partitions as the test above expects of every changelog on the cluster
    const [host, port] = brokers.split(',')[0]!.split(':');
    assert.equal(host, '127.0.0.1', `the test broker is on ${brokers}`);
    const v6 = `[::ffff:127.0.0.1]:${port}`;
    const appId = `ipv6-seed-${Date.now().toString(36)}`;
    const r = cli(['topics', 'create', '--brokers', v6, '--app-id', appId, '--partitions', '4']);
    assert.equal(r.status, 0, r.stderr);
    const kafkaPort = new KafkaPort([v6], 'crawlstream-test');
    const admin = await kafkaPort.admin();
    try {
      const topics = await admin.listTopics();
      assert.ok(topics.includes(`${appId}.links`), `${appId}.links missing`);
    } finally {
      await kafkaPort.close();
    }
  },
);
