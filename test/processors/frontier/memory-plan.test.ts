import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { createLogger } from '../../../core/logger.js';
import { M } from '../../../core/metric-catalogue.js';
import { FrontierHarness } from './frontier-harness.js';

const MiB = 2 ** 20;

test('a frontier whose seen-set alone passes --memory-budget says so once, naming the claims, and its cache gets nothing', async () => {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'warn', format: 'json', write: (l) => lines.push(JSON.parse(l)) });
  // a filter for 10 M URLs (~14 MiB) in a budget of 8 MiB
  const config = validateCrawlConfig({ seenExpectedUrls: 10_000_000, memoryBudgetBytes: 8 * MiB });
  const h = await FrontierHarness.open(config, undefined, logger);
  try {
    await h.advance(1_000, 100);
    const warned = lines.filter((l) => /memory budget 8 MiB is passed by/.test(String(l['msg'])));
    assert.equal(warned.length, 1, JSON.stringify(lines));
    assert.match(String(warned[0]!['msg']), /fixed parts \(seen-bloom 14 MiB/);
    const plan = Object.fromEntries(h.task.metrics.gaugesOf(M.memoryBudgetBytes));
    assert.equal(plan['total'], 8 * MiB);
    assert.equal(plan['granted'], 0);
    assert.ok(plan['over']! > 0, `over by ${plan['over']}`);
  } finally {
    await h.close();
  }
});
