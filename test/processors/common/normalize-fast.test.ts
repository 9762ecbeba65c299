import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeByParser, normalizeUrl } from '../../../processors/common/normalize.js';
import { extractLinks } from '../../../processors/parser/extract-links.js';
import { renderPage } from '../../../synthetic-web/sites.js';
import { standardWeb } from '../../../synthetic-web/standard-web.js';
import { NORMALIZE_CASES } from './normalize-cases.js';

// normalizeUrl takes a fast path for simple URLs; it must agree with the URL parser everywhere

test('the fast path agrees with the URL parser on every case of the normalization table', () => {
  for (const c of NORMALIZE_CASES) {
    assert.deepEqual(
      normalizeUrl(c.raw, c.base),
      normalizeByParser(c.raw, c.base),
      `${JSON.stringify(c.raw)} against ${c.base}`,
    );
  }
});

const SCHEMES = ['http://', 'https://', 'HTTP://', 'http:/', 'ftp://', ''];
const HOSTS = [
  'example.com',
  'www.example.co.uk',
  'a-b.example',
  'Example.com',
  'example.com.',
  'a..b.com',
  '.a.com',
  'localhost',
  '1.2.3.4',
  '0x7f.1',
  'host.123',
  'host.0x1f',
  'xn--mnchen-3ya.de',
  'münchen.de',
  'example.com:80',
  'example.com:443',
  'example.com:8080',
  'example.com:080',
  'example.com:',
  'example.com:99999',
  'user@example.com',
  '[::1]',
  'exa%6dple.com',
  '',
];
const PATHS = [
  '',
  '/',
  '/a',
  '/a/b/',
  '/a//b',
  '/a/./b',
  '/a/../b',
  '/.well-known/x',
  '/a/..b',
  '/%7euser',
  '/a%2fb',
  '/a;jsessionid=1',
  '/a;b=c',
  '/(S(abc))/x',
  '/x/(y)',
  "/it's",
  '/a b',
  '/é',
  '/a\\b',
  '/a|b',
  '/a^b',
  '/~x-y_z.html',
  '/a:b@c',
  '/a*+,!$&=',
];
const QUERIES = [
  '',
  '?',
  '?a=1',
  '?a=1&b=2',
  '?utm_source=x&a=1',
  '?a=1&&b',
  '?PHPSESSID=1',
  "?q='x'",
  '?q=%41',
  '?q=a b',
  '?q=/?:@',
  '?x=(1);y',
  '?q=é',
  '?a=1&utm_medium=y&gclid=z',
  '?q=`{}`',
  '?sid=1&sidebar=2',
];
const FRAGMENTS = ['', '#', '#top', '#a b', '#?q=1'];
const BASES = [
  'http://www.example.com/dir/page.html?x=1#top',
  'https://example.com/',
  'http://example.com:8080/a/b',
  'http://example.com/dir/',
  'http://Example.com/x',
  'http://example.com/a%20b/c',
  'http://[::1]/x',
  'http://1.2.3.4/a/b',
  'mailto:a@b.c',
  'not a url',
  'http://news.test:45678/story.html',
  'https://example.com',
  'http://example.com/(S(x))/y',
  ' http://example.com/p/',
  '\u00a0http://example.com/p/',
];
const RELATIVES = [
  'other.html',
  'a/b?c=1',
  'sub/',
  '/root.html',
  '/a/./b',
  '//cdn.example.org/x',
  '?y=2',
  '',
  '#f',
  '../up',
  './x',
  'a:b',
  'C:x',
  '1:x',
  'x?utm_source=y',
  '/x?a=1&fbclid=2#f',
  '~user/',
  '-a',
  '_b',
  'a b',
  'é',
  '/%41',
  '/a;sid=1',
  'a/../b',
  'HTTP://Other.COM',
  ' /padded ',
  'http://example.com/abs',
  'https://x.example/y?z',
];

test('the fast path agrees with the URL parser on generated absolute URLs', () => {
  let n = 0;
  for (const scheme of SCHEMES) {
    for (const host of HOSTS) {
      for (const path of PATHS) {
        for (const query of QUERIES) {
          const fragment = FRAGMENTS[n++ % FRAGMENTS.length]!;
          const raw = scheme + host + path + query + fragment;
          assert.deepEqual(normalizeUrl(raw), normalizeByParser(raw), JSON.stringify(raw));
        }
      }
    }
  }
  assert.ok(n > 50_000);
});

test('the fast path agrees with the URL parser on relative references', () => {
  for (const base of BASES) {
    for (const rel of RELATIVES) {
      for (const query of ['', '?k=v', '?utm_campaign=z&k=v']) {
        const raw = rel + query;
        assert.deepEqual(
          normalizeUrl(raw, base),
          normalizeByParser(raw, base),
          `${JSON.stringify(raw)} against ${base}`,
        );
      }
    }
  }
});

test('the fast path agrees with the URL parser on every link of the test web', () => {
  let links = 0;
  for (const site of standardWeb()) {
    for (const [path, spec] of Object.entries(site.pages)) {
      const body = renderPage(spec, { port: 8080, host: site.host, path, pageHits: 1 });
      const html = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
      const base = `http://${site.host}:8080${path}`;
      // every href and src as written, normalized both ways
      for (const m of html.matchAll(/(?:href|src)\s*=\s*["']([^"']*)["']/gi)) {
        links++;
        assert.deepEqual(normalizeUrl(m[1]!, base), normalizeByParser(m[1]!, base), `${m[1]} on ${base}`);
      }
      assert.ok(extractLinks(html, base).dropped >= 0);
    }
  }
  assert.ok(links > 50, `only ${links} links on the test web`);
});
