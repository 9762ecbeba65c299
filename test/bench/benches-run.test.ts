import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

/**
 * The benches that drive a task through the topology test driver run to their last figure on a
 * small input. Their figures are not judged here (they go in docs/BENCHMARKS.md); a bench that
 * crashes half-way is: bench/frontier once stopped after its admit phase (a task-directory path
 * it built by hand), and nobody saw the missing figures for a session.
 */
const run = promisify(execFile);
const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const cases: { bench: string; args: string[]; env?: Record<string, string>; last: RegExp }[] = [
  { bench: 'frontier.js', args: ['20000', '200'], last: /^task opened again over /m },
  {
    bench: 'frontier.js',
    args: ['20000', '200'],
    env: { FRONTIER_BENCH_SEEN_MILLIONS: '0.3' },
    last: /^task opened again over /m,
  },
  { bench: 'recrawl.js', args: [], env: { RECRAWL_BENCH_URLS: '5000' }, last: /\S/ },
  { bench: 'fetcher.js', args: [], env: { BENCH_HOSTS: '20', BENCH_FETCHES: '200', BENCH_PAGE_KB: '4' }, last: /\S/ },
  {
    bench: 'crawl.js',
    args: [],
    env: { CRAWL_BENCH_MODE: 'real', CRAWL_BENCH_CRAWLERS: 'naive', CRAWL_BENCH_SITES: '20' },
    last: /^naive politeness violations: /m,
  },
];

for (const c of cases) {
  test(
    `bench/${c.bench}${
      c.env
        ? ` (${Object.entries(c.env)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ')})`
        : ''
    } runs to its last figure on a small input`,
    { timeout: 120_000 },
    async (t) => {
      const { stdout } = await run(process.execPath, ['--expose-gc', join(dist, 'bench', c.bench), ...c.args], {
        env: { ...process.env, ...c.env },
        maxBuffer: 16 * 2 ** 20,
      });
      const lines = stdout.trim().split('\n');
      t.diagnostic(`${lines.length} lines; last: ${lines[lines.length - 1]}`);
      assert.match(stdout, c.last);
      assert.ok(lines.length >= 3, stdout);
    },
  );
}

test(
  'bench/seen-open.js: a seen-set loaded straight into its store answers as one admitted: the stored are seen, the rest new',
  { timeout: 120_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'crawlstream-seen-load-'));
    try {
      const bench = join(dist, 'bench', 'seen-open.js');
      const loaded = await run(process.execPath, [bench, 'load', join(dir, 's'), '0.3', '0.1']);
      assert.match(loaded.stdout, /^loaded 300,000 fingerprints \(100,000 in 5 runs\)/m);
      const { stdout } = await run(process.execPath, [bench, 'open', join(dir, 's')], {
        env: { ...process.env, SEEN_OPEN_SWEEP: '1' },
      });
      t.diagnostic(
        stdout
          .split('\n')
          .filter((l) => /answered|sweep span/.test(l))
          .join(' | '),
      );
      // 3 of 4 fingerprints of each batch were loaded (blocks and runs): exactly those are "seen"
      assert.match(stdout, /answered "seen": 75\.00 %/);
      assert.match(stdout, /^ {2}then admit 1,000,000, 75 % seen, process CPU: /m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
