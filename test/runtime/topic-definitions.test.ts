import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { topicDefinitions } from '../../runtime/engines/kafka/topics.js';
import { crawlTopology } from '../../topology/crawl-topology.js';

const topology = () => crawlTopology({ config: validateCrawlConfig({}), partitions: 4, warcDir: tmpdir() });

test('page-records and control are kept forever by default; other topics age out as the broker says', () => {
  const defs = new Map(topicDefinitions(topology()).map((d) => [d.name, d]));
  assert.equal(defs.get('page-records')!.config['retention.ms'], '-1');
  assert.equal(defs.get('control')!.config['retention.ms'], '-1');
  assert.equal(defs.get('links')!.config['retention.ms'], undefined);
  assert.equal(defs.get('page-records')!.replicationFactor, undefined, 'the admin defaults to 1');
});

test('replication factor, min.insync.replicas and the kept topics retention apply as given, to every topic', () => {
  const defs = topicDefinitions(topology(), {
    replicationFactor: 3,
    minInsyncReplicas: 2,
    keptRetentionMs: 86_400_000,
  });
  for (const d of defs) {
    assert.equal(d.replicationFactor, 3, d.name);
    assert.equal(d.config['min.insync.replicas'], '2', d.name);
  }
  const records = defs.find((d) => d.name === 'page-records')!;
  assert.equal(records.config['retention.ms'], '86400000');
  assert.equal(records.config['cleanup.policy'], 'delete');
});
