import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidOptionError } from '../../core/errors.js';
import { freshLayout, type FreshWebOptions } from '../../synthetic-web/fresh-schedule.js';
import { freshWeb } from '../../synthetic-web/fresh-web.js';

const refused = (options: FreshWebOptions, message: string): void =>
  assert.throws(
    () => freshLayout(options),
    (err: unknown) => err instanceof InvalidOptionError && err.message === message,
    message,
  );

test('the first four hosts keep their names; further hosts are site5.fresh.test, site6.fresh.test, …', () => {
  const { hosts, feedHost } = freshLayout({ hosts: 12 });
  assert.deepEqual(hosts, [
    'news.fresh.test',
    'shop.fresh.test',
    'docs.fresh.test',
    'wiki.fresh.test',
    ...Array.from({ length: 8 }, (_, i) => `site${i + 5}.fresh.test`),
  ]);
  assert.equal(feedHost, 'news.fresh.test');
  assert.equal(freshLayout({ hosts: 100 }).hosts.at(-1), 'site100.fresh.test');
});

test('a layout with more hosts begins with the layout with fewer, so existing webs stay as they were', () => {
  for (const seed of [1, 11, 33]) {
    const few = freshLayout({ seed, hosts: 3 });
    const many = freshLayout({ seed, hosts: 12 });
    assert.deepEqual(
      many.pages.filter((p) => few.hosts.includes(p.host)),
      few.pages,
    );
  }
});

test('every host of a 12-host web gets the whole set of pages, with paths unique on the host', () => {
  const layout = freshLayout({ hosts: 12, perHost: { fast: 2, slow: 2, never: 4, cosmetic: 0 }, sitemapOnly: 2 });
  for (const host of layout.hosts) {
    const pages = layout.pages.filter((p) => p.host === host);
    assert.equal(pages.length, 1 + 8 + 2, host);
    assert.deepEqual(
      pages.map((p) => p.changeClass),
      ['slow', 'fast', 'fast', 'slow', 'slow', 'never', 'never', 'never', 'never', 'never', 'slow'],
    );
    assert.equal(new Set(pages.map((p) => p.path)).size, pages.length, host);
  }
});

test('a host holds up to 100 pages besides its home page, each with its own name', () => {
  const layout = freshLayout({ hosts: 1, perHost: { fast: 0, slow: 0, never: 90, cosmetic: 0 }, sitemapOnly: 10 });
  assert.equal(new Set(layout.pages.map((p) => p.path)).size, 101);
  refused(
    { hosts: 1, perHost: { fast: 0, slow: 0, never: 91, cosmetic: 0 }, sitemapOnly: 10 },
    'perHost and sitemapOnly must add up to at most 100 pages a host (the distinct page names), got 101',
  );
});

test('a home page links every other host’s home page, and every host is served and seeded', () => {
  const web = freshWeb({ hosts: 12, epoch: 0 });
  assert.deepEqual(
    web.sites.map((s) => [s.host, s.seed]),
    web.layout.hosts.map((h) => [h, true]),
  );
  const home = web.page('site7.fresh.test', '/')!;
  const html = web.htmlAt(home, 0, 80);
  for (const host of web.layout.hosts)
    assert.equal(html.includes(`href="http://${host}:80/"`), host !== 'site7.fresh.test', host);
});

test('host counts and page counts are checked, with the value refused in the message', () => {
  refused({ hosts: 0 }, 'hosts must be an integer ≥ 1, got 0');
  refused({ hosts: 2.5 }, 'hosts must be an integer ≥ 1, got 2.5');
  refused({ hosts: 101 }, 'hosts must be at most 100, got 101');
  refused({ perHost: { never: -1 } }, 'perHost.never must be an integer ≥ 0, got -1');
  refused({ sitemapOnly: 1.5 }, 'sitemapOnly must be an integer ≥ 0, got 1.5');
});
