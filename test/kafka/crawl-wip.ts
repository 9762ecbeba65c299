// NOT YET PASSING (see the issue-6 report): run by hand after topics.test.ts on a fresh broker.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SyntheticWeb } from '../web/synthetic-web.js';
import { checkPoliteness, formatPolitenessReport } from '../web/politeness.js';
import { CLI, finallyFetchedUrls, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { kafkaInfra } from './infra.js';

const READER = fileURLToPath(new URL('../../../test/kafka/read_page_records.py', import.meta.url));

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// The tests of this file share one broker and run in order: topics first, then the crawl on them.

test('run --role all crawls the test web on Kafka politely; page-records holds every fetched page exactly once, readable by confluent-kafka + fastavro', { timeout: 420_000 }, async (t) => {
  const { brokers, registry } = kafkaInfra();
  const web = await SyntheticWeb.start();
  const dir = tempDir('kafka-crawl');
  try {
    const seeds = writeSeeds(dir, web.seedUrls());
    const injected = cli(['inject', '--seeds', seeds, '--brokers', brokers, '--registry', registry]);
    assert.equal(injected.status, 0, injected.stderr);
    const started = Date.now();
    const run = startCli(['run', '--role', 'all', '--brokers', brokers, '--registry', registry, '--data', join(dir, 'data'),
      '--resolve', '*.test=127.0.0.1', '--allow-ip', '127.0.0.1/32', '--no-system-dns', '--quiet', '--session-timeout', '6000']);
    // done when the web has seen no request for 20 s (the slowest politeness wait of the test web is 2 s)
    let last = -1;
    let quietSince = Date.now();
    while (Date.now() - quietSince < 20_000 && Date.now() - started < 300_000) {
      await sleep(1000);
      const n = web.requests().length;
      if (n !== last) [last, quietSince] = [n, Date.now()];
    }
    run.child.kill('SIGTERM');
    const ended = await run.exited;
    t.diagnostic(`crawl on Kafka took ${Date.now() - started} ms; ${web.requests().length} requests`);
    assert.equal(ended.code, 0, `run exited ${ended.code}/${ended.signal}\n${ended.stderr.slice(-4000)}`);
    assert.match(ended.stdout, /\[status\] stopped \(signal SIGTERM\)/);

    const log = web.requests();
    const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream' });
    assert.deepEqual(report.violations, [], formatPolitenessReport(report));

    const read = spawnSync('python3', [READER, brokers, registry, 'page-records'], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(read.status, 0, read.stderr);
    const records = read.stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as { url: string; status: number; schemaId: number });
    const counts = new Map<string, number>();
    for (const r of records) counts.set(r.url, (counts.get(r.url) ?? 0) + 1);
    assert.deepEqual([...counts].filter(([, n]) => n !== 1), [], 'a URL has more than one committed page record');
    assert.deepEqual(new Set(counts.keys()), finallyFetchedUrls(log, web.port), 'fetched pages and committed page records differ');
    assert.ok(counts.size >= 50, `only ${counts.size} pages recorded`);
  } finally {
    await web.close();
    removeDir(dir);
  }
});
