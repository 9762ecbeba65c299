import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { standardExpectations } from '../../synthetic-web/standard-web.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import {
  countByUrl,
  crawlArgs,
  exportPageRecords,
  finallyFetchedUrls,
  removeDir,
  startCli,
  tempDir,
  warcioCheck,
  writeSeeds,
} from './harness.js';
import { assertCopiesRecorded, warcRevisits } from './duplicates.js';

/**
 * One crawl of the whole test web with `extra` options; asserts politeness, coverage, one page
 * record per URL, valid WARC files, and that mirror copies and the news article's editions are
 * recorded as copies (exact ones as WARC revisits) and nothing else is.
 */
async function crawlTestWeb(t: TestContext, extra: string[]): Promise<void> {
  const web = await SyntheticWeb.start();
  const dir = tempDir('crawl');
  try {
    const seeds = writeSeeds(dir, web.seedUrls());
    // the image link is let past the default suffix filter (which would never request it, as
    // test/e2e/scope.test.ts shows) so that it reaches --accept-type, which refuses it by its headers
    const { exited } = startCli(crawlArgs(seeds, join(dir, 'data'), ['--allow-extension', 'png', ...extra]));
    const run = await exited;
    assert.equal(run.code, 0, `crawl exited ${run.code}\n${run.stderr}`);
    assert.match(run.stdout, /crawl stopped \(idle\)/);

    const log = web.requests();
    const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf });
    assert.deepEqual(report.violations, [], formatPolitenessReport(report));

    // every page a correct crawler must fetch was fetched; none it must skip was
    const byHost = new Map<string, Set<string>>();
    for (const e of log) {
      if (!byHost.has(e.host)) byHost.set(e.host, new Set());
      byHost.get(e.host)!.add(e.path);
    }
    for (const [host, expected] of Object.entries(standardExpectations())) {
      const seen = byHost.get(host) ?? new Set<string>();
      for (const path of expected.fetch) assert.ok(seen.has(path), `${host}${path} was never fetched`);
      for (const pattern of expected.never) {
        const hit = [...seen].find((p) => (pattern.endsWith('*') ? p.startsWith(pattern.slice(0, -1)) : p === pattern));
        assert.equal(hit, undefined, `${host}${hit} must not be fetched (rule ${pattern})`);
      }
    }

    const records = exportPageRecords(join(dir, 'data'));
    const counts = countByUrl(records);
    assert.deepEqual(
      [...counts].filter(([, n]) => n !== 1),
      [],
      'a URL has more than one page record',
    );
    assert.deepEqual(new Set(counts.keys()), finallyFetchedUrls(log, web.port));
    // a type --accept-type refuses (the test web's PDF and image) is recorded, its body neither read nor archived
    const refused = records.filter((r) => r.errorCode === 'CS_REFUSED_TYPE');
    assert.ok(refused.length > 0, 'no response was refused by type');
    for (const r of refused) assert.equal(r.warcFile, null, `${r.url} was archived though refused`);
    for (const r of records.filter((r) => r.status === 200 && r.errorCode !== 'CS_REFUSED_TYPE')) {
      assert.ok(
        r.warcFile && r.warcOffset !== null && r.payloadDigest?.startsWith('sha1:'),
        `${r.url} lacks its WARC location`,
      );
    }

    const warc = warcioCheck(join(dir, 'data', 'warc'));
    assert.ok(warc.files.length > 0, 'no WARC files written');
    assert.equal(warc.status, 0, warc.output);

    // mirror copies (another site, byte for byte) and the news article's editions are aliases of
    // their first fetch, whatever partitions their sites hash to; nothing else is
    const copies = assertCopiesRecorded(records, web.port);
    t.diagnostic(
      `${extra.join(' ') || 'default partitions'}: ${copies.exact.length + copies.near.length} of ${copies.expected} copies recorded (${copies.exact.length} exact, ${copies.near.length} near) among ${records.length} page records`,
    );
    // each byte-identical copy is a WARC revisit of the first record of its payload
    const revisits = warcRevisits(warc.files);
    assert.deepEqual(
      revisits.map((r) => [r.url, r.refersTo, r.profile]).sort(),
      copies.exact
        .map((r) => [r.url, r.duplicateOf, 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest'])
        .sort(),
    );
  } finally {
    await web.close();
    removeDir(dir);
  }
}

test('crawl --until-idle fetches the whole test web politely and records every page once', { timeout: 180_000 }, (t) =>
  crawlTestWeb(t, []),
);

test(
  'with 8 partitions the crawl records the same copies: exact duplicates are found across partitions',
  { timeout: 180_000 },
  (t) => crawlTestWeb(t, ['--partitions', '8']),
);

test(
  'running the same crawl again on its data dir resumes and fetches nothing twice',
  { timeout: 180_000 },
  async () => {
    const web = await SyntheticWeb.start();
    const dir = tempDir('resume');
    try {
      const seeds = writeSeeds(dir, web.seedUrls());
      const first = await startCli(crawlArgs(seeds, join(dir, 'data'), ['--max-pages', '10'])).exited;
      assert.equal(first.code, 0, first.stderr);
      const afterFirst = web.requests().length;
      assert.ok(afterFirst > 0 && afterFirst < 70, `first run made ${afterFirst} requests`);
      const second = await startCli(crawlArgs(seeds, join(dir, 'data'))).exited;
      assert.equal(second.code, 0, second.stderr);
      const log = web.requests();
      assert.ok(log.length > afterFirst, 'the second run fetched nothing');
      const counts = countByUrl(exportPageRecords(join(dir, 'data')));
      assert.deepEqual(
        [...counts].filter(([, n]) => n !== 1),
        [],
      );
      assert.deepEqual(new Set(counts.keys()), finallyFetchedUrls(log, web.port));
      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream', ipOf: web.ipOf });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
