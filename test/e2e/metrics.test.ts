import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { parseExposition, sampleSum } from '../python/prometheus.js';
import { crawlArgs, removeDir, startCli, tempDir, writeSeeds } from './harness.js';

const BUDGET = 256 * 2 ** 20;

test(
  'during an embedded crawl /metrics parses with prometheus_client and its fetch count equals the requests the web server saw',
  { timeout: 180_000 },
  async () => {
    const web = await SyntheticWeb.start();
    const dir = tempDir('metrics');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const { child, exited } = startCli(
        crawlArgs(seeds, join(dir, 'data'), [
          '--metrics-port',
          '0',
          '--log-format',
          'json',
          // less than the frontier partitions' block caches ask (128 MiB each): they share what is left
          '--memory-budget',
          String(BUDGET),
        ]),
      );
      let address: string | undefined;
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => {
        stderr += d.toString();
        address ??= /"address":"([^"]+)"/.exec(stderr)?.[1];
      });
      let done = false;
      void exited.then(() => (done = true));
      // scrape until the crawl exits: the last scrape kept is one taken while the engine still ran
      // (ready after it), idle after its last fetch; once it stops, its tasks' memory claims are released
      let last: string | undefined;
      let readySeen = false;
      while (!done) {
        if (address !== undefined) {
          try {
            const res = await fetch(`http://${address}/metrics`);
            const text = res.status === 200 ? await res.text() : undefined;
            const ready = await fetch(`http://${address}/readyz`);
            readySeen ||= ready.status === 200;
            if (text !== undefined && ready.status === 200) last = text;
          } catch {
            // the crawl closed its endpoints between two scrapes
          }
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      const run = await exited;
      assert.equal(run.code, 0, run.stderr);
      assert.ok(address, `no endpoint address in the crawl's log:\n${stderr}`);
      assert.ok(readySeen, '/readyz never answered 200 during the crawl');
      assert.ok(last, 'no scrape succeeded');
      for (const line of stderr.trim().split('\n')) JSON.parse(line); // --log-format json: every line an object

      const families = parseExposition(last);
      const requests = web.requests();
      const robots = requests.filter((r) => r.path === '/robots.txt').length;
      assert.ok(requests.length > 20, `${requests.length} requests`);
      assert.equal(sampleSum(families, 'crawlstream_fetches_total'), requests.length, 'fetches vs server requests');
      const byKind = families.find((f) => f.name === 'crawlstream_fetches')!.samples;
      assert.equal(byKind.find((s) => s.labels['kind'] === 'ROBOTS')?.value, robots, 'robots.txt fetches');
      assert.ok(sampleSum(families, 'crawlstream_page_records_total') > 0);
      assert.ok(sampleSum(families, 'crawlstream_records_processed_total') > 0);

      // the memory plan: every frontier partition's filter and chains claimed, the caches within the rest
      const plan = Object.fromEntries(
        families
          .find((f) => f.name === 'crawlstream_memory_budget_bytes')!
          .samples.map((s) => [s.labels['part'], s.value]),
      );
      assert.equal(plan['total'], BUDGET);
      assert.equal(plan['reserve'], BUDGET / 4);
      assert.ok(plan['claimed']! > 0, `claimed ${plan['claimed']}`);
      assert.equal(plan['over'], 0);
      const partitions = plan['wanted']! / (128 * 2 ** 20);
      assert.ok(
        Number.isInteger(partitions) && partitions >= 2,
        `${partitions} frontier partitions asked 128 MiB each`,
      );
      assert.equal(plan['granted'], Math.floor(BUDGET - BUDGET / 4 - plan['claimed']!), 'the caches share the rest');
      const blocks = families
        .find((f) => f.name === 'crawlstream_cache_bytes')!
        .samples.find((s) => s.labels['cache'] === 'seen-blocks')!.value!;
      assert.ok(blocks <= plan['granted']!, `seen-block caches hold ${blocks} bytes of ${plan['granted']} granted`);
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
