import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { controlInbox } from '../../cli/control.js';
import { seedInbox } from '../../cli/seed-inbox.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';
import { PORT, type SiteSpec } from '../../synthetic-web/sites.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { crawlArgs, exportPageRecords, flatSite, removeDir, sleep, startCli, tempDir, writeSeeds } from './harness.js';

/** The host's requests in order of start. */
const toHost = (log: readonly RequestLogEntry[], host: string) =>
  log.filter((e) => e.host === host).sort((a, b) => a.start - b.start);

/** The gap before each request of `reqs` (a host's, sorted), after the end of the one before it; the first has none. */
const gaps = (reqs: readonly RequestLogEntry[]) => reqs.slice(1).map((e, i) => e.start - reqs[i]!.end);

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Waits until every file of `inbox` was taken by the crawl; fails if the crawl ended first. */
async function taken(inbox: string, running: () => boolean): Promise<number> {
  while (existsSync(inbox) && readdirSync(inbox).some((f) => !f.endsWith('.bad'))) {
    assert.ok(running(), `the crawl ended before it took what was put in ${inbox}`);
    await sleep(50);
  }
  return Date.now();
}

const BIG = 5 * 1024 * 1024;

test(
  'a page of a refused type is closed after its headers: the server wrote ≤ 64 KiB of its 5 MiB body, its record says CS_REFUSED_TYPE and it is not archived; robots.txt and sitemaps still work',
  { timeout: 120_000 },
  async (t) => {
    const site: SiteSpec = {
      host: 'typed.test',
      seed: true,
      robots: {
        status: 200,
        body: `User-agent: *\nAllow: /\nSitemap: http://typed.test:${PORT}/sitemap.xml\n`,
      },
      pages: {
        '/': { title: 'Typed', links: ['/download/big', '/a.html'] },
        '/a.html': { title: 'A', links: [] },
        '/from-sitemap.html': { title: 'Listed', links: [] },
        '/sitemap.xml': {
          contentType: 'application/xml',
          body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://typed.test:${PORT}/from-sitemap.html</loc></url></urlset>`,
        },
      },
      // 5 MiB in 8 KiB chunks 20 ms apart: the log counts only what the socket took, and a client
      // that read the whole body would take all 640 chunks
      respond: (req) =>
        req.pathname === '/download/big'
          ? {
              status: 200,
              headers: { 'content-type': 'application/octet-stream' },
              body: Buffer.alloc(BIG, 7),
              pace: { chunkBytes: 8 * 1024, gapMs: 20 },
            }
          : undefined,
    };
    const web = await SyntheticWeb.start({ sites: [site] });
    const dir = tempDir('accept-type');
    const data = join(dir, 'data');
    try {
      const run = await startCli(crawlArgs(writeSeeds(dir, web.seedUrls()), data, ['--quiet'])).exited;
      assert.equal(run.code, 0, run.stderr);
      const log = web.requests();
      const big = log.filter((e) => e.path === '/download/big');
      assert.equal(big.length, 1, 'the binary was requested once, not retried');
      t.diagnostic(`server wrote ${big[0]!.bytes} of ${BIG} body bytes of /download/big`);
      assert.ok(big[0]!.bytes <= 64 * 1024, `the server wrote ${big[0]!.bytes} bytes of the refused body`);
      for (const path of ['/robots.txt', '/sitemap.xml', '/from-sitemap.html', '/a.html'])
        assert.ok(
          log.some((e) => e.path === path && e.status === 200),
          `${path} was not fetched`,
        );

      const records = exportPageRecords(data);
      const refused = records.filter((r) => r.url.endsWith('/download/big'));
      assert.equal(refused.length, 1, 'one page record for the refused URL');
      assert.equal(refused[0]!.errorCode, 'CS_REFUSED_TYPE');
      assert.equal(refused[0]!.status, 200);
      assert.equal(refused[0]!.contentType, 'application/octet-stream');
      assert.equal(refused[0]!.warcFile, null, 'the refused response was archived');
      const page = records.find((r) => r.url.endsWith('/a.html'));
      assert.ok(page?.warcFile, 'an accepted page is archived as before');
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);

test(
  "a per-site min-delay from the config file shows in that site's gaps and nowhere else",
  { timeout: 180_000 },
  async (t) => {
    const web = await SyntheticWeb.start({ sites: [flatSite('gentle.test', 6), flatSite('brisk.test', 6)] });
    const dir = tempDir('site-min-delay');
    try {
      const config = join(dir, 'crawl.yaml');
      writeFileSync(config, 'sites:\n  gentle.test:\n    min-delay: 2500\n');
      const run = await startCli(
        crawlArgs(writeSeeds(dir, web.seedUrls()), join(dir, 'data'), ['--config', config, '--quiet']),
      ).exited;
      assert.equal(run.code, 0, run.stderr);
      const log = web.requests();
      const gentle = gaps(toHost(log, 'gentle.test'));
      const brisk = gaps(toHost(log, 'brisk.test'));
      t.diagnostic(`gentle.test gaps ${gentle.map(Math.round).join(', ')}`);
      t.diagnostic(`brisk.test gaps ${brisk.map(Math.round).join(', ')}`);
      assert.equal(gentle.length, 7, 'robots.txt, home and six pages of gentle.test');
      assert.equal(brisk.length, 7, 'robots.txt, home and six pages of brisk.test');
      assert.ok(
        gentle.every((g) => g >= 2_500),
        'a request to gentle.test came less than 2.5 s after the one before',
      );
      // the other site keeps the default 1 s floor: most of its gaps are well under the override
      assert.ok(median(brisk) < 2_000, 'brisk.test was paced by gentle.test’s override');
      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream' });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);

test('inject --data adds a seed to a running embedded crawl, which fetches it', { timeout: 180_000 }, async (t) => {
  const web = await SyntheticWeb.start({
    sites: [flatSite('busy.test', 12), flatSite('late.test', 1, { seed: false })],
  });
  const dir = tempDir('inject');
  const data = join(dir, 'data');
  try {
    const { exited } = startCli(crawlArgs(writeSeeds(dir, web.seedUrls()), data, ['--quiet']));
    let ended = false;
    void exited.then(() => (ended = true));
    while (toHost(web.requests(), 'busy.test').length < 3) {
      assert.ok(!ended, 'the crawl ended before anything was injected');
      await sleep(100);
    }
    assert.equal(toHost(web.requests(), 'late.test').length, 0, 'late.test was requested before it was injected');
    const inject = await startCli(['inject', web.url('late.test'), '--data', data]).exited;
    assert.equal(inject.code, 0, inject.stderr);
    const injectedAt = Date.now();
    const takenAt = await taken(seedInbox(data), () => !ended);
    // generous: the crawl polls its inbox every second and the new host waits one full gap
    while (!web.requests().some((e) => e.host === 'late.test' && e.path === '/')) {
      assert.ok(Date.now() - injectedAt < 60_000, 'the injected seed was not fetched within 60 s');
      await sleep(100);
    }
    const fetched = web.requests().find((e) => e.host === 'late.test' && e.path === '/')!;
    t.diagnostic(
      `taken ${takenAt - injectedAt} ms after inject; fetched ${Math.round(fetched.start - injectedAt)} ms after inject`,
    );
    const run = await exited;
    assert.equal(run.code, 0, run.stderr);
    const report = checkPoliteness(web.requests(), web.sites, { userAgent: 'crawlstream' });
    assert.deepEqual(report.violations, [], formatPolitenessReport(report));
  } finally {
    await web.close();
    removeDir(dir);
  }
});

test(
  "control set min-delay survives a SIGKILL: after the restart the new gap shows in that site's gaps and nowhere else",
  { timeout: 240_000 },
  async (t) => {
    const web = await SyntheticWeb.start({ sites: [flatSite('tuned.test', 14), flatSite('plain.test', 14)] });
    const dir = tempDir('control-set');
    const data = join(dir, 'data');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const first = startCli(crawlArgs(seeds, data, ['--quiet']));
      let ended = false;
      void first.exited.then(() => (ended = true));
      while (toHost(web.requests(), 'tuned.test').length < 3) {
        assert.ok(!ended, 'the crawl ended before the site was tuned');
        await sleep(100);
      }
      const set = await startCli(['control', 'set', 'tuned.test', 'min-delay=3000', '--data', data]).exited;
      assert.equal(set.code, 0, set.stderr);
      const setAt = await taken(controlInbox(data), () => !ended);
      // the command reached the frontier once a request to the site starts ≥ 3 s after the one before
      while (toHost(web.requests(), 'tuned.test').filter((e) => e.start > setAt).length < 2) {
        assert.ok(!ended, 'the crawl ended before the new gap was seen');
        await sleep(100);
      }
      const killedAt = Date.now();
      first.child.kill('SIGKILL');
      const killed = await first.exited;
      assert.equal(killed.signal, 'SIGKILL', `the first run ended on its own: ${killed.stderr}`);
      const restartAt = Date.now();
      const second = await startCli(crawlArgs(seeds, data, ['--quiet'])).exited;
      assert.equal(second.code, 0, second.stderr);

      const log = web.requests();
      const after = (host: string) => toHost(log, host).filter((e) => e.start > restartAt);
      const tuned = gaps(after('tuned.test'));
      const plain = gaps(after('plain.test'));
      t.diagnostic(`after restart: tuned.test gaps ${tuned.map(Math.round).join(', ')}`);
      t.diagnostic(`after restart: plain.test gaps ${plain.map(Math.round).join(', ')}`);
      assert.ok(tuned.length >= 3, 'too few requests to tuned.test after the restart to judge');
      assert.ok(plain.length >= 3, 'too few requests to plain.test after the restart to judge');
      assert.ok(
        tuned.every((g) => g >= 3_000),
        'after the restart a request to tuned.test came less than 3 s after the one before',
      );
      assert.ok(median(plain) < 2_000, 'plain.test was paced by tuned.test’s override');
      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', crashes: [killedAt] });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
