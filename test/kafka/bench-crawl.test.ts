import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { kafkaInfra } from './infra.js';

/**
 * bench/crawl.js on Kafka with one process a role (#37: "all roles in one process and one process
 * per role") runs to its last figure on a small web: every role's process measured, 99 % of the
 * pages reached, and the judge's verdict printed. Its figures go in docs/BENCHMARKS.md, not here.
 */
const run = promisify(execFile);
const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test(
  'bench/crawl.js (CRAWL_BENCH_KAFKA_ROLES=split) crawls a small real-pages web with a process a role on a real broker',
  { timeout: 240_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const { stdout } = await run(process.execPath, [join(dist, 'bench', 'crawl.js')], {
      env: {
        ...process.env,
        CRAWL_BENCH_MODE: 'real',
        CRAWL_BENCH_CRAWLERS: 'crawlstream',
        CRAWL_BENCH_SITES: '8',
        CRAWL_BENCH_SECONDS: '180',
        CRAWL_BENCH_BROKERS: brokers,
        CRAWL_BENCH_REGISTRY: registry,
        CRAWL_BENCH_KAFKA_ROLES: 'split',
        // its own topics: the default ones belong to the other Kafka tests
        CRAWL_BENCH_APP_ID: `bench-split-${Date.now().toString(36)}`,
      },
      maxBuffer: 16 * 2 ** 20,
    });
    t.diagnostic(
      stdout
        .split('\n')
        .filter((l) => /pages\/s|peak RSS|violations|thread/.test(l))
        .join(' | '),
    );
    for (const role of ['frontier', 'fetcher', 'parser'])
      assert.match(stdout, new RegExp(`^crawler: crawlstream run --role ${role} `, 'm'));
    assert.doesNotMatch(stdout, /NOT reached/);
    assert.match(stdout, /^crawlstream time to 99 % of pages: /m);
    assert.match(stdout, /^crawlstream peak RSS by process: frontier \d+ MiB, fetcher \d+ MiB, parser \d+ MiB$/m);
    // each process's main thread, by role
    for (const role of ['frontier', 'fetcher', 'parser'])
      assert.match(stdout, new RegExp(`^crawlstream thread ${role} main: `, 'm'));
    assert.match(stdout, /^crawlstream politeness violations: 0 in the server log of \d+ requests$/m);
  },
);
