import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { PARSER_VERSION } from '../../processors/parser/parser-version.js';
import { runReparse } from '../../cli/replay-reparse.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { CLI, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';
import { python } from '../python/python.js';
import { kafkaInfra } from './infra.js';
import { injectArgs, LOOPBACK_WEB_ARGS, pageRecordsOf, runArgs, threePageSite } from './page-records.js';

const run = promisify(execFile);
const CONTENT_READER = fileURLToPath(new URL('../../../test/python/read_page_content.py', import.meta.url));

/** Every committed page-content record, as an independent reader (confluent-kafka + fastavro) decodes it. */
async function pageContentsOf(
  brokers: string,
  registry: string,
): Promise<{ url: string; fetchTime: number; visit: number; title: string | null }[]> {
  const { stdout } = await run(python(), [CONTENT_READER, brokers, registry, 'page-content'], {
    encoding: 'utf8',
    timeout: 120_000,
    maxBuffer: 64 * 2 ** 20,
  });
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { url: string; fetchTime: number; visit: number; title: string | null });
}
// a host of its own per run: page-records keeps earlier runs' records on a broker kept up
const HOST = `reparse-${Date.now().toString(36)}.test`;

test(
  'replay reparse on Kafka, run twice after a crawl: read_committed consumers see each re-derived page record exactly once',
  { timeout: 300_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    // the host in every title: a body crawled before on the same broker (another run, another
    // test) is an exact copy to the parser's crawl-wide digests, and a copy's links are not followed
    const web = await SyntheticWeb.start({ sites: [threePageSite(HOST, HOST)] });
    const dir = tempDir('kafka-reparse');
    const data = join(dir, 'all');
    let stderr = '';
    let instance: ReturnType<typeof startCli> | undefined;
    try {
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers]);
      const seeds = writeSeeds(dir, web.seedUrls());
      await run(process.execPath, [CLI, ...injectArgs(seeds, brokers, registry)]);
      instance = startCli(
        runArgs('all', data, brokers, registry, [...LOOPBACK_WEB_ARGS, '--quiet', '--fetch-timeout', '3000']),
      );
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const ours = async () => (await pageRecordsOf(brokers, registry)).filter((r) => new URL(r.url).hostname === HOST);
      const until = Date.now() + 180_000;
      let crawled = await ours();
      while (Date.now() < until && instance.child.exitCode === null && crawled.length < 3) {
        await sleep(1_000);
        crawled = await ours();
      }
      instance.child.kill('SIGTERM');
      assert.equal((await instance.exited).code, 0, stderr.slice(-4000));
      crawled = await ours();
      assert.deepEqual(
        crawled.map((r) => new URL(r.url).pathname).sort(),
        ['/', '/a.html', '/b.html'],
        `the crawl recorded other pages; the instance said:\n${stderr.slice(-4000)}`,
      );

      const args = ['--data', data, '--brokers', brokers, '--registry', registry];
      const first: string[] = [];
      assert.equal(await runReparse(args, (l) => first.push(l)), 0);
      assert.match(first.at(-1)!, /^3 re-derived, 0 already present, 3 page contents/);
      const second: string[] = [];
      assert.equal(await runReparse(args, (l) => second.push(l)), 0);
      assert.match(second.at(-1)!, /^0 re-derived, 3 already present, 0 page contents/);

      // read_committed, by a consumer we did not write: each crawled page once more, reparsed, no more
      const records = await ours();
      const reparsed = records.filter((r) => r.reparsed);
      assert.equal(records.length, 6);
      assert.ok(reparsed.every((r) => r.parserVersion === PARSER_VERSION));
      const id = (r: { warcFile: string | null; warcOffset: number | null }) => `${r.warcFile}@${r.warcOffset}`;
      assert.deepEqual(reparsed.map(id).sort(), crawled.map(id).sort());

      // the three HTML pages' content: the crawl's and the reparse's, the same fetch each, no more
      const fetchOf = (r: { url: string; fetchTime: number; visit: number | null }) =>
        `${r.url} ${r.fetchTime} ${r.visit ?? 0}`;
      const contents = (await pageContentsOf(brokers, registry)).filter((c) => new URL(c.url).hostname === HOST);
      assert.deepEqual(
        contents.map(fetchOf).sort(),
        [...crawled, ...crawled].map(fetchOf).sort(),
        'page-content does not hold each crawled page twice (crawl and reparse)',
      );
      assert.ok(
        contents.every((c) => c.title?.startsWith(`${HOST} `)),
        JSON.stringify(contents.map((c) => c.title)),
      );
    } finally {
      instance?.child.kill('SIGKILL');
      await web.close();
      removeDir(dir);
    }
  },
);

test('replay reparse on a cluster set up before page-content existed refuses, naming the command that makes the topic', async () => {
  const { brokers, registry } = kafkaInfra();
  const appId = `reparse-nocontent-${Date.now().toString(36)}`;
  const dir = tempDir('kafka-reparse-nocontent');
  const port = new KafkaPort([brokers], `${appId}-test`);
  try {
    // the crawl's outputs as an older `topics create` left them: no page-content
    const admin = await port.admin();
    try {
      await admin.createTopics(
        ['page-records', 'links'].map((t) => ({ name: `${appId}.${t}`, partitions: 1, config: {} })),
      );
    } finally {
      await admin.close();
    }
    const warc = join(dir, 'a.warc.gz');
    writeFileSync(warc, '');
    await assert.rejects(
      runReparse(
        ['--data', dir, '--warc', warc, '--brokers', brokers, '--registry', registry, '--app-id', appId],
        () => undefined,
      ),
      {
        code: 'CS_TOPOLOGY',
        message: new RegExp(
          `^topic ${appId}\\.page-content does not exist on .*: make it with \`crawlstream topics create\`$`,
        ),
      },
    );
  } finally {
    await port.close();
    removeDir(dir);
  }
});
