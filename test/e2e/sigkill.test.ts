import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { standardWeb } from '../../synthetic-web/standard-web.js';
import { longPagesSite } from '../../synthetic-web/long-pages.js';
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
  warcioCheck,
  writeSeeds,
} from './harness.js';

const KILLS = 6;
/** The kill points are drawn from this seed; CRAWLSTREAM_TEST_SEED replays a failing run's draws. */
const SEED = Number(process.env['CRAWLSTREAM_TEST_SEED'] ?? 20_260_301);

test(
  'a crawl on two threads SIGKILLed at seeded random points and restarted records every fetched page exactly once, politely',
  { timeout: 600_000 },
  async (t) => {
    // the long pages are parsed on the worker thread, the others on the main one
    const web = await SyntheticWeb.start({ sites: [...standardWeb(), longPagesSite()] });
    const dir = tempDir('sigkill');
    const data = join(dir, 'data');
    // short fetch limits so leases lost in a kill expire in seconds, not a minute
    const extra = ['--fetch-timeout', '3000', '--quiet', '--threads', '2'];
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      // each run is killed once the server has seen a random 1..8 more requests, then up to 0.5 s
      // later, so kills land mid-crawl (between fetches and during them), whatever the start-up time
      const kills: string[] = [];
      /** When each run was killed: the judge's robots-refetched rule forgives what a kill may have lost. */
      const crashes: number[] = [];
      const random = seededRandom(SEED);
      t.diagnostic(`kill points drawn with seed ${SEED} (CRAWLSTREAM_TEST_SEED)`);
      for (let i = 0; i < KILLS; i++) {
        const before = web.requests().length;
        const target = before + 1 + Math.floor(random() * 8);
        const { child, exited } = startCli(crawlArgs(seeds, data, extra));
        let ended = false;
        void exited.then(() => (ended = true));
        // not an assertion: a run that fetches nothing for a minute is killed where it stands
        const deadline = Date.now() + 60_000;
        while (!ended && web.requests().length < target && Date.now() < deadline) await sleep(10);
        await sleep(Math.floor(random() * 500));
        crashes.push(Date.now());
        child.kill('SIGKILL');
        const r = await exited;
        // a run may finish before its kill on the last rounds; anything else must be the kill
        assert.ok(r.signal === 'SIGKILL' || r.code === 0, `run ${i} ended with ${r.code}/${r.signal}: ${r.stderr}`);
        kills.push(`${web.requests().length - before}${r.signal === 'SIGKILL' ? '' : ' (finished)'}`);
      }
      const beforeFinal = web.requests().length;
      t.diagnostic(`requests per killed run: ${kills.join(', ')}; ${beforeFinal} requests before the final run`);
      assert.ok(beforeFinal >= KILLS, `the kills came before the crawl fetched anything (${beforeFinal} requests)`);
      const last = await startCli(crawlArgs(seeds, data, extra)).exited;
      assert.equal(last.code, 0, `final run exited ${last.code}: ${last.stderr}`);

      const log = web.requests();
      const records = exportPageRecords(data);
      const counts = countByUrl(records);
      assert.deepEqual(
        [...counts].filter(([, n]) => n !== 1),
        [],
        'a URL has more than one page record',
      );
      assert.deepEqual(
        new Set(counts.keys()),
        finallyFetchedUrls(log, web.port),
        'fetched pages and page records differ',
      );
      assert.ok(counts.size >= 50, `only ${counts.size} pages recorded`);
      const long = [...counts.keys()].filter((u) => new URL(u).hostname === 'long.test');
      assert.equal(long.length, 9, `the long pages recorded: ${long.join(', ')}`);

      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', crashes, ipOf: web.ipOf });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
      const warc = warcioCheck(join(data, 'warc'));
      assert.equal(warc.status, 0, warc.output);
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
