import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { parseFeed } from '../../../processors/parser/feeds/index.js';
import { InvalidOptionError } from '../../../core/errors.js';

const SITEMAP_NS = 'http://www.sitemaps.org/schemas/sitemap/0.9';
const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');
const urls = (r: { urls: { url: string }[] }): string[] => r.urls.map((u) => u.url);

function urlset(entries: string, attrs = ''): Buffer {
  return utf8(
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="${SITEMAP_NS}"${attrs}>\n${entries}\n</urlset>\n`,
  );
}

test('an XML sitemap lists each <url><loc> with its lastmod, trimmed and normalized', () => {
  const r = parseFeed(
    urlset(`
      <url><loc>
        http://A.example/x/one?utm_source=feed&amp;id=1
      </loc><lastmod>2024-05-01</lastmod><changefreq>daily</changefreq><priority>0.8</priority></url>
      <url><loc>http://a.example/x/two</loc></url>`),
    'application/xml',
    'http://a.example/x/sitemap.xml',
  );
  assert.equal(r.format, 'SITEMAP');
  assert.deepEqual(r.urls, [
    { url: 'http://a.example/x/one?id=1', lastmod: Date.UTC(2024, 4, 1) },
    { url: 'http://a.example/x/two', lastmod: null },
  ]);
  assert.deepEqual([r.errors, r.errorCode, r.outOfScope, r.truncated], [0, null, 0, false]);
});

test('a sitemap index lists child sitemaps, on its own origin or the scope’s, not pages', () => {
  const body = utf8(`<sitemapindex xmlns="${SITEMAP_NS}">
    <sitemap><loc>https://cdn.example/maps/a.xml.gz</loc><lastmod>2024-01-02T03:04:05+01:00</lastmod></sitemap>
    <sitemap><loc>https://a.example/maps/b.xml</loc></sitemap>
    <sitemap><loc>https://evil.example/c.xml</loc></sitemap>
    <sitemap><loc>maps/relative.xml</loc></sitemap>
    <sitemap><lastmod>2024-01-01</lastmod></sitemap>
  </sitemapindex>`);
  // named in a.example's robots.txt, hosted on cdn.example: both origins may hold its sitemaps
  const r = parseFeed(body, 'text/xml', 'https://cdn.example/maps/index.xml', {
    scope: { origin: 'https://a.example', pathPrefix: '/' },
  });
  assert.equal(r.format, 'SITEMAP_INDEX');
  assert.deepEqual(r.urls, []);
  assert.deepEqual(r.sitemaps, [
    { url: 'https://cdn.example/maps/a.xml.gz', lastmod: Date.UTC(2024, 0, 2, 2, 4, 5) },
    { url: 'https://a.example/maps/b.xml', lastmod: null },
  ]);
  assert.equal(r.outOfScope, 1);
  // a relative loc and a missing loc
  assert.deepEqual([r.errors, r.errorCode], [2, 'CS_FEED_BAD_ENTRY']);
});

test('a gzip sitemap is recognised by its magic bytes, whatever its Content-Type', () => {
  const r = parseFeed(
    gzipSync(urlset('<url><loc>http://a.example/1</loc></url>')),
    'application/octet-stream',
    'http://a.example/sitemap.xml.gz',
  );
  assert.equal(r.format, 'SITEMAP');
  assert.deepEqual(urls(r), ['http://a.example/1']);
  assert.equal(r.errorCode, null);
});

test('a text sitemap is one absolute URL per line; blank lines are skipped, other lines are bad entries', () => {
  const body = utf8(
    '\uFEFFhttp://a.example/1\r\n\r\n  http://a.example/2  \nnot a url\n/relative\nftp://a.example/f\nhttp://a.example/3',
  );
  const r = parseFeed(body, 'text/plain; charset=utf-8', 'http://a.example/sitemap.txt');
  assert.equal(r.format, 'TEXT_SITEMAP');
  assert.deepEqual(urls(r), ['http://a.example/1', 'http://a.example/2', 'http://a.example/3']);
  assert.deepEqual([r.errors, r.errorCode], [3, 'CS_FEED_BAD_ENTRY']);
});

test('lines of URLs read as a text sitemap under any Content-Type; other text does not', () => {
  const lines = parseFeed(utf8('https://a.example/1\nhttps://a.example/2\n'), null, 'https://a.example/urls');
  assert.equal(lines.format, 'TEXT_SITEMAP');
  assert.equal(lines.urls.length, 2);
  const prose = parseFeed(
    utf8('Hello, this is not a sitemap.\nhttps://a.example/1\n'),
    'application/octet-stream',
    'https://a.example/urls',
  );
  assert.deepEqual([prose.format, prose.errorCode, prose.urls.length], [null, 'CS_FEED_UNKNOWN', 0]);
});

test('RSS 2.0 items give their link, else a permalink guid, with pubDate; relative links resolve against the feed', () => {
  const body = utf8(`<?xml version="1.0"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel>
    <title>News</title><link>https://a.example/</link>
    <atom:link href="https://a.example/feed.xml" rel="self" type="application/rss+xml"/>
    <item><title>One</title><link>https://a.example/news/1</link><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>
    <item><title>Two</title><link><![CDATA[ /news/2?a=1&b=2 ]]></link><dc:date>2003-06-11T09:00:00Z</dc:date></item>
    <item><title>Three</title><guid>https://a.example/news/3</guid></item>
    <item><title>Four</title><guid isPermaLink="false">https://a.example/news/not-a-link</guid></item>
    <item><title>Five</title><guid>tag:a.example,2003:5</guid></item>
    <item><title>Six</title><description>no link at all</description></item>
    <item><link>javascript:alert(1)</link></item>
  </channel>
</rss>`);
  const r = parseFeed(body, 'application/rss+xml', 'https://a.example/feed.xml');
  assert.equal(r.format, 'RSS');
  assert.deepEqual(r.urls, [
    { url: 'https://a.example/news/1', lastmod: Date.UTC(2003, 5, 10, 4) },
    { url: 'https://a.example/news/2?a=1&b=2', lastmod: Date.UTC(2003, 5, 11, 9) },
    { url: 'https://a.example/news/3', lastmod: null },
  ]);
  // items without a URL are not errors; a link that is not http(s) is
  assert.deepEqual([r.errors, r.errorCode], [1, 'CS_FEED_BAD_ENTRY']);
});

test('RSS 2.0 in a namespace, as some feeds declare one, reads the same', () => {
  const body = utf8(
    '<rss xmlns="http://backend.userland.com/rss2" version="2.0"><channel><item><link>https://a.example/1</link></item></channel></rss>',
  );
  const r = parseFeed(body, null, 'https://a.example/rss');
  assert.deepEqual([r.format, urls(r)], ['RSS', ['https://a.example/1']]);
});

test('RSS 1.0 (rdf:RDF) items give their link', () => {
  const body = utf8(`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
      xmlns:dc="http://purl.org/dc/elements/1.1/">
    <channel rdf:about="https://a.example/rss"><link>https://a.example/</link></channel>
    <item rdf:about="https://a.example/1"><link>https://a.example/1</link><dc:date>2004-02-03</dc:date></item>
  </rdf:RDF>`);
  const r = parseFeed(body, null, 'https://a.example/rss');
  assert.equal(r.format, 'RSS');
  assert.deepEqual(r.urls, [{ url: 'https://a.example/1', lastmod: Date.UTC(2004, 1, 3) }]);
});

test('Atom entries give their alternate link, resolved against xml:base and the feed URL, with updated or published', () => {
  const body = utf8(`<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link rel="self" href="/atom.xml"/>
  <entry>
    <link rel="edit" href="/edit/1"/><link rel="alternate" type="text/html" href="posts/1"/>
    <updated>2003-12-13T18:30:02.25+01:00</updated><published>2003-12-01T00:00:00Z</published>
  </entry>
  <entry xml:base="https://b.example/blog/"><link href="2"/><published>2003-12-02T00:00:00Z</published></entry>
  <entry><link rel="enclosure" href="/audio.mp3"/></entry>
</feed>`);
  const r = parseFeed(body, 'application/atom+xml', 'https://a.example/blog/atom.xml');
  assert.equal(r.format, 'ATOM');
  assert.deepEqual(r.urls, [
    { url: 'https://a.example/blog/posts/1', lastmod: Date.UTC(2003, 11, 13, 17, 30, 2, 250) },
    { url: 'https://b.example/blog/2', lastmod: Date.UTC(2003, 11, 2) },
  ]);
  assert.deepEqual([r.errors, r.errorCode], [0, null]);
});

test('namespace prefixes are resolved: a prefixed urlset works, image, news and xhtml extensions are ignored', () => {
  const body = utf8(`<ns:urlset xmlns:ns="${SITEMAP_NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
      xmlns:news="http://www.google.com/schemas/sitemap-news/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
    <ns:url>
      <ns:loc>http://a.example/page</ns:loc>
      <image:image><image:loc>http://a.example/photo.jpg</image:loc></image:image>
      <news:news><news:publication_date>2008-12-23</news:publication_date></news:news>
      <xhtml:link rel="alternate" hreflang="de" href="http://a.example/de/page"/>
      <ns:lastmod>2008-12-24</ns:lastmod>
    </ns:url>
    <url><loc>http://a.example/other-namespace</loc></url>
  </ns:urlset>`);
  const r = parseFeed(body, null, 'http://a.example/sitemap.xml');
  assert.equal(r.format, 'SITEMAP');
  assert.deepEqual(r.urls, [{ url: 'http://a.example/page', lastmod: Date.UTC(2008, 11, 24) }]);
  assert.equal(r.errors, 0);
});

test('a sitemap lists only URLs under its own folder: other paths, schemes, hosts and ports are dropped and counted', () => {
  const r = parseFeed(
    urlset(`
      <url><loc>http://a.example/x/ok</loc></url>
      <url><loc>http://a.example/x/deeper/ok</loc></url>
      <url><loc>http://a.example/y/out</loc></url>
      <url><loc>http://a.example/x/../y/escape</loc></url>
      <url><loc>https://a.example/x/other-scheme</loc></url>
      <url><loc>http://b.example/x/other-host</loc></url>
      <url><loc>http://a.example.evil/x/lookalike</loc></url>
      <url><loc>http://a.example:8080/x/other-port</loc></url>
      <url><loc>http://a.example/xother</loc></url>`),
    null,
    'http://a.example/x/sitemap.xml',
  );
  assert.deepEqual(urls(r), ['http://a.example/x/ok', 'http://a.example/x/deeper/ok']);
  assert.deepEqual([r.outOfScope, r.errors, r.errorCode], [7, 0, null]);
});

test('a scope from robots.txt widens a sitemap to its origin; a feed is unscoped unless given one', () => {
  const body = urlset('<url><loc>http://a.example/y/page</loc></url><url><loc>http://b.example/</loc></url>');
  const wide = parseFeed(body, null, 'http://a.example/x/sitemap.xml', {
    scope: { origin: 'http://a.example', pathPrefix: '/' },
  });
  assert.deepEqual([urls(wide), wide.outOfScope], [['http://a.example/y/page'], 1]);

  const rss = utf8(
    '<rss><channel><item><link>http://a.example/news/1</link></item><item><link>http://b.example/1</link></item></channel></rss>',
  );
  assert.equal(parseFeed(rss, null, 'http://a.example/feed').urls.length, 2);
  const scoped = parseFeed(rss, null, 'http://a.example/feed', {
    scope: { origin: 'http://a.example', pathPrefix: '/news/' },
  });
  assert.deepEqual([urls(scoped), scoped.outOfScope], [['http://a.example/news/1'], 1]);
});

test('a sitemap entry must be absolute http(s): relative, other schemes and missing locs are bad entries', () => {
  const r = parseFeed(
    urlset(`
      <url><loc>/relative</loc></url>
      <url><loc>ftp://a.example/file</loc></url>
      <url><loc>   </loc></url>
      <url><lastmod>2020-01-01</lastmod></url>
      <url/>
      <url><loc>http://a.example/ok</loc></url>`),
    null,
    'http://a.example/sitemap.xml',
  );
  assert.deepEqual(urls(r), ['http://a.example/ok']);
  assert.deepEqual([r.errors, r.errorCode, r.outOfScope], [5, 'CS_FEED_BAD_ENTRY', 0]);
});

test('a feed in a legacy encoding is decoded by its XML declaration or the charset parameter', () => {
  const doc =
    '<?xml version="1.0" encoding="ISO-8859-1"?><rss><channel><item><link>http://a.example/caf\u00e9</link></item></channel></rss>';
  const latin1 = Buffer.from(doc, 'latin1');
  assert.deepEqual(urls(parseFeed(latin1, 'application/rss+xml', 'http://a.example/feed')), [
    'http://a.example/caf%C3%A9',
  ]);
  const declaredByHeader = Buffer.from(doc.replace(' encoding="ISO-8859-1"', ''), 'latin1');
  assert.deepEqual(urls(parseFeed(declaredByHeader, 'text/xml; charset=iso-8859-1', 'http://a.example/feed')), [
    'http://a.example/caf%C3%A9',
  ]);
});

test('parseFeed refuses bad arguments with InvalidOptionError, never the body', () => {
  const body = urlset('');
  assert.throws(() => parseFeed(body, null, '/sitemap.xml'), InvalidOptionError);
  assert.throws(() => parseFeed(body, null, 'ftp://a.example/sitemap.xml'), InvalidOptionError);
  assert.throws(() => parseFeed(body, null, 'http://a.example/s.xml', { maxUrls: 0 }), InvalidOptionError);
  assert.throws(
    () => parseFeed(body, null, 'http://a.example/s.xml', { scope: { origin: 'http://a.example/x', pathPrefix: '/' } }),
    InvalidOptionError,
  );
  assert.throws(
    () => parseFeed(body, null, 'http://a.example/s.xml', { scope: { origin: 'http://a.example', pathPrefix: 'x/' } }),
    InvalidOptionError,
  );
  assert.deepEqual(parseFeed(body, null, 'http://a.example/s.xml'), {
    format: 'SITEMAP',
    urls: [],
    sitemaps: [],
    outOfScope: 0,
    errors: 0,
    errorCode: null,
    truncated: false,
  });
});
