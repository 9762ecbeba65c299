import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { CLI, flatSite, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';
import { crawlerAddressArgs } from '../../synthetic-web/addresses.js';
import { kafkaInfra } from './infra.js';
import { LOOPBACK_WEB_ARGS, pageRecordsOf, runArgs } from './page-records.js';

const run = promisify(execFile);

const BIG = 5 * 1024 * 1024;

/** A site whose home links to a page and to a 5 MiB binary served slowly, without a telling suffix. */
function typedSite(host: string): SiteSpec {
  return {
    host,
    seed: true,
    pages: { '/': { title: 'Typed', links: ['/download/big', '/a.html'] }, '/a.html': { title: 'A', links: [] } },
    // 8 KiB chunks 20 ms apart: the log counts only what the socket took
    respond: (req) =>
      req.pathname === '/download/big'
        ? {
            status: 200,
            headers: { 'content-type': 'application/octet-stream' },
            body: Buffer.alloc(BIG, 7),
            pace: { chunkBytes: 8 * 1024, gapMs: 20 },
          }
        : undefined,
  };
}

const toHost = (log: readonly RequestLogEntry[], host: string) =>
  log.filter((e) => e.host === host).sort((a, b) => a.start - b.start);
const gaps = (reqs: readonly RequestLogEntry[]) => reqs.slice(1).map((e, i) => e.start - reqs[i]!.end);
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

test(
  "on Kafka, a per-site min-delay from the config file shows in that site's gaps and nowhere else, and a refused type's body is not read",
  { timeout: 420_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const appId = `sites-${randomUUID().slice(0, 8)}`;
    // brisk.test on an address of its own, so its gaps are its own setting's: sites on one address
    // share its per-IP limit (with the time slots of before 2026-12-06, brisk.test got only those
    // gentle.test left it: control-set.test failed so)
    const sites = [
      flatSite('gentle.test', 6),
      flatSite('brisk.test', 6, { address: '127.0.0.13' }),
      typedSite('typed.test'),
    ];
    const web = await SyntheticWeb.start({ sites });
    const dir = tempDir('kafka-sites');
    const config = join(dir, 'crawl.yaml');
    writeFileSync(config, 'sites:\n  gentle.test:\n    min-delay: 2500\n');
    const kafka = ['--brokers', brokers, '--registry', registry, '--app-id', appId];
    let instance: ReturnType<typeof startCli> | undefined;
    let stderr = '';
    try {
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', appId]);
      await run(process.execPath, [CLI, 'inject', '--seeds', writeSeeds(dir, web.seedUrls()), ...kafka]);
      instance = startCli(
        runArgs(
          'all',
          join(dir, 'all'),
          brokers,
          registry,
          [...LOOPBACK_WEB_ARGS, ...crawlerAddressArgs(sites), '--quiet', '--config', config],
          appId,
        ),
      );
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const pages = (host: string) => toHost(web.requests(), host).filter((e) => e.path !== '/robots.txt').length;
      const until = Date.now() + 300_000;
      // robots.txt, home and six pages of each flat site; the typed site's home, page and binary
      while (pages('gentle.test') < 7 || pages('brisk.test') < 7 || pages('typed.test') < 3) {
        assert.ok(Date.now() < until && instance.child.exitCode === null, `crawl unfinished:\n${stderr.slice(-4000)}`);
        await sleep(500);
      }
      // the refused URL's page record is written after its fetch result reaches the parser
      const topic = `${appId}.page-records`;
      let refused = (await pageRecordsOf(brokers, registry, topic)).filter((r) => r.url.endsWith('/download/big'));
      while (refused.length === 0 && Date.now() < until) {
        await sleep(1_000);
        refused = (await pageRecordsOf(brokers, registry, topic)).filter((r) => r.url.endsWith('/download/big'));
      }
      instance.child.kill('SIGTERM');
      assert.equal((await instance.exited).code, 0, stderr.slice(-4000));

      const log = web.requests();
      const gentle = gaps(toHost(log, 'gentle.test'));
      const brisk = gaps(toHost(log, 'brisk.test'));
      t.diagnostic(`gentle.test gaps ${gentle.map(Math.round).join(', ')}`);
      t.diagnostic(`brisk.test gaps ${brisk.map(Math.round).join(', ')}`);
      assert.ok(gentle.length >= 7, 'too few requests to gentle.test to judge');
      assert.ok(
        gentle.every((g) => g >= 2_500),
        'a request to gentle.test came less than 2.5 s after the one before',
      );
      // paced by the override, every gap would be 2.5 s or more
      assert.ok(median(brisk) < 2_500, 'brisk.test was paced by gentle.test’s override');

      const big = log.filter((e) => e.host === 'typed.test' && e.path === '/download/big');
      assert.equal(big.length, 1, 'the binary was requested once, not retried');
      t.diagnostic(`server wrote ${big[0]!.bytes} of ${BIG} body bytes of /download/big`);
      assert.ok(big[0]!.bytes <= 64 * 1024, `the server wrote ${big[0]!.bytes} bytes of the refused body`);
      assert.equal(refused.length, 1, 'one page record for the refused URL');
      assert.equal(refused[0]!.errorCode, 'CS_REFUSED_TYPE');
      assert.equal(refused[0]!.warcFile, null, 'the refused response was archived');

      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
    } finally {
      instance?.child.kill('SIGKILL');
      await web.close();
      removeDir(dir);
    }
  },
);
