import { mkdtempSync, rmSync } from 'node:fs';
import { randomFillSync } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BloomFilter, bloomSizing } from '../state/bloom-filter.js';
import { openRocks } from '../state/rocks.js';
import { RocksKeyValueStore } from '../state/rocks-store.js';
import { bufferSerde } from '../core/serde.js';
import { SeenSet } from '../state/seen-set.js';
import { figure, machineLine } from './machine.js';

// The seen-set of one partition: Bloom in RAM (1 %), exact fingerprints in RocksDB, batches of
// 1,000 as the frontier admits a page's links. Preloaded with N fingerprints, then:
//  - all-new batches: every check answered by the Bloom ("definitely new"), plus the pending put;
//  - the brief's mix, 3 of 4 links already seen: those need the batched RocksDB confirmation.
const N = 1_000_000;
const BATCH = 1_000;
const P = 0.01;

function fingerprints(count: number): Buffer[] {
  const all = randomFillSync(Buffer.allocUnsafe(count * 8));
  return Array.from({ length: count }, (_, i) => all.subarray(i * 8, i * 8 + 8));
}

function timed(fn: () => void): number {
  const t = performance.now();
  fn();
  return (performance.now() - t) / 1000;
}

console.log(machineLine());
const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-seen-'));
try {
  // Bloom alone, at its design load
  const sizing = bloomSizing(N, P);
  const bloom = new BloomFilter(sizing);
  const loaded = fingerprints(N);
  for (const fp of loaded) bloom.add(fp);
  const probes = fingerprints(N);
  let hits = 0;
  const bloomSeconds = timed(() => {
    for (const fp of probes) if (bloom.mightContain(fp)) hits++;
  });
  figure('Bloom mightContain (k = 7, 1 % at design load)', N / bloomSeconds, 'checks/s');
  figure('Bloom measured false-positive rate at design load', (hits / N) * 100, '%');
  figure('Bloom RAM per URL at 1 %', bloom.byteLength / N, 'bytes/URL');

  const db = await openRocks(join(dir, 'db'));
  const store = new RocksKeyValueStore<Buffer, Buffer>('frontier-seen', db, bufferSerde, bufferSerde);
  const seen = new SeenSet(store, { expectedCount: 2 * N, falsePositiveRate: P });
  seen.init();
  let offset = 0;
  let commitSeconds = 0;
  const commit = () => (commitSeconds += timed(() => store.applyCommitted(++offset)));
  const loadSeconds = timed(() => {
    for (let i = 0; i < N; i += BATCH) {
      seen.admit(loaded.slice(i, i + BATCH));
      if ((i / BATCH) % 10 === 9) commit();
    }
  });
  commit();
  figure(
    'SeenSet.admit, all new (RocksDB pending puts, commit excluded)',
    N / (loadSeconds - commitSeconds),
    'checks/s',
  );
  figure('RocksDB commit of admitted fingerprints', N / commitSeconds, 'fingerprints/s');

  const fresh = fingerprints(N);
  const checkSeconds = timed(() => {
    for (let i = 0; i < N; i += BATCH) seen.has(fresh.slice(i, i + BATCH));
  });
  figure('SeenSet.has, batches of 1,000 new URLs (check only, Bloom answers)', N / checkSeconds, 'checks/s');
  const seenSeconds = timed(() => {
    for (let i = 0; i < N / 4; i += BATCH) seen.has(loaded.slice(i, i + BATCH));
  });
  figure('SeenSet.has, batches of 1,000 seen URLs (RocksDB getMany confirms)', N / 4 / seenSeconds, 'checks/s');
  const freshSeconds = timed(() => {
    for (let i = 0; i < N; i += BATCH) seen.admit(fresh.slice(i, i + BATCH));
  });
  figure('SeenSet.admit batches of 1,000 new URLs', N / freshSeconds, 'checks/s');
  store.applyCommitted(++offset);

  // 3 of 4 already seen (the brief: ~40 links a page, ~10 new)
  const newer = fingerprints(N / 4);
  const mixed: Buffer[] = [];
  for (let i = 0; i < N / 4; i++)
    mixed.push(newer[i]!, loaded[(i * 7919) % N]!, loaded[(i * 104729) % N]!, fresh[(i * 15485863) % N]!);
  const checksBefore = seen.stats().storeChecks;
  const mixedSeconds = timed(() => {
    for (let i = 0; i < mixed.length; i += BATCH) seen.admit(mixed.slice(i, i + BATCH));
  });
  figure('SeenSet.admit, 75 % seen (batched RocksDB getMany confirms)', mixed.length / mixedSeconds, 'checks/s');
  figure(
    'exact-layer lookups per check in that mix',
    (seen.stats().storeChecks - checksBefore) / mixed.length,
    'reads/check',
  );
  const stats = seen.stats();
  figure('seen-set RAM per URL (Bloom sized for 2x the count)', stats.bloomBytes / stats.count, 'bytes/URL');
  figure("  plus the exact layer's unmerged fingerprints in RAM", stats.exact.ramBytes / stats.count, 'bytes/URL');
  figure('  unmerged now', stats.exact.unmerged, 'fingerprints');
  figure('  plus blocks cached (bounded, 128 MiB by default)', stats.exact.blockCacheBytes / 2 ** 20, 'MiB');
  figure(
    '  block lookups answered by the cache',
    (100 * stats.exact.blockCacheHits) / Math.max(1, stats.exact.blockCacheHits + stats.exact.blockCacheMisses),
    '%',
  );
  figure('Bloom fill after 2.25 M', stats.fill * 100, '%');
  figure('Bloom estimated false-positive rate now', stats.estimatedFalsePositiveRate * 100, '%');
  store.applyCommitted(++offset);
  await db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
