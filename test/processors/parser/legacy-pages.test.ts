import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeHtml, sniffCharset, type CharsetSource } from '../../../processors/parser/charset.js';
import { extractLinks } from '../../../processors/parser/extract-links.js';
import { simhash64 } from '../../../processors/parser/simhash.js';
import {
  CHARSET_VARIANTS,
  charsetLinkRequests,
  charsetWeb,
  encodeLegacy,
} from '../../../synthetic-web/charset-pages.js';
import { renderPage, type PageSpec } from '../../../synthetic-web/sites.js';
import type { FetchedPage } from '../../../schemas/types.js';
import { fetchedPageFor } from './fetched-page.js';
import { ParserTasks } from './parser-tasks.js';

const PORT = 8080;
const sites = charsetWeb();
const hostOf = (p: string): string => CHARSET_VARIANTS.find((v) => v.path === p)!.host;
const urlOf = (p: string): string => `http://${hostOf(p)}:${PORT}${p}`;

function served(p: string): { spec: PageSpec; body: Buffer } {
  const site = sites.find((s) => s.host === hostOf(p))!;
  const spec = site.pages[p]!;
  const body = renderPage(spec, { port: PORT, host: site.host, path: p, pageHits: 1 });
  return { spec, body: Buffer.from(body) };
}

/** What the parser makes of a served page: its encoding, and text, SimHash and links from the decoded text. */
function parse(p: string) {
  const { spec, body } = served(p);
  const sniffed = sniffCharset(body, spec.contentType ?? null);
  const extracted = extractLinks(decodeHtml(body, sniffed), urlOf(p), { encoding: sniffed.encoding });
  return { sniffed, extracted, simhash: simhash64(extracted.text) };
}

/** A link's query, percent-decoded in `encoding`, `&#NNNN;` (an unencodable character) read back. */
function queryText(url: string, encoding: string): string {
  const q = new URL(url).search.slice(1);
  const bytes = Buffer.from(
    q.replace(/%([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
    'latin1',
  );
  return decodeHtml(bytes, { encoding, source: 'header', bomLength: 0 }).replace(/&#(\d+);/g, (_, n: string) =>
    String.fromCodePoint(Number(n)),
  );
}

const twinOf = (v: (typeof CHARSET_VARIANTS)[number]) =>
  CHARSET_VARIANTS.find(
    (o) => o.article === v.article && o.encoding === 'UTF-8' && o.declaration !== 'bom-over-header',
  )!;

const SOURCE: Record<string, CharsetSource> = {
  header: 'header',
  'header-over-meta': 'header',
  meta: 'meta',
  'http-equiv': 'meta',
  'bom-over-header': 'bom',
  none: 'default',
};

test('the test web writes its legacy pages in the encodings they declare (known byte values)', () => {
  assert.deepEqual([...encodeLegacy('日本語ｱ', 'Shift_JIS')], [0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea, 0xb1]);
  assert.deepEqual([...encodeLegacy('中文€', 'GBK')], [0xd6, 0xd0, 0xce, 0xc4, 0x80]);
  assert.deepEqual([...encodeLegacy('café €“', 'windows-1252')], [0x63, 0x61, 0x66, 0xe9, 0x20, 0x80, 0x93]);
  for (const v of CHARSET_VARIANTS.filter((o) => o.encoding !== 'UTF-8'))
    assert.ok(
      !served(v.path).body.equals(served(twinOf(v).path).body),
      `${v.path} differs from its UTF-8 twin in bytes`,
    );
});

test('windows-1252, Shift_JIS and GBK pages give the text, title, language and SimHash of the same page in UTF-8', () => {
  for (const v of CHARSET_VARIANTS) {
    const page = parse(v.path);
    const twin = parse(twinOf(v).path);
    assert.equal(page.sniffed.encoding, v.declaration === 'bom-over-header' ? 'UTF-8' : v.encoding, v.path);
    assert.equal(page.sniffed.source, SOURCE[v.declaration], v.path);
    assert.ok(page.extracted.text.length > 100 && !page.extracted.text.includes('\uFFFD'), v.path);
    assert.equal(page.extracted.text, twin.extracted.text, v.path);
    assert.equal(page.extracted.title, twin.extracted.title, v.path);
    assert.equal(page.extracted.lang, v.article.lang, v.path);
    assert.ok(page.simhash !== undefined, v.path);
    assert.deepEqual(page.simhash, twin.simhash, v.path);
  }
});

test('their links are those of the UTF-8 page: the same paths, and queries naming the same characters in the page encoding', () => {
  for (const v of CHARSET_VARIANTS) {
    const page = parse(v.path);
    const twin = parse(twinOf(v).path);
    const links = page.extracted.links.map((l) => l.url);
    const twinLinks = twin.extracted.links.map((l) => l.url);
    assert.equal(links.length, v.article.hrefs.length, v.path);
    assert.equal(links.length, twinLinks.length, v.path);
    for (let i = 0; i < links.length; i++) {
      const [mine, theirs] = [new URL(links[i]!), new URL(twinLinks[i]!)];
      assert.equal(mine.pathname, theirs.pathname, `${v.path}: paths are UTF-8 in every page`);
      assert.equal(queryText(links[i]!, page.sniffed.encoding), queryText(twinLinks[i]!, 'UTF-8'), v.path);
      const nonAsciiQuery = /\?.*[^ -~]/.test(v.article.hrefs[i]!) || v.article.hrefs[i]!.includes('&#');
      if (page.sniffed.encoding !== 'UTF-8' && nonAsciiQuery)
        assert.notEqual(mine.search, theirs.search, `${v.path}: the query is encoded in ${page.sniffed.encoding}`);
      else assert.equal(mine.search, theirs.search, v.path);
    }
  }
});

test('the parser’s link queries are the bytes the test web’s own encoder writes for the page encoding', () => {
  const requests = charsetLinkRequests();
  for (const v of CHARSET_VARIANTS) {
    const links = parse(v.path).extracted.links.map((l) => {
      const u = new URL(l.url);
      return u.pathname + u.search;
    });
    assert.deepEqual(links, requests[v.path], v.path);
  }
});

let clock = Date.parse('2026-06-01T12:00:00Z');
function fetched(url: string, contentType: string | undefined, body: Buffer): FetchedPage {
  return fetchedPageFor(url, {
    leaseId: `l-${clock}`,
    fetchedAt: (clock += 1_000),
    headers: contentType === undefined ? [] : [{ name: 'Content-Type', value: contentType }],
    body,
  });
}

test('through the parser processor, legacy pages are recorded with their charset and language and the SimHash of their UTF-8 twins', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-charset-'));
  // near copies are found within a site: the first page of an article on each site is its original there
  const originalOf = (v: (typeof CHARSET_VARIANTS)[number]) =>
    CHARSET_VARIANTS.find((o) => o.article === v.article && o.host === v.host)!;
  try {
    const tasks = await ParserTasks.open(dir, 2);
    for (const v of CHARSET_VARIANTS) {
      const { spec, body } = served(v.path);
      tasks.fetched(fetched(urlOf(v.path), spec.contentType, body));
      tasks.drain();
    }
    tasks.commit();
    await tasks.close();
    const record = (p: string) => tasks.records.find((r) => r.url === urlOf(p))!;
    for (const v of CHARSET_VARIANTS) {
      const r = record(v.path);
      const original = originalOf(v);
      assert.equal(r.charset, v.declaration === 'bom-over-header' ? 'UTF-8' : v.encoding, v.path);
      assert.equal(r.language, v.article.lang, v.path);
      assert.equal(r.noindex, false, v.path);
      assert.ok(r.simhash !== null, v.path);
      assert.deepEqual(r.simhash, record(twinOf(v).path).simhash, v.path);
      assert.equal(
        r.duplicateOf,
        v === original ? null : urlOf(original.path),
        `${v.path}: the same text as ${original.path}`,
      );
      const linked = tasks.links.filter((b) => b.sourceUrl === urlOf(v.path)).flatMap((b) => b.links.map((l) => l.url));
      const expected = v === original ? parse(v.path).extracted.links.map((l) => l.url) : [];
      assert.deepEqual(linked.sort(), expected.sort(), v.path);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('an exact copy of a legacy page, not parsed again, is recorded with the charset and language of its first record', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-charset-copy-'));
  try {
    const tasks = await ParserTasks.open(dir, 2);
    const { spec, body } = served('/ja/sjis-meta.html');
    tasks.fetched(fetched(urlOf('/ja/sjis-meta.html'), spec.contentType, body));
    tasks.fetched(fetched('http://mirror.test/ja.html', spec.contentType, body));
    tasks.drain();
    tasks.commit();
    await tasks.close();
    const copy = tasks.records.find((r) => r.url === 'http://mirror.test/ja.html')!;
    assert.equal(copy.duplicateOf, urlOf('/ja/sjis-meta.html'));
    assert.equal(copy.charset, 'Shift_JIS');
    assert.equal(copy.language, 'ja');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a page without Content-Type is parsed as HTML when its markup follows a UTF-8 byte order mark', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-charset-bom-'));
  try {
    const tasks = await ParserTasks.open(dir, 1);
    const { body } = served('/fr/bom.html');
    assert.deepEqual([...body.subarray(0, 4)], [0xef, 0xbb, 0xbf, 0x3c]);
    tasks.fetched(fetched('http://bare.test/fr.html', undefined, body));
    tasks.drain();
    tasks.commit();
    await tasks.close();
    const record = tasks.records[0]!;
    assert.equal(record.charset, 'UTF-8');
    assert.deepEqual(record.simhash, parse('/fr/utf8.html').simhash);
    assert.ok(record.outlinkCount > 0);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
