import type { CrawlConfig } from '../processors/common/crawl-config.js';
import { PARSER_LOOKAHEAD } from '../processors/parser/parser-processor.js';
import { bloomSizing } from '../state/bloom-filter.js';
import { DEFAULT_ROCKS_MEMORY } from '../state/rocks.js';

// The memory sizing rule of deploy/{frontier,parser,fetcher}.yaml (deploy/README.md, Sizing), shared
// by bench/role-rss.ts, which measures, and test/deploy/manifests.test.ts, which checks that the
// manifests' requests and limits follow it from their own arguments.

export type SizedRole = 'frontier' | 'parser' | 'fetcher';

export const MiB = 2 ** 20;

/** Requests and limits are this much above the figure they come from. */
export const HEADROOM = 1.25;

/**
 * Peak RSS of one process per role holding twice a pod's partitions (4 of 4, where a pod normally
 * holds 2), measured by bench/role-rss.ts on the Kafka engine with the manifests' arguments;
 * docs/BENCHMARKS.md, "Role memory at twice the tasks".
 */
export const MEASURED_PEAK_MIB: Readonly<Record<SizedRole, number>> = { frontier: 346, parser: 430, fetcher: 355 };

/**
 * Frontier RSS per URL a partition holds (queues, site and host states, leases, seen-set chains):
 * bench/frontier.ts's largest "RSS after dispatch", 1,114 MiB for one task holding 10 M URLs of
 * 100 k hosts (docs/BENCHMARKS.md, after issue 14), over those 10 M. It includes that run's
 * Bloom filter, block cache and the process itself, so it overstates a little.
 */
export const FRONTIER_BYTES_PER_URL = Math.ceil((1_114 * MiB) / 10_000_000);

/**
 * A task's RocksDB at its bounds (state/rocks.ts, DEFAULT_ROCKS_MEMORY): memtables of a quarter of
 * the memtable budget, up to six of them while flushes are behind (1.5 × the budget), and the
 * block cache. Until those bounds were set (issue #38) this was RocksDB's default of two 64 MiB
 * memtables and the binding's 8 MiB cache, 136 MiB a task, which the manifests' limits still allow.
 */
export const TASK_ROCKSDB_BYTES = 1.5 * DEFAULT_ROCKS_MEMORY.memtableBytes + DEFAULT_ROCKS_MEMORY.blockCacheBytes;

/** One part of a role's memory that its settings bound and a short crawl does not fill. */
export interface ConfiguredTerm {
  readonly what: string;
  readonly bytes: number;
}

/**
 * What a role holding `partitions` partitions may take beyond a short crawl's RSS, from its
 * settings: caches that fill only as the crawl grows and buffers that are full only when every
 * page in flight is as large as allowed.
 */
export function configuredTerms(role: SizedRole, config: CrawlConfig, partitions: number): ConfiguredTerm[] {
  if (role === 'frontier') {
    // the first segments, at half the target rate (state/scalable-bloom.ts)
    const bloom = bloomSizing(config.seenExpectedUrls, config.seenFalsePositiveRate / 2).bits / 8;
    return [
      {
        what: `${partitions} seen-set Bloom filters (--seen-expected-urls, --seen-fp-rate)`,
        bytes: partitions * bloom,
      },
      {
        what: `${partitions} fingerprint-block caches (--seen-block-cache)`,
        bytes: partitions * config.seenBlockCacheBytes,
      },
      {
        what: `queues and states of --seen-expected-urls URLs in each of ${partitions} partitions, ${FRONTIER_BYTES_PER_URL} B a URL`,
        bytes: partitions * config.seenExpectedUrls * FRONTIER_BYTES_PER_URL,
      },
      {
        what: `${partitions} task RocksDBs: memtables up to 1.5 × their budget and a block cache each`,
        bytes: partitions * TASK_ROCKSDB_BYTES,
      },
    ];
  }
  if (role === 'fetcher') {
    return [
      {
        what: `bodies in flight: ${partitions} tasks × --fetch-concurrency × --max-body`,
        bytes: partitions * config.fetchConcurrency * config.maxBodyBytes,
      },
    ];
  }
  const lookahead = config.threads > 1 ? PARSER_LOOKAHEAD : 1;
  return [
    {
      what: `fetched pages awaiting their parse: ${partitions} tasks × ${lookahead} × --max-body`,
      bytes: partitions * lookahead * config.maxBodyBytes,
    },
    {
      what: `decoded pages being parsed: ${Math.max(1, config.threads - 1)} parse threads × --max-decoded`,
      bytes: Math.max(1, config.threads - 1) * config.maxDecodedBytes,
    },
    {
      what: `${partitions} task RocksDBs: memtables up to 1.5 × their budget and a block cache each`,
      bytes: partitions * TASK_ROCKSDB_BYTES,
    },
  ];
}

const roundUp = (bytes: number, step: number) => Math.ceil(bytes / step) * step;

/**
 * The rule: the request covers the measured peak at twice the tasks (so a survivor of a failover
 * is still within what the scheduler reserved), the limit that peak plus every configured term at
 * its bound, each with HEADROOM, rounded up to 128 MiB (request) and 256 MiB (limit).
 */
export function sizing(
  measuredPeakBytes: number,
  terms: readonly ConfiguredTerm[],
): { request: number; limit: number } {
  const worst = measuredPeakBytes + terms.reduce((sum, t) => sum + t.bytes, 0);
  return { request: roundUp(measuredPeakBytes * HEADROOM, 128 * MiB), limit: roundUp(worst * HEADROOM, 256 * MiB) };
}

/** Kubernetes' binary quantities as bytes (`1536Mi`, `2Gi`). */
export function quantityBytes(q: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(q);
  if (!m) throw new Error(`not a memory quantity in Ki/Mi/Gi: ${q}`);
  return Number(m[1]) * { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 }[m[2] ?? '']!;
}
