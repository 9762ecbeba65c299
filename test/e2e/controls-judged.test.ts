import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { checkPoliteness, formatPolitenessReport, type ControlEvent } from '../../synthetic-web/politeness.js';
import type { PageSpec, SiteSpec } from '../../synthetic-web/sites.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { crawlArgs, removeDir, sleep, startCli, tempDir, writeSeeds } from './harness.js';

const GRACE_MS = 10_000; // the judge's default: a lease issued before the command may still start

/** A site of `n` pages in a chain, so it keeps a host busy for about n seconds. */
function chain(host: string, n: number): SiteSpec {
  const pages: Record<string, PageSpec> = {};
  for (let i = 0; i < n; i++)
    pages[i === 0 ? '/' : `/p${i}.html`] = { title: `${host} ${i}`, links: [`/p${i + 1}.html`] };
  return { host, seed: true, robots: { status: 200, body: 'User-agent: *\nDisallow:\n' }, pages };
}

test(
  'block and slow issued mid-crawl: the judge, given the commands, finds nothing fetched against them',
  { timeout: 180_000 },
  async () => {
    const web = await SyntheticWeb.start({ sites: [chain('slowed.test', 30), chain('blocked.test', 30)] });
    const dir = tempDir('controls-judged');
    const data = join(dir, 'data');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const { exited } = startCli(crawlArgs(seeds, data, ['--duration', '45', '--quiet']));
      await sleep(3000);
      const control = (args: string[]) => startCli(['control', ...args, '--data', data]).exited;
      const slowed = await control(['slow', 'slowed.test', '--min-gap', '2500']);
      assert.equal(slowed.code, 0, slowed.stderr);
      const slowAt = Date.now();
      const blocked = await control(['block', 'blocked.test']);
      assert.equal(blocked.code, 0, blocked.stderr);
      const blockAt = Date.now();
      const run = await exited;
      assert.equal(run.code, 0, run.stderr);

      const log = web.requests();
      const controls: ControlEvent[] = [
        { at: slowAt, site: 'slowed.test', action: 'SLOW', minGapMs: 2500 },
        { at: blockAt, site: 'blocked.test', action: 'BLOCK' },
      ];
      const report = checkPoliteness(log, web.sites, {
        userAgent: 'crawlstream',
        ipOf: web.ipOf,
        controls,
        controlGraceMs: GRACE_MS,
      });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));

      // not vacuous: the slowed host kept being fetched under the SLOW, the blocked one had been fetched before
      const bound = log.filter((e) => e.host === 'slowed.test' && e.start >= slowAt + GRACE_MS);
      assert.ok(bound.length >= 3, `only ${bound.length} requests to slowed.test fell under the SLOW`);
      assert.ok(log.filter((e) => e.host === 'blocked.test').length >= 2, 'blocked.test was never fetched');
      const stricter = checkPoliteness(log, web.sites, {
        userAgent: 'crawlstream',
        controls: [{ ...controls[0]!, minGapMs: 4000 }, controls[1]!],
        controlGraceMs: GRACE_MS,
      });
      assert.ok(
        stricter.violations.some((v) => v.kind === 'control-slow'),
        'a SLOW of 4 s would have been broken: the judge sees the gaps',
      );
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
