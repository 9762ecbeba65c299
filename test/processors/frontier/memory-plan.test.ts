import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { createLogger } from '../../../core/logger.js';
import { M } from '../../../core/metric-catalogue.js';
import { PROCESS_MEMORY_KEY } from '../../../runtime/process-memory.js';
import { TopologyTestDriver } from '../../../runtime/testing/topology-test-driver.js';
import type { MemoryBudget } from '../../../state/memory-budget.js';
import { crawlTopology, TOPICS } from '../../../topology/crawl-topology.js';
import { FrontierHarness } from './frontier-harness.js';

const MiB = 2 ** 20;

test('a frontier whose seen-set passes --memory-budget says so once, naming the claims (its RocksDB first), and its cache gets nothing', async () => {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'warn', format: 'json', write: (l) => lines.push(JSON.parse(l)) });
  // a filter for 10 M URLs (~14 MiB) beside the task's RocksDB (~1 MiB, empty) in a budget of 16 MiB (4 kept)
  const config = validateCrawlConfig({ seenExpectedUrls: 10_000_000, memoryBudgetBytes: 16 * MiB });
  const h = await FrontierHarness.open(config, undefined, logger);
  try {
    await h.advance(1_000, 100);
    const warned = lines.filter((l) => /memory budget 16 MiB is passed by/.test(String(l['msg'])));
    assert.equal(warned.length, 1, JSON.stringify(lines));
    assert.match(String(warned[0]!['msg']), /fixed parts \(rocksdb \d+ MiB, seen-bloom 14 MiB/);
    const plan = Object.fromEntries(h.task.metrics.gaugesOf(M.memoryBudgetBytes));
    assert.equal(plan['total'], 16 * MiB);
    assert.equal(plan['granted'], 0);
    assert.ok(plan['over']! > 0, `over by ${plan['over']}`);
  } finally {
    await h.close();
  }
});

test("two frontier tasks of one process plan in one budget: each opened RocksDB is claimed, the seen-sets' caches share what is left, and a closed task gives its part back", async () => {
  // 4 partitions; tasks 0 and 1 in one process (one in-process map, as an engine gives its tasks)
  // a budget where one cache of 64 MiB fits and two do not
  const config = validateCrawlConfig({
    seenExpectedUrls: 100_000,
    seenBlockCacheBytes: 64 * MiB,
    memoryBudgetBytes: 160 * MiB,
  });
  const topology = crawlTopology({ config, partitions: 4, warcDir: join(tmpdir(), 'crawlstream-no-warc') });
  const inProcess = new Map<string, unknown>();
  const open = (partition: number) =>
    TopologyTestDriver.open({ topology, sourceTopic: TOPICS.links, partition, inProcess });
  const first = await open(0);
  const plan = inProcess.get(PROCESS_MEMORY_KEY) as MemoryBudget;
  const claimed = (what: string) => plan.report().claims.find((c) => c.what === what)?.bytes ?? 0;
  const granted = () => plan.report().granted.reduce((n, g) => n + g.bytes, 0);
  try {
    const one = claimed('rocksdb');
    assert.ok(one > 0 && one % MiB === 0, `rocksdb claimed ${one}: what it holds, in whole MiB`);
    const alone = granted();
    assert.equal(alone, 64 * MiB, 'one task: its cache gets all it asks (160 − 40 kept − its RocksDB and filter ≥ 64)');
    const second = await open(1);
    let two = 0;
    try {
      two = claimed('rocksdb');
      assert.ok(two > one, `rocksdb claimed ${two} for two databases, ${one} for one`);
      const both = granted();
      const left = 160 * MiB - plan.reserve - plan.report().claimed;
      assert.ok(both <= left && both >= left - 2, `two caches granted ${both}, the plan leaves ${left}`);
      assert.ok(both < 2 * 64 * MiB, 'two caches of 64 MiB do not fit: each gets a share');
    } finally {
      await second.close();
    }
    assert.ok(claimed('rocksdb') < two, 'the closed task gave its RocksDB back');
    assert.equal(granted(), alone, "the closed task's cache left, the other's grew back");
  } finally {
    await first.close();
  }
  assert.equal(plan.report().claimed, 0, 'nothing claimed once every task closed');
});
