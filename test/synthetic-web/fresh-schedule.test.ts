import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidOptionError } from '../../core/errors.js';
import { changesBetween, freshLayout, versionAt, type FreshWebOptions } from '../../synthetic-web/fresh-schedule.js';
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

// seed 6 gives this one-host web's bursty page phase 10: bursts at 60, 65, 70; 110, 115, 120; …
const bursty = freshLayout({
  seed: 6,
  hosts: 1,
  perHost: { fast: 0, slow: 0, never: 0, cosmetic: 0, bursty: 1 },
  sitemapOnly: 0,
  burstySec: [50, 50],
  burstChanges: 3,
  burstGapSec: 5,
}).pages.find((p) => p.changeClass === 'bursty')!;

test('a bursty page changes burstChanges times burstGapSec apart at the start of each cycle, then stays quiet', () => {
  assert.deepEqual([bursty.periodSec, bursty.phaseSec, bursty.burst], [50, 10, { changes: 3, gapSec: 5 }]);
  assert.deepEqual(changesBetween(bursty, [], 0, 170), [60, 65, 70, 110, 115, 120, 160, 165, 170]);
  assert.deepEqual(changesBetween(bursty, [], 62, 112), [65, 70, 110], 'from inside a burst');
  assert.deepEqual(changesBetween(bursty, [], 70, 109), [], 'between bursts');
  assert.deepEqual(changesBetween(bursty, [90], 60, 110), [65, 70, 90, 110], 'with a bump');
  assert.deepEqual(versionAt(bursty, [], 69), { version: 2, sinceSec: 65 });
  assert.deepEqual(versionAt(bursty, [], 109), { version: 3, sinceSec: 70 });
});

test('bursty pages take their cycle from burstySec and a burst of 4 changes 5 s apart by default; no other page has a burst', () => {
  assert.ok(freshLayout({ seed: 6, hosts: 4 }).pages.every((p) => p.burst === undefined));
  const layout = freshLayout({ hosts: 2, perHost: { bursty: 2 } });
  const pages = layout.pages.filter((p) => p.changeClass === 'bursty');
  assert.equal(pages.length, 4);
  for (const p of pages) {
    assert.deepEqual(p.burst, { changes: 4, gapSec: 5 });
    assert.ok(p.periodSec >= 120 && p.periodSec <= 300 && p.phaseSec < p.periodSec);
  }
});

test('burst options are checked: a burst must end before the next one begins', () => {
  refused({ burstChanges: 0 }, 'burstChanges must be an integer ≥ 1, got 0');
  refused({ burstGapSec: 0.5 }, 'burstGapSec must be an integer ≥ 1, got 0.5');
  refused({ burstySec: [60, 30] }, 'burstySec[1] must be an integer ≥ 60, got 30');
  refused(
    { burstySec: [15, 40], burstChanges: 4, burstGapSec: 5 },
    'a burst, (burstChanges − 1) × burstGapSec = 15 s, must end before the next begins: burstySec[0] must be > 15, got 15',
  );
  assert.doesNotThrow(() => freshLayout({ burstySec: [16, 40], burstChanges: 4, burstGapSec: 5 }));
});
