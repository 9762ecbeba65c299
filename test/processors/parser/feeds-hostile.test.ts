import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { MAX_FEED_BYTES, parseFeed } from '../../../processors/parser/feeds/index.js';

const SITEMAP_NS = 'http://www.sitemaps.org/schemas/sitemap/0.9';
const FEED_URL = 'http://a.example/sitemap.xml';
const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

function sitemapOf(count: number): Buffer {
  const parts = [`<urlset xmlns="${SITEMAP_NS}">`];
  for (let i = 0; i < count; i++) parts.push(`<url><loc>http://a.example/p/${i}</loc></url>`);
  parts.push('</urlset>');
  return utf8(parts.join('\n'));
}

/** A gzip stream of `members` concatenated members, each `size` bytes of `fill` inflated: tiny, and huge inflated. */
function gzipBomb(head: string, fill: number, size: number, members: number, tail = ''): Buffer {
  const member = gzipSync(Buffer.alloc(size, fill), { level: 9 });
  return Buffer.concat([gzipSync(utf8(head)), ...Array<Buffer>(members).fill(member), gzipSync(utf8(tail))]);
}

test('a sitemap of 50,001 URLs yields the first 50,000 and says it was truncated', () => {
  const r = parseFeed(sitemapOf(50_001), 'application/xml', FEED_URL);
  assert.equal(r.urls.length, 50_000);
  assert.equal(r.urls[49_999]!.url, 'http://a.example/p/49999');
  assert.deepEqual([r.truncated, r.errorCode, r.errors], [true, 'CS_FEED_TOO_MANY_URLS', 0]);
  const exact = parseFeed(sitemapOf(50_000), 'application/xml', FEED_URL);
  assert.deepEqual([exact.urls.length, exact.truncated, exact.errorCode], [50_000, false, null]);
});

test('the URL cap counts URLs kept, as does a smaller maxUrls; child sitemaps have the same cap', () => {
  const r = parseFeed(sitemapOf(10), null, FEED_URL, { maxUrls: 3 });
  assert.deepEqual([r.urls.length, r.truncated], [3, true]);
  const index = utf8(
    `<sitemapindex xmlns="${SITEMAP_NS}">${[1, 2, 3].map((i) => `<sitemap><loc>http://a.example/s${i}.xml</loc></sitemap>`).join('')}</sitemapindex>`,
  );
  const ri = parseFeed(index, null, FEED_URL, { maxUrls: 2 });
  assert.deepEqual([ri.sitemaps.length, ri.truncated, ri.errorCode], [2, true, 'CS_FEED_TOO_MANY_URLS']);
});

test('a gzip bomb past 50 MB is cut at 50 MB: the entries before the cut are kept, nothing more is inflated', () => {
  // 64 MB of spaces inside a sitemap, ~70 KB compressed
  const bomb = gzipBomb(
    `<urlset xmlns="${SITEMAP_NS}"><url><loc>http://a.example/before</loc></url><url><loc>`,
    0x20,
    1 << 20,
    64,
    `http://a.example/after</loc></url></urlset>`,
  );
  assert.ok(bomb.length < 200_000);
  const r = parseFeed(bomb, 'application/x-gzip', FEED_URL);
  assert.deepEqual(
    r.urls.map((u) => u.url),
    ['http://a.example/before'],
  );
  assert.deepEqual([r.truncated, r.errorCode, r.errors], [true, 'CS_FEED_TOO_LARGE', 0]);
});

test('a gzip bomb of zeros (1 GB inflated) is too large and not a sitemap', () => {
  const bomb = gzipBomb('', 0, 1 << 20, 1024);
  const r = parseFeed(bomb, null, FEED_URL);
  assert.deepEqual([r.format, r.truncated, r.errorCode, r.urls.length], [null, true, 'CS_FEED_UNKNOWN', 0]);
  assert.equal(MAX_FEED_BYTES, 52_428_800);
});

test('a plain body over maxBytes is read up to maxBytes only', () => {
  const body = sitemapOf(1_000);
  const r = parseFeed(body, null, FEED_URL, { maxBytes: 10_000 });
  assert.ok(r.urls.length > 100 && r.urls.length < 1_000, `${r.urls.length} URLs`);
  // elements left open by the cut are the limit, not a malformed document
  assert.deepEqual([r.truncated, r.errorCode, r.errors], [true, 'CS_FEED_TOO_LARGE', 0]);
});

test('a body the fetch cut (bodyTruncated) keeps its whole entries and drops the last, maybe half, URL', () => {
  const xml = utf8(`<urlset><url><loc>http://a.example/1</loc></url><url><loc>http://a.example/23`);
  const r = parseFeed(xml, null, FEED_URL, { bodyTruncated: true });
  assert.deepEqual(
    r.urls.map((u) => u.url),
    ['http://a.example/1'],
  );
  assert.deepEqual([r.truncated, r.errorCode, r.errors], [true, 'CS_FEED_TOO_LARGE', 0]);
  const text = parseFeed(utf8('http://a.example/1\nhttp://a.example/23'), 'text/plain', FEED_URL, {
    bodyTruncated: true,
  });
  assert.deepEqual(
    text.urls.map((u) => u.url),
    ['http://a.example/1'],
  );
  const cutText = parseFeed(utf8('http://a.example/1\nhttp://a.example/23\n'), 'text/plain', FEED_URL, {
    maxBytes: 30,
  });
  assert.deepEqual([cutText.urls.length, cutText.truncated, cutText.errors], [1, true, 0]);
});

test('a gzip stream cut short yields what inflates and counts a malformed document; corrupt gzip yields nothing', () => {
  const gz = gzipSync(sitemapOf(2_000));
  const cut = parseFeed(gz.subarray(0, gz.length >> 1), null, FEED_URL);
  assert.ok(cut.urls.length > 0 && cut.urls.length < 2_000, `${cut.urls.length} URLs`);
  assert.deepEqual([cut.errorCode, cut.errors], ['CS_FEED_MALFORMED', 1]);
  const corrupt = parseFeed(Buffer.concat([gz.subarray(0, 10), randomBytes(500)]), null, FEED_URL);
  assert.deepEqual(
    [corrupt.format, corrupt.errorCode, corrupt.errors, corrupt.urls.length],
    [null, 'CS_FEED_MALFORMED', 1, 0],
  );
});

test('malformed XML keeps the entries it can read and counts one error for the document', () => {
  const cases: [string, string][] = [
    [
      'unclosed at the end',
      `<urlset xmlns="${SITEMAP_NS}"><url><loc>http://a.example/1</loc></url><url><loc>http://a.example/2`,
    ],
    [
      'end tag of another element',
      `<urlset><url><loc>http://a.example/1</loc></url><url><loc>http://a.example/2</url></urlset>`,
    ],
    ['garbage after the root', `<urlset><url><loc>http://a.example/1</loc></url></urlset>garbage<urlset>`],
    ['a second root', `<urlset><url><loc>http://a.example/1</loc></url></urlset><urlset></urlset>`],
    ['bad tag names', `<urlset><url><loc>http://a.example/1</loc></url><<>><1x></1x></urlset>`],
  ];
  for (const [name, doc] of cases) {
    const r = parseFeed(utf8(doc), null, FEED_URL);
    assert.equal(r.format, 'SITEMAP', name);
    assert.equal(r.urls[0]?.url, 'http://a.example/1', name);
    // an entry still open at the end may hold a cut URL
    if (name === 'unclosed at the end') assert.equal(r.urls.length, 1);
    assert.deepEqual([r.errorCode, r.errors], ['CS_FEED_MALFORMED', 1], name);
  }
});

test('an empty body, binary junk, HTML and other XML are not sitemaps: one counted error, no URL, no throw', () => {
  const bodies: [string, Buffer, string | null][] = [
    ['empty', Buffer.alloc(0), 'application/xml'],
    ['whitespace', utf8(' \n\t '), 'text/plain'],
    ['binary junk', randomBytes(4096), 'application/octet-stream'],
    ['NUL bytes', Buffer.alloc(1000), null],
    [
      'HTML',
      utf8('<!DOCTYPE html><html><head><title>404</title></head><body><a href="/x">x</a></body></html>'),
      'text/html',
    ],
    ['HTML as text/plain', utf8('<html><body>Not found</body></html>'), 'text/plain'],
    [
      'other XML',
      utf8('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><a href="http://a.example/"/></svg>'),
      null,
    ],
    ['XML without a root', utf8('<?xml version="1.0"?><!-- nothing -->'), null],
    [
      'feed in another namespace',
      utf8('<feed xmlns="urn:other"><entry><link href="http://a.example/"/></entry></feed>'),
      null,
    ],
  ];
  for (const [name, body, contentType] of bodies) {
    const r = parseFeed(body, contentType, FEED_URL);
    assert.deepEqual([r.format, r.urls.length, r.errors, r.errorCode], [null, 0, 1, 'CS_FEED_UNKNOWN'], name);
  }
});

test('random mutations of a sitemap never throw and never yield a URL out of scope', () => {
  const good = sitemapOf(50);
  for (let i = 0; i < 300; i++) {
    const body = Buffer.from(good);
    const flips = randomBytes(8);
    for (const b of flips) body[(b * 131 + i * 7919) % body.length] = flips[(b + i) % 8]!;
    const r = parseFeed(body.subarray(0, body.length - (i % 40)), null, FEED_URL);
    for (const u of r.urls) assert.ok(u.url.startsWith('http://a.example/'), u.url);
  }
});

test('XXE: an external entity is never resolved and no file is read', () => {
  const doc = `<?xml version="1.0"?>
<!DOCTYPE urlset [
  <!ENTITY xxe SYSTEM "file:///etc/passwd">
  <!ENTITY % remote SYSTEM "http://127.0.0.1:9/evil.dtd">
  %remote;
]>
<urlset xmlns="${SITEMAP_NS}">
  <url><loc>http://a.example/&xxe;</loc></url>
  <url><loc>&xxe;</loc></url>
  <url><loc>http://a.example/ok?a=1&amp;b=&#50;&#x33;</loc></url>
</urlset>`;
  const r = parseFeed(utf8(doc), null, FEED_URL);
  assert.equal(r.format, 'SITEMAP');
  assert.doesNotMatch(JSON.stringify(r), /root:|\/bin\/|passwd/);
  assert.deepEqual(
    r.urls.map((u) => u.url),
    ['http://a.example/&xxe;', 'http://a.example/ok?a=1&b=23'],
  );
  // `&xxe;` alone is not an absolute URL
  assert.deepEqual([r.errors, r.errorCode], [1, 'CS_FEED_BAD_ENTRY']);
});

test('billion laughs: entities declared in a DTD are not expanded', () => {
  const decls = ['<!ENTITY lol0 "lol">'];
  for (let i = 1; i <= 9; i++) decls.push(`<!ENTITY lol${i} "${`&lol${i - 1};`.repeat(10)}">`);
  const doc = `<?xml version="1.0"?>
<!DOCTYPE lolz [
  ${decls.join('\n  ')}
]>
<rss version="2.0"><channel><item><link>http://a.example/&lol9;</link><title>&lol9;</title></item></channel></rss>`;
  const r = parseFeed(utf8(doc), null, 'http://a.example/feed');
  assert.equal(r.format, 'RSS');
  assert.deepEqual(
    r.urls.map((u) => u.url),
    ['http://a.example/&lol9;'],
  );
});

test('only the five XML entities and character references are decoded, not HTML ones', () => {
  const r = parseFeed(
    utf8(
      `<urlset><url><loc>http://a.example/?q=&lt;&gt;&quot;&apos;&amp;x=&#x2F;&#47;&nbsp;&eacute;</loc></url></urlset>`,
    ),
    null,
    FEED_URL,
  );
  assert.deepEqual(
    r.urls.map((u) => u.url),
    ['http://a.example/?q=%3C%3E%22%27&x=//&nbsp;&eacute;'],
  );
});
