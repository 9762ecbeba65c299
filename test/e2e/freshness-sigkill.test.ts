import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { freshWeb } from '../../synthetic-web/fresh-web.js';
import { seededRandom } from '../../synthetic-web/seeded-random.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { removeDir, sleep, startCli, tempDir, writeSeeds } from './harness.js';

// every interval within [5 s, 20 s]: a URL that is in the schedule comes due during any 30 s
const MIN = 5;
const MAX = 20;
const AFTER_RESTART_SECONDS = 32;
/** The kill delay is drawn from this seed; CRAWLSTREAM_TEST_SEED replays a failing run's draw. */
const SEED = Number(process.env['CRAWLSTREAM_TEST_SEED'] ?? 20_261_201);

test('a continuous crawl SIGKILLed mid-run keeps its schedule: every URL fetched before the kill is revisited after the restart', async (t) => {
  const web = freshWeb({ seed: 3, hosts: 1, perHost: { fast: 1, slow: 1, never: 2, cosmetic: 1 }, sitemapOnly: 1 });
  const server = await SyntheticWeb.start({ sites: web.sites });
  const dir = tempDir('fresh-kill');
  try {
    web.epoch = Date.now();
    const seeds = writeSeeds(dir, server.seedUrls());
    const args = (seconds: number) => [
      'crawl',
      '--seeds',
      seeds,
      '--data',
      join(dir, 'data'),
      '--resolve',
      '*.test=127.0.0.1',
      '--allow-ip',
      '127.0.0.1/32',
      '--duration',
      String(seconds),
      '--recrawl-min',
      String(MIN),
      '--recrawl-max',
      String(MAX),
      '--recrawl-initial',
      String(MIN),
      '--feed-max-interval',
      String(MAX),
      '--fetch-timeout',
      '3000',
      '--quiet',
    ];
    const first = startCli(args(600));
    // killed once the schedule has revisits in it: a page fetched a second time
    const deadline = Date.now() + 60_000;
    const revisited = () => {
      const seen = new Set<string>();
      for (const e of server.requests())
        if (e.status === 200 || e.status === 304) {
          if (seen.has(`${e.host}${e.path}`) && e.path !== '/robots.txt') return true;
          seen.add(`${e.host}${e.path}`);
        }
      return false;
    };
    while (!revisited() && Date.now() < deadline) await sleep(50);
    const delay = Math.floor(seededRandom(SEED)() * 2_000);
    t.diagnostic(`killed ${delay} ms after the first revisit (seed ${SEED}, CRAWLSTREAM_TEST_SEED)`);
    await sleep(delay);
    const crashes = [Date.now()];
    first.child.kill('SIGKILL');
    const killed = await first.exited;
    assert.equal(killed.signal, 'SIGKILL', `the first run ended on its own: ${killed.stderr}`);
    const killedAt = Date.now();
    const beforeKill = server.requests().filter((e) => e.start < killedAt);
    const fetchedBefore = new Set(
      beforeKill
        .filter((e) => (e.status === 200 || e.status === 304) && e.path !== '/robots.txt')
        .map((e) => `${e.host}${e.path}`),
    );
    t.diagnostic(`killed after ${beforeKill.length} requests, ${fetchedBefore.size} URLs fetched`);

    const second = await startCli(args(AFTER_RESTART_SECONDS)).exited;
    assert.equal(second.code, 0, `the restarted crawl failed: ${second.stderr}`);
    const after = server.requests().filter((e) => e.start >= killedAt);
    const fetchedAfter = new Set(
      after.filter((e) => e.status === 200 || e.status === 304).map((e) => `${e.host}${e.path}`),
    );
    const lost = [...fetchedBefore].filter((u) => !fetchedAfter.has(u));
    assert.deepEqual(lost, [], 'URLs fell out of the schedule in the kill');
    const revalidated = after.filter((e) => e.ifNoneMatch !== undefined || e.ifModifiedSince !== undefined);
    assert.ok(revalidated.length > 0, 'no revisit after the restart carried validators');

    const report = checkPoliteness(server.requests(), web.sites, {
      userAgent: 'crawlstream',
      crashes,
      ipOf: server.ipOf,
    });
    assert.deepEqual(report.violations, [], formatPolitenessReport(report));
  } finally {
    await server.close();
    removeDir(dir);
  }
});
