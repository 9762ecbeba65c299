import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { CLI, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { injectArgs, LOOPBACK_WEB_ARGS, pageRecordsOf, runArgs, threePageSite } from './page-records.js';
import { freshBucket, listKeys, readBack, s3Endpoint, warcStoreArgs } from '../s3/s3-server.js';

const run = promisify(execFile);
const RUN = Date.now().toString(36);
const APP = `warc-store-${RUN}`;
const HOST = 'warc-store.test';
const PREFIX = `kafka/${RUN}`;

test(
  'on the Kafka engine the parser uploads its WARC files to the store, records the upload in its ledger, and each page record is a ranged GET of its response',
  { timeout: 300_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const endpoint = s3Endpoint();
    const bucket = await freshBucket(endpoint);
    const web = await SyntheticWeb.start({ sites: [threePageSite(HOST, 'warc store')] });
    const dir = tempDir('kafka-warc-store');
    const data = join(dir, 'data');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', APP]);
      await run(process.execPath, [CLI, ...injectArgs(seeds, brokers, registry, APP)]);
      const instance = startCli(
        runArgs(
          'all',
          data,
          brokers,
          registry,
          [...LOOPBACK_WEB_ARGS, '--quiet', '--fetch-timeout', '3000', ...warcStoreArgs(bucket, PREFIX, endpoint)],
          APP,
        ),
      );
      let stderr = '';
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const topic = `${APP}.page-records`;
      try {
        // not assertions: the waits end early when the crawl is done, and the asserts below judge
        const until = Date.now() + 180_000;
        let records = await pageRecordsOf(brokers, registry, topic);
        while (Date.now() < until && instance.child.exitCode === null && records.length < 3) {
          await sleep(1_000);
          records = await pageRecordsOf(brokers, registry, topic);
        }
        // the last file closes once quiet for a few seconds, goes up, and then leaves the disk
        const wanted = () => new Set(records.map((r) => `${PREFIX}/${r.warcFile}`));
        const warcDir = join(data, 'warc');
        const localFiles = () =>
          existsSync(warcDir) ? readdirSync(warcDir).filter((n) => n.endsWith('.warc.gz')) : [];
        let keys = await listKeys(bucket, PREFIX, endpoint);
        while (
          Date.now() < until &&
          ([...wanted()].some((k) => !keys.includes(k)) || records.some((r) => localFiles().includes(r.warcFile!)))
        ) {
          await sleep(1_000);
          keys = await listKeys(bucket, PREFIX, endpoint);
        }
        instance.child.kill('SIGTERM');
        assert.equal((await instance.exited).code, 0, stderr.slice(-4000));

        assert.deepEqual(records.map((r) => new URL(r.url).pathname).sort(), ['/', '/a.html', '/b.html']);
        for (const r of records) assert.equal(r.warcUri, `s3://${bucket}/${PREFIX}/${r.warcFile}`);
        for (const key of wanted()) assert.ok(keys.includes(key), `${key} is not in the bucket: ${keys.join(', ')}`);
        const local = localFiles();
        for (const r of records) assert.ok(!local.includes(r.warcFile!), `${r.warcFile} is still on local disk`);
        const report = readBack(records, bucket, PREFIX, endpoint);
        t.diagnostic(`${keys.length} objects, ${report.records} WARC records`);
        assert.deepEqual(report.problems, []);
        assert.equal(report.checked, 3);
        assert.deepEqual(report.recordIds, []);
      } finally {
        instance.child.kill('SIGKILL');
      }
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
