import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { seededRandom } from '../../synthetic-web/seeded-random.js';
import {
  countByUrl,
  crawlArgs,
  exportPageRecords,
  finallyFetchedUrls,
  removeDir,
  sleep,
  startCli,
  tempDir,
  writeSeeds,
} from './harness.js';
import {
  freshBucket,
  listKeys,
  readBack,
  s3Endpoint,
  startOwnServer,
  stopOwnServer,
  warcStoreArgs,
} from '../s3/s3-server.js';

const KILLS = 3;
const SEED = Number(process.env['CRAWLSTREAM_TEST_SEED'] ?? 20_261_202);
const PREFIX = 'crawls/e2e';

/** Files left in the crawl's WARC directory (none once everything is uploaded). */
function localWarcFiles(data: string): string[] {
  const dir = join(data, 'warc');
  return existsSync(dir) ? readdirSync(dir) : [];
}

test(
  'a crawl with --warc-store SIGKILLed mid-crawl and restarted to idle stores every WARC once, leaves nothing locally, and every page record is a ranged GET of its response',
  { timeout: 600_000 },
  async (t) => {
    const endpoint = s3Endpoint();
    const bucket = await freshBucket(endpoint);
    const web = await SyntheticWeb.start();
    const dir = tempDir('warc-store');
    const data = join(dir, 'data');
    const extra = ['--fetch-timeout', '3000', '--quiet', ...warcStoreArgs(bucket, PREFIX, endpoint)];
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const random = seededRandom(SEED);
      const kills: string[] = [];
      const crashes: number[] = [];
      let leftOpen = 0;
      for (let i = 0; i < KILLS; i++) {
        const before = web.requests().length;
        const target = before + 3 + Math.floor(random() * 10);
        const { child, exited } = startCli(crawlArgs(seeds, data, extra));
        let ended = false;
        void exited.then(() => (ended = true));
        const deadline = Date.now() + 60_000;
        while (!ended && web.requests().length < target && Date.now() < deadline) await sleep(10);
        await sleep(Math.floor(random() * 1500));
        crashes.push(Date.now());
        child.kill('SIGKILL');
        const r = await exited;
        assert.ok(r.signal === 'SIGKILL' || r.code === 0, `run ${i} ended with ${r.code}/${r.signal}: ${r.stderr}`);
        kills.push(`${web.requests().length - before}${r.signal === 'SIGKILL' ? '' : ' (finished)'}`);
        leftOpen += localWarcFiles(data).filter((n) => n.endsWith('.warc.gz.open')).length;
      }
      // the crash-recovery path is exercised: files left open are cut, renamed and uploaded by the next run
      assert.ok(leftOpen >= 1, 'no kill left a WARC file open');
      t.diagnostic(
        `requests per killed run: ${kills.join(', ')}; local files before the last run: ${localWarcFiles(data).length}`,
      );
      const last = await startCli(crawlArgs(seeds, data, extra)).exited;
      assert.equal(last.code, 0, `final run exited ${last.code}: ${last.stderr}`);

      assert.deepEqual(localWarcFiles(data), [], 'files left in the local WARC directory');
      const records = exportPageRecords(data);
      const counts = countByUrl(records);
      assert.deepEqual(
        [...counts].filter(([, n]) => n !== 1),
        [],
        'a URL has more than one page record',
      );
      assert.deepEqual(new Set(counts.keys()), finallyFetchedUrls(web.requests(), web.port));
      assert.ok(records.length >= 30, `only ${records.length} page records`);
      // a response --accept-type refused (the test web's PDF) is recorded but never archived
      const archived = records.filter((r) => r.errorCode !== 'CS_REFUSED_TYPE');
      assert.ok(archived.length < records.length, 'no response was refused by type: the filter above proves nothing');
      for (const r of records.filter((r) => r.errorCode === 'CS_REFUSED_TYPE')) assert.equal(r.warcFile, null, r.url);
      for (const r of archived) {
        assert.notEqual(r.warcFile, null, `${r.url} has no WARC file`);
        assert.equal(r.warcUri, `s3://${bucket}/${PREFIX}/${r.warcFile}`, `${r.url}'s warcUri`);
      }

      const keys = await listKeys(bucket, PREFIX, endpoint);
      const warcKeys = keys.filter((k) => k.endsWith('.warc.gz'));
      // each referenced file is in the bucket, under its one deterministic key
      const referenced = new Set(archived.map((r) => `${PREFIX}/${r.warcFile}`));
      for (const key of referenced) assert.ok(warcKeys.includes(key), `${key} is not in the bucket`);
      assert.deepEqual(
        keys.filter((k) => !k.startsWith(`${PREFIX}/crawlstream-`)),
        [],
        'objects outside the layout PREFIX/crawlstream-*.warc.gz (and .cdxj)',
      );

      const report = readBack(archived, bucket, PREFIX, endpoint);
      t.diagnostic(
        `${warcKeys.length} WARC objects, ${report.records} records, ${report.checked} page records read back`,
      );
      assert.deepEqual(report.problems, []);
      assert.equal(report.checked, archived.length);
      // a file stored under two keys (or twice in one) would repeat its records' ids
      assert.deepEqual(report.recordIds, [], 'WARC records stored more than once');

      const politeness = checkPoliteness(web.requests(), web.sites, { userAgent: 'crawlstream', crashes });
      assert.deepEqual(politeness.violations, [], formatPolitenessReport(politeness));
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);

test(
  'while the WARC store is down closed files wait on disk, a metric and a /healthz warning say so, and all are uploaded once it is back',
  { timeout: 600_000 },
  async (t) => {
    // a server of this test's own, so stopping it disturbs no other test
    const port = Number(process.env['S3_PORT'] ?? 18333) + 5;
    const runDir = tempDir('s3-outage-server');
    let endpoint = startOwnServer(port, runDir);
    const bucket = await freshBucket(endpoint);
    const web = await SyntheticWeb.start();
    const dir = tempDir('warc-store-outage');
    const data = join(dir, 'data');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const crawl = startCli(
        crawlArgs(seeds, data, [
          '--fetch-timeout',
          '3000',
          '--metrics-port',
          '0',
          '--log-format',
          'json',
          ...warcStoreArgs(bucket, PREFIX, endpoint),
        ]),
      );
      let stderr = '';
      crawl.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      let ended = false;
      void crawl.exited.then(() => (ended = true));
      while (!ended && web.requests().length < 5) await sleep(20);
      stopOwnServer(port, runDir);
      t.diagnostic(`S3 server stopped after ${web.requests().length} requests`);

      const address = /"address":"([^"]+)"/.exec(stderr)?.[1];
      assert.ok(address, `no endpoint address in the crawl's log:\n${stderr}`);
      // the crawl goes on; a file closed while the store is down is refused and stays
      let unreachable = false;
      let health: { warnings?: string[]; status?: string } = {};
      const deadline = Date.now() + 240_000;
      while (!ended && Date.now() < deadline) {
        const metrics = await (await fetch(`http://${address}/metrics`)).text();
        unreachable = /^crawlstream_warc_store_unreachable [1-9]\d*$/m.test(metrics);
        if (unreachable) {
          health = (await (await fetch(`http://${address}/healthz`)).json()) as typeof health;
          break;
        }
        await sleep(200);
      }
      assert.ok(unreachable, 'crawlstream_warc_store_unreachable never became 1 while the store was down');
      assert.equal(health.status, 'ok', 'a store outage is a warning, not a failed probe');
      assert.match(health.warnings?.[0] ?? '', /warc store unreachable/);
      const waiting = localWarcFiles(data).filter((n) => n.endsWith('.warc.gz'));
      assert.ok(waiting.length >= 1, 'no closed WARC file waits on disk during the outage');
      assert.equal(ended, false, 'the crawl ended (or died) while files could not be uploaded');

      endpoint = startOwnServer(port, runDir, true);
      const r = await crawl.exited;
      assert.equal(r.code, 0, `crawl exited ${r.code}: ${stderr}`);
      assert.deepEqual(localWarcFiles(data), [], 'files left locally after the store came back');
      const keys = await listKeys(bucket, PREFIX, endpoint);
      for (const name of waiting) assert.ok(keys.includes(`${PREFIX}/${name}`), `${name} was not uploaded`);
      const archived = exportPageRecords(data).filter((r) => r.errorCode !== 'CS_REFUSED_TYPE');
      const report = readBack(archived, bucket, PREFIX, endpoint);
      assert.deepEqual(report.problems, []);
      assert.equal(report.checked, archived.length);
      assert.deepEqual(report.recordIds, []);
    } finally {
      stopOwnServer(port, runDir);
      await web.close();
      removeDir(dir);
      removeDir(runDir);
    }
  },
);
