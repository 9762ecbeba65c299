import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { seedBatches } from '../../cli/crawl.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { buildSerdes } from '../../runtime/serdes.js';
import { MemoryRegistry } from '../../schemas/memory-registry.js';
import { crawlTopology, SEED_BATCH_LINKS, TOPICS } from '../../topology/crawl-topology.js';

test('seeds of one site are split into batches that fit the links topic, in order, none lost', async () => {
  const seeds = Array.from({ length: 2_500 }, (_, i) => `https://www.big.example/${'x'.repeat(1_900)}/${i}`);
  seeds.push('https://small.example/', 'not a url');
  const warnings: string[] = [];
  const batches = seedBatches(seeds, 0, (l) => warnings.push(l));
  assert.deepEqual(
    batches.map((b) => [b.site, b.links.length]),
    [
      ['big.example', SEED_BATCH_LINKS],
      ['big.example', SEED_BATCH_LINKS],
      ['big.example', 500],
      ['small.example', 1],
    ],
  );
  assert.deepEqual(
    batches.filter((b) => b.site === 'big.example').flatMap((b) => b.links.map((l) => l.url)),
    seeds.slice(0, 2_500),
  );
  assert.equal(warnings.length, 1);

  const config = validateCrawlConfig({});
  const topology = crawlTopology({ config, partitions: 4, warcDir: tmpdir() });
  const serdes = await buildSerdes(topology, new MemoryRegistry());
  const limit = topology.topic(TOPICS.links).maxMessageBytes!;
  for (const b of batches)
    assert.ok(
      serdes.value(TOPICS.links).serialize(b).length < limit,
      `a batch of ${b.links.length} links exceeds max.message.bytes ${limit}`,
    );
});
