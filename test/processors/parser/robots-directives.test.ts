import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { robotsContent, xRobotsTag } from '../../../processors/parser/robots-directives.js';
import { extractLinks } from '../../../processors/parser/extract-links.js';
import { charsetWeb, robotsTagExpectations } from '../../../synthetic-web/charset-pages.js';
import { renderPage } from '../../../synthetic-web/sites.js';
import { fetchedPageFor } from './fetched-page.js';
import { ParserTasks } from './parser-tasks.js';

const none = { noindex: false, nofollow: false };

test('X-Robots-Tag without an agent applies to every crawler; none is noindex and nofollow', () => {
  assert.deepEqual(xRobotsTag(['nofollow'], 'crawlstream'), { noindex: false, nofollow: true });
  assert.deepEqual(xRobotsTag(['NoIndex, NOFOLLOW'], 'crawlstream'), { noindex: true, nofollow: true });
  assert.deepEqual(xRobotsTag(['none'], 'crawlstream'), { noindex: true, nofollow: true });
  assert.deepEqual(xRobotsTag(['noarchive, nosnippet, max-snippet: 20, index, follow, all'], 'crawlstream'), none);
  assert.deepEqual(xRobotsTag([], 'crawlstream'), none);
});

test('X-Robots-Tag with an agent prefix applies only to that agent, matched case-insensitively', () => {
  assert.deepEqual(xRobotsTag(['crawlstream: nofollow'], 'crawlstream'), { noindex: false, nofollow: true });
  assert.deepEqual(xRobotsTag(['CrawlStream:noindex'], 'crawlstream'), { noindex: true, nofollow: false });
  assert.deepEqual(xRobotsTag(['otherbot: nofollow'], 'crawlstream'), none);
  // the prefix scopes the rules after it in the same value
  assert.deepEqual(xRobotsTag(['otherbot: noindex, nofollow'], 'crawlstream'), none);
  assert.deepEqual(xRobotsTag(['noindex, otherbot: nofollow'], 'crawlstream'), { noindex: true, nofollow: false });
  assert.deepEqual(xRobotsTag(['otherbot: noindex, crawlstream: nofollow'], 'crawlstream'), {
    noindex: false,
    nofollow: true,
  });
  // another crawler with another token reads the same headers its own way
  assert.deepEqual(xRobotsTag(['otherbot: nofollow'], 'OtherBot'), { noindex: false, nofollow: true });
});

test('several X-Robots-Tag headers combine, and a rule with a value is not taken for an agent', () => {
  assert.deepEqual(xRobotsTag(['otherbot: noindex', 'nofollow'], 'crawlstream'), { noindex: false, nofollow: true });
  assert.deepEqual(xRobotsTag(['unavailable_after: 25 Jun 2010 15:00:00 PST', 'noindex'], 'crawlstream'), {
    noindex: true,
    nofollow: false,
  });
  assert.deepEqual(xRobotsTag(['unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow'], 'crawlstream'), {
    noindex: false,
    nofollow: true,
  });
});

test('meta robots content lists rules separated by commas or spaces', () => {
  assert.deepEqual(robotsContent('noindex,follow'), { noindex: true, nofollow: false });
  assert.deepEqual(robotsContent('NOINDEX NOFOLLOW'), { noindex: true, nofollow: true });
  assert.deepEqual(robotsContent(' none '), { noindex: true, nofollow: true });
  assert.deepEqual(robotsContent('index, follow, noimageindex'), none);
});

test('<meta name> for our own token counts like meta robots; other agents’ metas do not', () => {
  const page = (metas: string) =>
    extractLinks(`<html lang=" de-CH "><head>${metas}</head><body><a href="/x">x</a></body></html>`, 'http://a.test/', {
      robotsToken: 'crawlstream',
    });
  const ours = page('<meta name="CrawlStream" content="nofollow"><meta name="googlebot" content="noindex">');
  assert.deepEqual([ours.noindex, ours.nofollow], [false, true]);
  const robots = page('<meta name="robots" content="noindex"><meta name="crawlstream" content="nofollow">');
  assert.deepEqual([robots.noindex, robots.nofollow], [true, true]);
  assert.equal(robots.lang, 'de-CH');
  const other = page('<meta name="otherbot" content="none">');
  assert.deepEqual([other.noindex, other.nofollow], [false, false]);
  assert.equal(extractLinks('<html lang=""><p>x', 'http://a.test/').lang, undefined);
});

test('through the parser: X-Robots-Tag or meta nofollow emits no links, another agent’s nofollow does; noindex is recorded, the page archived', async () => {
  const port = 8080;
  const site = charsetWeb().find((s) => s.host === 'robots-tag.test')!;
  const expected = robotsTagExpectations();
  const urlOf = (p: string) => `http://robots-tag.test:${port}${p}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-robots-'));
  let clock = Date.parse('2026-06-01T12:00:00Z');
  try {
    const tasks = await ParserTasks.open(dir, 2);
    const paths = [...expected.noindex, ...expected.indexed];
    for (const p of paths) {
      const spec = site.pages[p]!;
      const body = Buffer.from(renderPage(spec, { port, host: site.host, path: p, pageHits: 1 }));
      const headers = [
        { name: 'Content-Type', value: spec.contentType ?? 'text/html; charset=utf-8' },
        ...Object.entries(spec.headers ?? {}).map(([name, value]) => ({ name, value })),
      ];
      const page = fetchedPageFor(urlOf(p), {
        leaseId: `l-${p}`,
        host: site.host,
        site: site.host,
        fetchedAt: (clock += 1_000),
        requestHead: `GET ${p} HTTP/1.1\r\n\r\n`,
        headers,
        body,
      });
      tasks.fetched(page);
      tasks.drain();
    }
    tasks.commit();
    await tasks.close();
    assert.equal(tasks.records.length, paths.length);
    for (const p of paths) {
      const record = tasks.records.find((r) => r.url === urlOf(p))!;
      assert.equal(record.noindex, expected.noindex.includes(p), `${p} noindex`);
      assert.ok(record.warcFile !== null && record.warcOffset !== null, `${p} is archived`);
      assert.equal(record.charset, 'UTF-8');
      const linked = tasks.links.filter((b) => b.sourceUrl === urlOf(p)).flatMap((b) => b.links);
      if (expected.followedFrom.includes(p)) assert.ok(linked.length > 0, `${p}: links followed`);
      else assert.deepEqual(linked, [], `${p}: no links followed`);
      assert.equal(record.outlinkCount, linked.length);
    }
    // Content-Language gives the language when the page has no <html lang>
    assert.equal(tasks.records.find((r) => r.url === urlOf('/xrt-noindex.html'))!.language, 'de-DE');
    assert.equal(tasks.records.find((r) => r.url === urlOf('/xrt-other.html'))!.language, null);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
