import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';
import { crawlerAddressArgs } from '../../synthetic-web/addresses.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { CLI, flatSite, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { LOOPBACK_WEB_ARGS, runArgs } from './page-records.js';

const run = promisify(execFile);

const toHost = (log: readonly RequestLogEntry[], host: string) =>
  log.filter((e) => e.host === host).sort((a, b) => a.start - b.start);
const gaps = (reqs: readonly RequestLogEntry[]) => reqs.slice(1).map((e, i) => e.start - reqs[i]!.end);
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

test(
  "control set on Kafka: a live min-delay survives a SIGKILL of the instance; after the restart it shows in that site's gaps and nowhere else",
  { timeout: 420_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const id = randomUUID().slice(0, 8);
    const appId = `ctlset-${id}`;
    const tuned = `tuned-${id}.test`;
    const plain = `plain-${id}.test`;
    // on addresses of their own, so each site's gaps are its own setting's: two sites on one
    // address share its per-IP limit (with the time slots of before 2026-12-06 the plain site got
    // only the slots the tuned one left it, 1.72 and 3.44 s apart in turn: a CI run failed so)
    const sites = [flatSite(tuned, 16), flatSite(plain, 16, { address: '127.0.0.12' })];
    const web = await SyntheticWeb.start({ sites });
    const dir = tempDir('kafka-control-set');
    const kafka = ['--brokers', brokers, '--registry', registry, '--app-id', appId];
    const args = runArgs(
      'all',
      join(dir, 'all'),
      brokers,
      registry,
      [...LOOPBACK_WEB_ARGS, ...crawlerAddressArgs(sites), '--quiet'],
      appId,
    );
    let instance: ReturnType<typeof startCli> | undefined;
    let stderr = '';
    const launch = () => {
      instance = startCli(args);
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      return instance;
    };
    try {
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', appId]);
      await run(process.execPath, [CLI, 'inject', '--seeds', writeSeeds(dir, web.seedUrls()), ...kafka]);
      const first = launch();
      const until = Date.now() + 240_000;
      const waitFor = async (what: string, done: () => boolean) => {
        while (!done()) {
          assert.ok(
            Date.now() < until && first.child.exitCode === null,
            `${what}; the instance said:\n${stderr.slice(-4000)}`,
          );
          await sleep(200);
        }
      };
      await waitFor('tuned site not crawled', () => toHost(web.requests(), tuned).length >= 3);
      const set = await startCli(['control', 'set', tuned, 'min-delay=3000', ...kafka]).exited;
      assert.equal(set.code, 0, set.stderr);
      const setAt = Date.now();
      // applied once a request to the site starts 3 s after the one before it ended
      await waitFor('the set never showed in the first run', () =>
        gaps(toHost(web.requests(), tuned).filter((e) => e.start > setAt)).some((g) => g >= 3_000),
      );
      first.child.kill('SIGKILL');
      assert.equal((await first.exited).signal, 'SIGKILL');
      const restartAt = Date.now();
      const second = launch();
      const end = Date.now() + 240_000;
      while (toHost(web.requests(), tuned).filter((e) => e.path !== '/robots.txt').length < 17) {
        assert.ok(
          Date.now() < end && second.child.exitCode === null,
          `tuned site not finished:\n${stderr.slice(-4000)}`,
        );
        await sleep(500);
      }
      second.child.kill('SIGTERM');
      await second.exited;

      const log = web.requests();
      const after = (host: string) => toHost(log, host).filter((e) => e.start > restartAt);
      const tunedGaps = gaps(after(tuned));
      const plainGaps = gaps(after(plain));
      t.diagnostic(`after restart: ${tuned} gaps ${tunedGaps.map(Math.round).join(', ')}`);
      t.diagnostic(`after restart: ${plain} gaps ${plainGaps.map(Math.round).join(', ')}`);
      assert.ok(tunedGaps.length >= 3, `too few requests to ${tuned} after the restart to judge`);
      assert.ok(
        tunedGaps.every((g) => g >= 3_000),
        `after the restart a request to ${tuned} came within 3 s`,
      );
      // paced by the override, every gap would be 3 s or more
      if (plainGaps.length >= 3) assert.ok(median(plainGaps) < 3_000, `${plain} was paced by ${tuned}'s override`);
      const all = toHost(log, plain);
      assert.ok(median(gaps(all)) < 3_000, `${plain} was paced by ${tuned}'s override`);
      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
    } finally {
      instance?.child.kill('SIGKILL');
      await web.close();
      removeDir(dir);
    }
  },
);
