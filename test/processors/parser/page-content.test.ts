import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultCrawlConfig, validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { extractLinks, MAX_ANCHOR_CHARS } from '../../../processors/parser/extract-links.js';
import { analyzeHtml } from '../../../processors/parser/html-analysis.js';
import { cutUtf8, pageContent, pageContentMaxBytes } from '../../../processors/parser/page-content.js';
import { frame } from '../../../core/serde.js';
import { M } from '../../../core/metric-catalogue.js';
import { loadSchema } from '../../../schemas/index.js';
import type { FetchedPage, PageContent } from '../../../schemas/types.js';
import { prose } from '../../../synthetic-web/sites.js';
import { fetchedPageFor } from './fetched-page.js';
import { ParserTasks } from './parser-tasks.js';

const MAIN = { mainTextChars: 256 * 1024 };

test('links carry their anchor text, an image alt inside the anchor, an area alt and their rel', () => {
  const r = extractLinks(
    `<a href="/a" rel="nofollow ugc">Read  <b>the</b>
     story</a><a href="/b"><img src="x.png" alt="Logo"></a><map><area href="/c" alt="Map area"></map>
     <a href="/d"></a><a href="/d">second anchor</a><a href="/e">${'x'.repeat(1000)}</a>`,
    'http://a.test/',
  );
  const byUrl = Object.fromEntries(r.links.map((l) => [l.url.replace('http://a.test', ''), l]));
  assert.equal(byUrl['/a']?.anchor, 'Read the story');
  assert.equal(byUrl['/a']?.rel, 'nofollow ugc');
  assert.equal(byUrl['/a']?.nofollow, true);
  assert.equal(byUrl['/b']?.anchor, 'Logo');
  assert.equal(byUrl['/b']?.rel, undefined);
  assert.equal(byUrl['/c']?.anchor, 'Map area');
  assert.equal(byUrl['/d']?.anchor, 'second anchor', 'an empty first anchor gives way to a later one');
  assert.equal(byUrl['/e']?.anchor?.length, MAX_ANCHOR_CHARS);
});

test('the main text is that of main/article when the page marks one, else the visible text without nav, header, footer and aside', () => {
  const chrome = `<header><h1>Site name</h1></header><nav><a href="/x">Menu item</a></nav>
    <div role="navigation">Breadcrumb <div>trail</div></div><aside>Sidebar</aside><footer>Copyright</footer>`;
  const marked = extractLinks(
    `<html><head><meta name="description" content="  About   the harbour "></head><body>${chrome}
     <article><header><h2>Article head</h2></header><p>Harbour reopens.</p></article><p>Outside</p></body></html>`,
    'http://a.test/',
    MAIN,
  );
  assert.equal(marked.description, 'About the harbour');
  // a header inside the article is boilerplate too: its text is dropped with the rest
  assert.equal(marked.mainText, 'Harbour reopens.');
  assert.equal(marked.mainTextTruncated, false);
  const unmarked = extractLinks(
    `<body>${chrome}<div><p>Plain page.</p><script>var x = 1;</script><p>Second <em>para</em>.</p></div></body>`,
    'http://a.test/',
    MAIN,
  );
  assert.equal(unmarked.mainText, 'Plain page. Second para.');
  // the visible text (SimHash's input) is unchanged: it keeps the page furniture
  assert.match(unmarked.text, /Menu item.*Breadcrumb trail.*Sidebar.*Copyright/);
  assert.equal(extractLinks('<p>x</p>', 'http://a.test/').mainText, undefined, 'not collected unless asked');
});

test('a main text longer than its cap is cut there and flagged', () => {
  const long = prose('long', 5000);
  const r = extractLinks(`<main><p>${long}</p></main>`, 'http://a.test/', { mainTextChars: 1000 });
  assert.equal(r.mainTextTruncated, true);
  assert.ok(r.mainText!.length <= 1000 && long.startsWith(r.mainText!));
});

test('cutUtf8 cuts on a character boundary within the byte cap', () => {
  assert.deepEqual(cutUtf8('abc', 3), { text: 'abc', truncated: false });
  const cut = cutUtf8('café café', 4); // "caf" + é (2 bytes) does not fit in 4
  assert.deepEqual(cut, { text: 'caf', truncated: true });
  const emoji = cutUtf8('😀😀😀', 9);
  assert.equal(emoji.text, '😀😀');
  assert.ok(Buffer.byteLength(emoji.text) <= 9);
});

function page(body: string, over: Partial<FetchedPage> = {}): FetchedPage {
  return fetchedPageFor('http://a.test/page.html', { body: Buffer.from(body), ...over });
}

function analysisOf(p: FetchedPage, maxLinks = 1000) {
  return analyzeHtml({
    body: p.body,
    contentEncoding: undefined,
    contentType: 'text/html',
    url: p.url,
    maxDecodedBytes: 10 * 2 ** 20,
    maxLinks,
    robotsToken: 'crawlstream',
    mainTextChars: MAIN.mainTextChars,
  });
}

test('a page-content record with more outlinks and headers than fit is cut to fit the topic and flagged', () => {
  const config = { contentTextMaxBytes: 4096 };
  // 1,000 distinct links of ~1,900 bytes with 256-character anchors: far more than the 1 MiB of room
  const links = Array.from(
    { length: 1000 },
    (_, i) => `<a href="/${i}/${'p'.repeat(1900)}">${'é'.repeat(300)}</a>`,
  ).join('');
  const headers = Array.from({ length: 400 }, (_, i) => ({ name: `X-H${i}`, value: 'v'.repeat(1000) }));
  const p = page(`<title>T</title><main>${prose('t', 3000)}</main>${links}`, { headers });
  const content = pageContent(p, analysisOf(p), () => true, config);
  const type = loadSchema('PageContent').type;
  const encoded = frame(1, type.toBuffer({ ...content, duplicateOf: `http://a.test/${'d'.repeat(1980)}` }));
  assert.ok(encoded.length <= pageContentMaxBytes(config), `${encoded.length} bytes`);
  assert.equal(content.outlinksTruncated, true);
  assert.ok(content.outlinks.length > 100 && content.outlinks.length < 1000, `${content.outlinks.length} outlinks`);
  assert.equal(content.headersTruncated, true);
  assert.ok(content.headers.length > 0);
  assert.equal(content.textTruncated, true);
  assert.ok(Buffer.byteLength(content.text) <= 4096);
  assert.equal(content.title, 'T');

  const small = page('<title>S</title><p>short</p><a href="/x">x</a>');
  const fits = pageContent(small, analysisOf(small), () => true, config);
  assert.deepEqual([fits.outlinksTruncated, fits.headersTruncated, fits.textTruncated], [false, false, false]);
});

test('--content-text-max is refused below 0 and above 64 MiB, with its name in the message', () => {
  for (const bad of [-1, 64 * 1024 * 1024 + 1, 1.5])
    assert.throws(
      () => validateCrawlConfig({ ...defaultCrawlConfig, contentTextMaxBytes: bad }),
      /contentTextMaxBytes|content-text-max/,
    );
  validateCrawlConfig({ ...defaultCrawlConfig, contentTextMaxBytes: 0 });
});

test('the parser publishes one page-content record per parsed HTML page: followed links, nofollow pages, canonical, exact copies', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-content-'));
  let clock = Date.parse('2026-05-01T12:00:00Z');
  const fetched = (url: string, html: string, over: Partial<FetchedPage> = {}) =>
    fetchedPageFor(url, { leaseId: `l-${clock}`, fetchedAt: (clock += 1000), body: Buffer.from(html), ...over });
  const text = prose('content', 200);
  const home = `<html><head><title>Home</title><link rel="canonical" href="/"></head><body><nav><a href="/menu">Menu</a></nav>
    <main><p>${text}</p><a href="/a.html">First <i>story</i></a> <a rel="nofollow" href="/ad.html">Sponsor</a></main></body></html>`;
  const tasks = await ParserTasks.open(dir, 2);
  try {
    tasks.fetched(fetched('http://a.test/', home));
    tasks.fetched(
      fetched(
        'http://a.test/robots-nofollow.html',
        `<title>NF</title><meta name="robots" content="nofollow">${prose('nf', 100)}<a href="/b">B</a>`,
      ),
    );
    // an exact copy of the home page at another URL, and a PDF (no content)
    tasks.fetched(fetched('http://a.test/index.html', home));
    tasks.fetched(
      fetched('http://a.test/doc.pdf', '%PDF-1.4', { headers: [{ name: 'Content-Type', value: 'application/pdf' }] }),
    );
    tasks.drain();
    const byUrl = new Map<string, PageContent>(tasks.contents.map((c) => [c.url, c]));
    assert.deepEqual([...byUrl.keys()].sort(), [
      'http://a.test/',
      'http://a.test/index.html',
      'http://a.test/robots-nofollow.html',
    ]);
    assert.equal(tasks.contents.length, 3, 'one record per page');
    const h = byUrl.get('http://a.test/')!;
    assert.equal(h.title, 'Home');
    assert.equal(h.text, `${text} First story Sponsor`);
    assert.deepEqual(
      h.outlinks.map((l) => [l.url, l.anchor, l.rel, l.kind, l.followed]),
      [
        ['http://a.test/', null, null, 'canonical', false],
        ['http://a.test/menu', 'Menu', null, 'a', true],
        ['http://a.test/a.html', 'First story', null, 'a', true],
        ['http://a.test/ad.html', 'Sponsor', 'nofollow', 'a', false],
      ],
    );
    assert.deepEqual(
      h.headers.map((x) => [x.name, x.value]),
      [['Content-Type', 'text/html; charset=utf-8']],
    );
    assert.equal(h.duplicateOf, null);
    // the followed flags say what went to the frontier, and nothing else did
    const sent = tasks.links.filter((b) => b.sourceUrl === 'http://a.test/').flatMap((b) => b.links.map((l) => l.url));
    assert.deepEqual(
      sent.sort(),
      h.outlinks
        .filter((l) => l.followed)
        .map((l) => l.url)
        .sort(),
    );
    assert.deepEqual(
      byUrl.get('http://a.test/robots-nofollow.html')!.outlinks.map((l) => l.followed),
      [false],
      'meta robots nofollow unfollows every link',
    );
    const copy = byUrl.get('http://a.test/index.html')!;
    assert.equal(copy.duplicateOf, 'http://a.test/');
    assert.equal(copy.title, 'Home');
    assert.equal(copy.text, h.text);
    assert.ok(copy.outlinks.length === 4 && copy.outlinks.every((l) => !l.followed), 'a copy follows no link');
    // page-content records are keyed and timed like their page records
    for (const c of tasks.contents) {
      const record = tasks.records.find((r) => r.url === c.url)!;
      assert.deepEqual(
        [c.site, c.fetchTime, c.visit, c.status],
        [record.site, record.fetchTime, record.visit, record.status],
      );
    }
  } finally {
    await tasks.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a text cut at --content-text-max is flagged on the record and counted by crawlstream_page_content_cut', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-content-cut-'));
  const tasks = await ParserTasks.open(dir, 1, { ...defaultCrawlConfig, contentTextMaxBytes: 100 });
  try {
    tasks.fetched(fetchedPageFor('http://a.test/long.html', { body: Buffer.from(`<p>${prose('long', 500)}</p>`) }));
    tasks.fetched(fetchedPageFor('http://a.test/short.html', { body: Buffer.from('<p>short</p>') }));
    tasks.drain();
    const long = tasks.contents.find((c) => c.url.endsWith('/long.html'))!;
    assert.equal(long.textTruncated, true);
    assert.ok(Buffer.byteLength(long.text) <= 100 && prose('long', 500).startsWith(long.text));
    assert.equal(tasks.contents.find((c) => c.url.endsWith('/short.html'))!.textTruncated, false);
    assert.equal(tasks.metrics.counter(M.pageContentCut, 'text'), 1);
    assert.equal(tasks.metrics.counter(M.pageContentCut, 'outlinks'), 0);
  } finally {
    await tasks.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
