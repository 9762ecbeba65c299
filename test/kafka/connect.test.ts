import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { CLI, removeDir, sleep, tempDir, writeSeeds } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { crawlAppUntilRecorded, injectArgs, pageRecordsOf, threePageSite } from './page-records.js';

const run = promisify(execFile);
const FETCH_CONNECT = fileURLToPath(new URL('../../../scripts/kafka/fetch-connect.sh', import.meta.url));
const APP = `connect-${Date.now().toString(36)}`;
const PAGES = ['/', '/a.html', '/b.html'];

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The Connect worker and sink of docs/CONSUMERS.md, on the test broker and registry. */
function connectConfig(
  dir: string,
  home: string,
  brokers: string,
  registry: string,
  topic: string,
  restPort: number,
): { worker: string; sink: string; out: string } {
  const out = join(dir, 'page-records.txt');
  const worker = join(dir, 'worker.properties');
  const sink = join(dir, 'sink.properties');
  // the registry's v2 API (Apicurio's own client); the crawler registers through its ccompat API
  const registryV2 = registry.replace(/\/apis\/ccompat\/v7\/?$/, '/apis/registry/v2');
  writeFileSync(
    worker,
    [
      `bootstrap.servers=${brokers}`,
      `listeners=http://127.0.0.1:${restPort}`,
      `offset.storage.file.filename=${join(dir, 'connect.offsets')}`,
      `plugin.path=${join(home, 'plugins')}`,
      // only committed records: a transaction the crawler aborted never reaches the sink
      'consumer.isolation.level=read_committed',
      'consumer.auto.offset.reset=earliest',
      'key.converter=org.apache.kafka.connect.storage.StringConverter',
      'value.converter=io.apicurio.registry.utils.converter.AvroConverter',
      `value.converter.apicurio.registry.url=${registryV2}`,
      // values are framed as Confluent's serializer frames them: magic byte, 4-byte id, Avro body
      'value.converter.apicurio.registry.as-confluent=true',
      'value.converter.apicurio.registry.use-id=contentId',
      'value.converter.apicurio.registry.headers.enabled=false',
      'offset.flush.interval.ms=1000',
      '',
    ].join('\n'),
  );
  writeFileSync(
    sink,
    [
      'name=page-records-file-sink',
      'connector.class=org.apache.kafka.connect.file.FileStreamSinkConnector',
      'tasks.max=1',
      `topics=${topic}`,
      `file=${out}`,
      '',
    ].join('\n'),
  );
  return { worker, sink, out };
}

test(
  'a Kafka Connect file sink with the registry Avro converter lands every committed page record exactly once',
  { timeout: 420_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const web = await SyntheticWeb.start({ sites: [threePageSite('connect.test', 'connect')] });
    const dir = tempDir('kafka-connect');
    t.after(async () => {
      await web.close();
      removeDir(dir);
    });
    const seeds = writeSeeds(dir, web.seedUrls());
    await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', APP]);
    await run(process.execPath, [CLI, ...injectArgs(seeds, brokers, registry, APP)]);
    await crawlAppUntilRecorded(brokers, registry, join(dir, 'data'), APP, PAGES);
    const topic = `${APP}.page-records`;
    const expected = await pageRecordsOf(brokers, registry, topic);
    assert.equal(expected.length, PAGES.length);

    // the script's last line is the directory (a first, downloading run may print more before it)
    const home = (await run('bash', [FETCH_CONNECT], { encoding: 'utf8', timeout: 300_000 })).stdout
      .trim()
      .split('\n')
      .at(-1)!;
    const { worker, sink, out } = connectConfig(dir, home, brokers, registry, topic, await freePort());
    const connect = spawn(
      process.env['JAVA'] ?? 'java',
      [
        '-Xmx256m',
        '-XX:+UseSerialGC',
        '-XX:TieredStopAtLevel=1',
        '-cp',
        `${join(home, 'libs')}/*`,
        'org.apache.kafka.connect.cli.ConnectStandalone',
        worker,
        sink,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    connect.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    connect.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const exited = new Promise((resolve) => connect.on('close', resolve));
    t.after(async () => {
      connect.kill('SIGKILL');
      await exited;
    });

    const landed = (): string[] =>
      existsSync(out)
        ? readFileSync(out, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
        : [];
    const until = Date.now() + 180_000;
    while (Date.now() < until && connect.exitCode === null && landed().length < expected.length) await sleep(1_000);
    // a sink that would write a record twice does so within its next flush; wait that long again
    await sleep(3_000);
    connect.kill('SIGTERM');
    await exited;
    const lines = landed();
    assert.equal(
      lines.length,
      expected.length,
      `the sink wrote ${lines.length} lines:\n${lines.join('\n')}\n${log.slice(-4000)}`,
    );

    // FileStreamSink writes each value as Connect's Struct prints it: `Struct{url=…,…,status=…,…}`
    const field = (line: string, name: string): string => {
      const m = new RegExp(`[{,]${name}=([^,}]*)`).exec(line);
      assert.ok(m !== null, `no ${name} in ${line}`);
      return m[1]!;
    };
    const got = lines.map((l) => `${field(l, 'url')} ${field(l, 'status')}`).sort();
    const want = expected.map((r) => `${r.url} ${r.status}`).sort();
    assert.deepEqual(got, want);
  },
);
