import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { FakeFetcher, seedLinks } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

const HOUR = 3_600_000;

test('robots.txt is trusted for 24 h: a URL found a minute before is fetched on the old rules, one found a minute after waits for a fresh robots.txt whose rules then apply', async () => {
  const config = validateCrawlConfig({});
  assert.equal(config.robotsTtlMs, 24 * HOUR, 'the default time to live');
  const h = await FrontierHarness.open(config);
  try {
    let robotsFetches = 0;
    const web = new FakeFetcher(h, (r) => {
      if (r.kind !== 'ROBOTS') return {};
      // the site's rules change in between: the new ones forbid /later
      const body = ++robotsFetches === 1 ? 'User-agent: *\nDisallow: /private\n' : 'User-agent: *\nDisallow: /later\n';
      return { status: 200, robotsBody: body };
    });
    seedLinks(h, 'rules.test', ['http://rules.test/first']);
    await web.run(10_000);
    const robotsAt = web.log[0]!.end;
    await web.run(robotsAt + 24 * HOUR - 60_000 - h.clock, 60_000);
    seedLinks(h, 'rules.test', ['http://rules.test/later-1']);
    await web.run(10_000);
    await web.run(robotsAt + 24 * HOUR + 60_000 - h.clock, 10_000);
    seedLinks(h, 'rules.test', ['http://rules.test/later-2', 'http://rules.test/open']);
    await web.run(10_000);
    assert.deepEqual(
      web.log.map((f) => new URL(f.request.url).pathname),
      ['/robots.txt', '/first', '/later-1', '/robots.txt', '/open'],
    );
  } finally {
    await h.close();
  }
});
