import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateCrawlConfig } from '../processors/common/crawl-config.js';
import { HOSTS_STORE } from '../processors/frontier/frontier-stores.js';
import { EmbeddedChangelogSource } from '../runtime/engines/embedded/embedded-changelog-source.js';
import { EmbeddedLog } from '../runtime/engines/embedded/log-store.js';
import { rebuildStores } from '../runtime/replay/rebuild.js';
import { crawlTopology } from '../topology/crawl-topology.js';
import { figure, machineLine } from './machine.js';

// `replay rebuild` on the embedded engine: one frontier-hosts changelog partition of N records
// (a host name key, a host-state-sized value: ~200 B, what frontier-hosts holds per host without a
// large robots.txt), every key distinct, rebuilt into a fresh RocksDB and swapped in.
const N = Number(process.env['BENCH_RECORDS'] ?? 1_000_000);
const VALUE_BYTES = 200;
const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-rebuild-'));
console.log(machineLine());
try {
  const data = join(dir, 'data');
  const topology = crawlTopology({ config: validateCrawlConfig({}), partitions: 4, warcDir: join(data, 'warc') });
  const topic = topology.changelogTopic(HOSTS_STORE);
  const log = await EmbeddedLog.open(join(data, 'log'));
  log.ensureTopic(topic, 4);
  let bytes = 0;
  const filler = randomBytes(VALUE_BYTES);
  for (let i = 0; i < N; i += 10_000) {
    const records = [];
    for (let j = i; j < Math.min(i + 10_000, N); j++) {
      const key = Buffer.from(`host-${String(j).padStart(8, '0')}.example.test`);
      const value = Buffer.from(filler);
      value.writeUInt32BE(j, 0);
      bytes += key.length + value.length;
      records.push({ key, value, timestamp: Date.now() });
    }
    log.commit([{ topic, partition: 0, records }], []);
  }
  await log.close();
  console.log(
    `filled ${topic} partition 0 with ${N.toLocaleString('en-US')} records, ${(bytes / 2 ** 20).toFixed(0)} MiB`,
  );

  for (const run of ['no live copy (every store of the task)', 'over a live copy (frontier-hosts only)']) {
    const source = await EmbeddedChangelogSource.open(data);
    const t = performance.now();
    const results = await rebuildStores(source, topology, data, {
      stores: [HOSTS_STORE],
      partitions: { partition: 0 },
      out: (line) => console.log(`  ${line}`),
    });
    const s = (performance.now() - t) / 1000;
    await source.close();
    const read = results.find((r) => r.store === HOSTS_STORE)!.records;
    if (read !== N) throw new Error(`rebuilt ${read} records, expected ${N}`);
    figure(`rebuild, ${run}`, N / s, 'records/s');
    figure(`rebuild, ${run}`, bytes / 2 ** 20 / s, 'MiB/s');
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
