import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { crawlArgs, exportPageRecords, removeDir, startCli, tempDir, writeSeeds } from './harness.js';
import { fetchedPaths, forbiddenRequests, SCOPE_OPTIONS, scopeWeb } from './scope-web.js';

test(
  'with --scope seed-sites, a deny rule and the default suffixes, no request reaches an unseeded site, a binary or a denied path; a later seed widens the persisted scope',
  { timeout: 240_000 },
  async (t) => {
    const web = await SyntheticWeb.start({ sites: scopeWeb() });
    const dir = tempDir('scope');
    const data = join(dir, 'data');
    try {
      const first = await startCli(crawlArgs(writeSeeds(dir, web.seedUrls()), data, SCOPE_OPTIONS)).exited;
      assert.equal(first.code, 0, first.stderr);
      t.diagnostic(first.stdout.trim());
      const log = web.requests();
      assert.deepEqual(forbiddenRequests(log, ['news.test']), [], 'requests out of scope or filtered');
      // what is in scope was crawled, subdomain and redirect included: the test could have failed
      const fetched = fetchedPaths(log);
      for (const page of ['news.test/', 'news.test/a', 'news.test/b', 'news.test/away', 'blog.news.test/'])
        assert.ok(fetched.has(page), `${page} was not fetched`);
      for (const rule of ['scope', 'extension', 'deny re:/private/'])
        assert.match(first.stdout, new RegExp(`refused \\{${rule.replace(/[/.]/g, '\\$&')}\\}\\s+[1-9]`), rule);
      // the redirect out of scope is recorded, not followed
      const away = exportPageRecords(data).find((r) => r.url === web.url('news.test', '/away'));
      assert.equal(away?.status, 301);
      assert.equal(away?.redirectTarget, web.url('elsewhere.test', '/landing'));

      // a second run on the same data seeds other.test: its home links to news.test/c (in the
      // scope the first run stored) and to third.test (in nobody's)
      const before = log.length;
      const second = await startCli(crawlArgs(writeSeeds(dir, [web.url('other.test')]), data, SCOPE_OPTIONS)).exited;
      assert.equal(second.code, 0, second.stderr);
      t.diagnostic(second.stdout.trim());
      const later = web.requests().slice(before);
      const paths = fetchedPaths(later);
      assert.ok(paths.has('other.test/'), 'the new seed was not fetched');
      assert.ok(paths.has('news.test/c'), 'a link into the first run’s scope was refused after the restart');
      assert.deepEqual(forbiddenRequests(later, ['news.test', 'other.test']), [], 'requests out of the widened scope');
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
