import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { CLI, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { LOOPBACK_WEB_ARGS, recordedUrls, runArgs } from './page-records.js';

const run = promisify(execFile);

/** A robots.txt just under the fetcher's 500 KiB cut: every rule of it is kept (in `frontier-robots`). */
function bigRobots(): string {
  const lines = ['User-agent: *', 'Disallow: /private/'];
  while (lines.join('\n').length < 499 * 1024)
    lines.push(`Disallow: /archive/${lines.length.toString(36).padStart(8, '0')}/`);
  return `${lines.join('\n')}\n`;
}

test(
  'a host whose robots.txt is 500 KiB is crawled on Kafka: its body crosses a changelog when fetched, its host state on every lease, no record too large',
  { timeout: 300_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    const web = await SyntheticWeb.start({
      sites: [
        {
          host: 'bigrobots.test',
          seed: true,
          robots: { status: 200, body: bigRobots() },
          pages: {
            '/': { title: 'Home', links: ['/a.html', '/b.html', '/private/x.html'] },
            '/a.html': { title: 'A', links: ['/b.html'] },
            '/b.html': { title: 'B', links: ['/'] },
            '/private/x.html': { title: 'Private' },
          },
        },
      ],
    });
    const dir = tempDir('kafka-robots');
    let stderr = '';
    let instance: ReturnType<typeof startCli> | undefined;
    try {
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers]);
      const seeds = writeSeeds(dir, web.seedUrls());
      await run(process.execPath, [CLI, 'inject', '--seeds', seeds, '--brokers', brokers, '--registry', registry]);
      instance = startCli(
        runArgs('all', join(dir, 'all'), brokers, registry, [
          ...LOOPBACK_WEB_ARGS,
          '--quiet',
          '--fetch-timeout',
          '3000',
        ]),
      );
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const fetched = () => new Set(web.requests().map((e) => e.path));
      const until = Date.now() + 180_000;
      while (
        Date.now() < until &&
        instance.child.exitCode === null &&
        !['/a.html', '/b.html'].every((p) => fetched().has(p))
      )
        await sleep(500);
      assert.deepEqual(
        ['/robots.txt', '/', '/a.html', '/b.html'].filter((p) => !fetched().has(p)),
        [],
        `not fetched; the instance said:\n${stderr.slice(-4000)}`,
      );
      assert.equal(fetched().has('/private/x.html'), false, 'a page the 500 KiB robots.txt disallows was fetched');
      const robots = web.requests().find((e) => e.path === '/robots.txt')!;
      assert.ok(robots.bytes >= 499 * 1024, `robots.txt served ${robots.bytes} bytes`);
      // a fetched page is recorded once the parser has taken it from 'fetched': wait for that, then stop
      const recordedPaths = async () =>
        (await recordedUrls(brokers, registry, 'bigrobots.test')).map((u) => new URL(u).pathname).sort();
      let recorded = await recordedPaths();
      while (Date.now() < until && instance.child.exitCode === null && recorded.length < 3) {
        await sleep(1_000);
        recorded = await recordedPaths();
      }
      instance.child.kill('SIGTERM');
      const ended = await instance.exited;
      assert.equal(ended.code, 0, stderr.slice(-4000));
      assert.doesNotMatch(stderr, /MESSAGE_TOO_LARGE|fatal|lost \(CS_/, stderr.slice(-4000));
      assert.deepEqual(recorded, ['/', '/a.html', '/b.html']);
    } finally {
      instance?.child.kill('SIGKILL');
      await web.close();
      removeDir(dir);
    }
  },
);
