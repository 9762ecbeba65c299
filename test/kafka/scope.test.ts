import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { CLI, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';
import { fetchedPaths, forbiddenRequests, SCOPE_OPTIONS, scopeWeb } from '../e2e/scope-web.js';
import { kafkaInfra } from './infra.js';
import { injectArgs, LOOPBACK_WEB_ARGS, runArgs } from './page-records.js';

const run = promisify(execFile);
const APP = `scope-${Date.now().toString(36)}`;

/** Waits until every page in `pages` was requested (or 120 s pass), then for 5 s without a request. */
async function crawled(web: SyntheticWeb, pages: readonly string[], alive: () => boolean): Promise<void> {
  const until = Date.now() + 120_000;
  const missing = () => pages.filter((p) => !fetchedPaths(web.requests()).has(p));
  while (Date.now() < until && alive() && missing().length > 0) await sleep(500);
  let last = -1;
  let quietSince = Date.now();
  while (Date.now() - quietSince < 5_000 && Date.now() < until + 30_000) {
    await sleep(500);
    const n = web.requests().length;
    if (n !== last) [last, quietSince] = [n, Date.now()];
  }
}

test(
  'on Kafka, --scope seed-sites, a deny rule and the default suffixes make no request out of scope; the scope is restored from its changelog and a seed injected later widens it',
  { timeout: 360_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    const web = await SyntheticWeb.start({ sites: scopeWeb() });
    const dir = tempDir('kafka-scope');
    let instance: ReturnType<typeof startCli> | undefined;
    let stderr = '';
    const start = (data: string) => {
      instance = startCli(
        runArgs('all', join(dir, data), brokers, registry, [...LOOPBACK_WEB_ARGS, '--quiet', ...SCOPE_OPTIONS], APP),
      );
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      return instance;
    };
    try {
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', APP]);
      await run(process.execPath, [CLI, ...injectArgs(writeSeeds(dir, web.seedUrls()), brokers, registry, APP)]);
      const first = start('first');
      const inScope = ['news.test/', 'news.test/a', 'news.test/b', 'news.test/away', 'blog.news.test/'];
      await crawled(web, inScope, () => first.child.exitCode === null);
      const log = web.requests();
      const fetched = fetchedPaths(log);
      assert.deepEqual(
        inScope.filter((p) => !fetched.has(p)),
        [],
        `in-scope pages not fetched; the instance said:\n${stderr.slice(-4000)}`,
      );
      assert.deepEqual(forbiddenRequests(log, ['news.test']), [], 'requests out of scope or filtered');

      // a new instance on an empty data dir: its stores, the scope among them, come from the changelogs
      first.child.kill('SIGKILL');
      await first.exited;
      const before = web.requests().length;
      const second = start('second');
      await run(process.execPath, [
        CLI,
        ...injectArgs(writeSeeds(dir, [web.url('other.test')]), brokers, registry, APP),
      ]);
      await crawled(web, ['other.test/', 'news.test/c'], () => second.child.exitCode === null);
      const later = web.requests().slice(before);
      const paths = fetchedPaths(later);
      assert.ok(paths.has('other.test/'), `the injected seed was not fetched:\n${stderr.slice(-4000)}`);
      assert.ok(paths.has('news.test/c'), 'a link into the restored scope was refused');
      assert.deepEqual(forbiddenRequests(later, ['news.test', 'other.test']), [], 'requests out of the widened scope');
      second.child.kill('SIGTERM');
      assert.equal((await second.exited).code, 0, stderr.slice(-4000));
    } finally {
      instance?.child.kill('SIGKILL');
      await web.close();
      removeDir(dir);
    }
  },
);
