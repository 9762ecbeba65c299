import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createWriteStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { crawlerAddressArgs } from '../../synthetic-web/addresses.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { CLI, flatSite, removeDir, sleep, tempDir, writeSeeds, type Exited } from '../e2e/harness.js';
import { parseExposition, sampleSum } from '../python/prometheus.js';
import { kafkaInfra } from './infra.js';
import { LOOPBACK_WEB_ARGS, runArgs } from './page-records.js';

const run = promisify(execFile);
const RUN = Date.now().toString(36);
/** Every site of the test web shares this address: leases of every frontier partition meet at one fetcher's wire gate. */
const SHARED = '127.0.0.9';
const PAGES = 4;

/**
 * Loaded with --import into a process whose clock is to be off: its Date.now runs `skew` ms
 * ahead (behind when negative). The monotonic clock (performance.now) is a machine's own and stays.
 */
const SKEW_MODULE = `
const skew = Number(process.env.CRAWLSTREAM_TEST_CLOCK_SKEW_MS);
const now = Date.now;
Date.now = () => now() + skew;
`;

interface Role {
  name: string;
  child: ReturnType<typeof spawn>;
  exited: Promise<Exited>;
  ops?: string;
}

/** `crawlstream run ARGS` as a child process, with `env` added to this one's. */
function launch(name: string, args: string[], env: Record<string, string> = {}): Role {
  const child = spawn(process.execPath, [CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const role: Role = { name, child, exited: undefined as unknown as Promise<Exited> };
  // CRAWLSTREAM_TEST_LOGS=<dir> keeps each role's whole output there, for a failure's post-mortem
  const keep = process.env['CRAWLSTREAM_TEST_LOGS'];
  if (keep) {
    const file = createWriteStream(join(keep, `clock-skew-${name}.log`));
    child.stdout!.pipe(file);
    child.stderr!.pipe(file);
  }
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    role.ops ??= /\/readyz on http:\/\/(\S+)/.exec(stderr)?.[1];
  });
  role.exited = new Promise<Exited>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return role;
}

async function metric(role: Role, sample: string): Promise<number> {
  assert.ok(role.ops, `${role.name} never said where its endpoints are`);
  return sampleSum(parseExposition(await (await fetch(`http://${role.ops}/metrics`)).text()), sample);
}

/**
 * The most a fetcher's estimate of the frontier's clock may exceed the skew: the least transit of
 * the crawl's ~24 leases (the frontier's commit, then a poll), 27–60 ms in the runs here beside a
 * crawl in the other lane, 5× that for a loaded CI; a skew misread is seconds off.
 */
const TRANSIT_BOUND_MS = 300;

// 3 s ahead: within the 5 s a fetcher may run ahead; 10 s behind: past a lease's 10 s window, the
// 3 s fetch timeout and the 5 s grace, when the frontier gives a lease up
for (const skewMs of [3_000, -10_000]) {
  test(
    `on Kafka, a fetcher whose clock runs ${Math.abs(skewMs) / 1000} s ${skewMs > 0 ? 'ahead of' : 'behind'} the frontier's reads the frontier's clock within a lease's least transit, and fetches every page of hosts sharing one address, politely, answering every lease before the frontier gives it up`,
    { timeout: 420_000 },
    async (t) => {
      const { brokers, registry } = kafkaInfra();
      const appId = `clock-skew-${skewMs > 0 ? 'ahead' : 'behind'}-${RUN}`;
      const sites = ['a', 'b', 'c', 'd'].map((s) => flatSite(`${s}.skew.test`, PAGES, { address: SHARED }));
      const web = await SyntheticWeb.start({ sites });
      const dir = tempDir('kafka-clock-skew');
      const skewModule = join(dir, 'skew.mjs');
      writeFileSync(skewModule, SKEW_MODULE);
      const roles: Role[] = [];
      try {
        await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', appId]);
        const kafka = ['--brokers', brokers, '--registry', registry, '--app-id', appId];
        await run(process.execPath, [CLI, 'inject', '--seeds', writeSeeds(dir, web.seedUrls()), ...kafka]);
        const extra = [...LOOPBACK_WEB_ARGS, ...crawlerAddressArgs(sites), '--quiet', '--fetch-timeout', '3000'];
        const args = (role: string) => runArgs(role, join(dir, role), brokers, registry, extra, appId);
        roles.push(launch('frontier', args('frontier')), launch('parser', args('parser')));
        // its debug lines say why each lease it dropped was late (printed below)
        const fetcherArgs = [...args('fetcher'), '--log-level', 'debug'];
        const fetcher = launch('fetcher', fetcherArgs, {
          NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import ${pathToFileURL(skewModule).href}`.trim(),
          CRAWLSTREAM_TEST_CLOCK_SKEW_MS: String(skewMs),
        });
        roles.push(fetcher);

        const expected = sites.flatMap((s) => Object.keys(s.pages).map((p) => `${s.host}${p}`));
        const missing = () => {
          const requested = new Set(web.requests().map((e) => `${e.host}${e.path}`));
          return expected.filter((u) => !requested.has(u));
        };
        const began = Date.now();
        // every page, or long past what the crawl takes with agreeing clocks (under a minute here)
        while (missing().length > 0 && Date.now() - began < 180_000) {
          for (const r of roles)
            if (r.child.exitCode !== null) assert.fail(`${r.name} exited:\n${(await r.exited).stderr.slice(-4000)}`);
          await sleep(1_000);
        }
        const aheadMs = 1_000 * (await metric(fetcher, 'crawlstream_fetcher_clock_ahead_seconds'));
        const droppedLate = await metric(fetcher, 'crawlstream_leases_dropped_late_total');
        const expired = await metric(roles[0]!, 'crawlstream_leases_expired_total');
        for (const r of roles) r.child.kill('SIGTERM');
        const ends = await Promise.all(roles.map((r) => r.exited));
        // a lease that reaches its fetcher or wakes there past its window is dropped and leased
        // again, whatever the clocks (a loaded machine): counted, not judged. A skew misread drops
        // or starts them all off their windows: judged below
        const drops = ends[roles.indexOf(fetcher)]!.stderr.split('\n').filter((l) => l.includes('lease dropped'));
        t.diagnostic(
          `${web.requests().length} requests in ${Date.now() - began} ms; clock ahead ${aheadMs.toFixed(0)} ms; ${droppedLate} leases dropped late`,
        );
        for (const line of drops) t.diagnostic(line.slice(0, 400));

        assert.deepEqual(missing(), [], `pages never requested; the fetcher dropped ${droppedLate} leases as late`);
        assert.ok(
          aheadMs - skewMs >= -5 && aheadMs - skewMs <= TRANSIT_BOUND_MS,
          `the fetcher read its clock as ${aheadMs.toFixed(0)} ms ahead of the frontier's; it is ${skewMs} ms ahead, plus a transit under ${TRANSIT_BOUND_MS} ms`,
        );
        assert.equal(expired, 0, 'leases the frontier gave up on');
        const report = checkPoliteness(web.requests(), web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf });
        assert.deepEqual(report.violations, [], formatPolitenessReport(report));
        for (const [i, e] of ends.entries())
          assert.equal(e.code, 0, `${roles[i]!.name} exited ${e.code}/${e.signal}\n${e.stderr.slice(-4000)}`);
      } finally {
        for (const r of roles) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
        await Promise.all(roles.map((r) => r.exited));
        await web.close();
        removeDir(dir);
      }
    },
  );
}
