import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { CLI } from '../e2e/harness.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { kafkaInfra } from './infra.js';

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
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
      const changelogs = [...topics].filter((t) => t.endsWith('-changelog'));
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
      // a second create is a no-op, not an error
      assert.equal(cli(['topics', 'create', '--brokers', brokers]).status, 0);
    } finally {
      await admin.close();
      await port.close();
    }
  },
);
