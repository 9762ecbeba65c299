import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_TEXT_CHARS, extractLinks } from '../../../processors/parser/extract-links.js';
import { parseRefresh } from '../../../processors/parser/link-urls.js';

const PAGE = 'http://www.example.com/news/2024/article.html';

const ARTICLE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>  Storm &amp; Sea:
     a  report </title>
  <META NAME="Robots" CONTENT="NOINDEX, follow">
  <link rel="stylesheet" href="/static/site.css">
  <link rel="alternate" hreflang="de" href="/de/article.html">
  <link rel="Canonical" href="/news/2024/article.html?utm_source=rss#top">
  <script>var s = '<a href="/from-script">x</a>'; document.write(s);</script>
  <style>a[href="/from-style"] { color: red }</style>
</head>
<body>
  <!-- <a href="/from-comment">hidden</a> -->
  <nav><a href="/">Home</a> | <a href="../">News</a> | <a href="HTTP://WWW.EXAMPLE.COM/About">About</a></nav>
  <h1>Storm and sea</h1>
  <p>The <b>storm</b> hit the coast at <time>dawn</time>.<br>Crews were out.</p>
  <p><a href="related.html?id=7&amp;utm_medium=web">Related</a>
     <a href="related.html?id=7" rel="nofollow">Related again</a>
     <a href="https://Partner.Example.ORG/offer" rel="sponsored NoFollow">Ad</a>
     <a href="https://partner.example.org/offer;jsessionid=XYZ" rel="nofollow">Ad again</a>
     <a href="#comments">Jump</a> <a href="">Self</a> <a>No href</a>
     <a href="javascript:void(0)">JS</a> <a href=" JavaScript:alert(1)">JS2</a>
     <a href="mailto:desk@example.com">Mail</a> <a href="tel:+15551234">Call</a>
     <a href="data:text/html,hi">Data</a>
     <a href="http://exa mple.com/">broken host</a> <a href="ftp://files.example.com/x">FTP</a>
     <a href="http://[::1">bad ipv6</a>
     <a href="  /spaced/link  ">Spaced</a>
     <a href="/caf&eacute;">Entity</a>
  </p>
  <map name="m"><area shape="rect" coords="0,0,1,1" href="/map/area1" alt="x"></map>
  <iframe src="https://video.example.net/embed/42">fallback <a href="/in-iframe">x</a></iframe>
  <svg><title>icon title</title><a href="/svg-link"><text>svg</text></a></svg>
  <noscript>Enable JS</noscript>
  <footer>&copy; 2024 Example&nbsp;News</footer>
</body>
</html>`;

test('extractLinks finds normalized, deduplicated links in document order', () => {
  const r = extractLinks(ARTICLE, PAGE);
  assert.deepEqual(
    r.links.map((l) => [l.kind, l.url, l.nofollow]),
    [
      ['canonical', 'http://www.example.com/news/2024/article.html', false],
      ['a', 'http://www.example.com/', false],
      ['a', 'http://www.example.com/news/', false],
      ['a', 'http://www.example.com/About', false],
      ['a', 'http://www.example.com/news/2024/related.html?id=7', false],
      ['a', 'https://partner.example.org/offer', true],
      ['a', 'http://www.example.com/spaced/link', false],
      ['a', 'http://www.example.com/caf%C3%A9', false],
      ['area', 'http://www.example.com/map/area1', false],
      ['iframe', 'https://video.example.net/embed/42', false],
      ['a', 'http://www.example.com/svg-link', false],
    ],
  );
});

test('extractLinks ignores links inside scripts, styles, comments and iframe fallback text', () => {
  const urls = extractLinks(ARTICLE, PAGE).links.map((l) => l.url);
  for (const hidden of ['/from-script', '/from-style', '/from-comment', '/in-iframe']) {
    assert.ok(!urls.some((u) => u.endsWith(hidden)), `${hidden} should not be a link`);
  }
});

test('extractLinks counts unparseable and unsupported hrefs as dropped, but not skipped schemes or fragments', () => {
  // exa mple.com, ftp://, http://[::1
  assert.equal(extractLinks(ARTICLE, PAGE).dropped, 3);
});

test('extractLinks reads canonical, meta robots and title', () => {
  const r = extractLinks(ARTICLE, PAGE);
  assert.equal(r.canonical, 'http://www.example.com/news/2024/article.html');
  assert.equal(r.noindex, true);
  assert.equal(r.nofollow, false);
  assert.equal(r.title, 'Storm & Sea: a report');
  assert.equal(r.refresh, undefined);
  assert.equal(r.base, undefined);
});

test('extractLinks collects visible text only, with words kept apart at block boundaries', () => {
  const { text } = extractLinks(ARTICLE, PAGE);
  assert.match(text, /^Home \| News \| About Storm and sea The storm hit the coast at dawn\. Crews were out\. Related/);
  assert.match(text, /Enable JS © 2024 Example News$/);
  for (const invisible of ['var s', 'color: red', 'hidden', 'icon title', 'fallback', 'Storm & Sea']) {
    assert.ok(!text.includes(invisible), `text should not contain ${invisible}`);
  }
  assert.doesNotMatch(text, /\s{2,}|^\s|\s$/);
});

test('an unclosed head, noscript or object does not hide the rest of the page', () => {
  const pages = [
    '<head><meta charset=utf-8><p>after head</p>',
    '<noscript><img src=x>no js<p>after noscript',
    '<object data=x>fallback<p>after object',
  ];
  for (const html of pages) assert.match(extractLinks(html, 'http://e.com/').text, /after (head|noscript|object)$/);
});

test('the first <base href> resolves every relative link, even those before it', () => {
  const html = `<html><head>
    <link rel=canonical href="canon.html">
    </head><body><a href="before.html">b</a>
    <base href="/assets/v2/"><base href="http://ignored.example.com/">
    <a href="after.html">a</a><a href="//cdn.example.com/x">c</a><a href="/abs">d</a>
    <frameset><frame src="left.html"><frame src="right.html"></frameset></body></html>`;
  const r = extractLinks(html, 'https://site.example.com/dir/page');
  assert.equal(r.base, 'https://site.example.com/assets/v2/');
  assert.equal(r.canonical, 'https://site.example.com/assets/v2/canon.html');
  assert.deepEqual(
    r.links.map((l) => `${l.kind} ${l.url}`),
    [
      'canonical https://site.example.com/assets/v2/canon.html',
      'a https://site.example.com/assets/v2/before.html',
      'a https://site.example.com/assets/v2/after.html',
      'a https://cdn.example.com/x',
      'a https://site.example.com/abs',
      'frame https://site.example.com/assets/v2/left.html',
      'frame https://site.example.com/assets/v2/right.html',
    ],
  );
});

test('a <base href> with an unsupported scheme is ignored', () => {
  const r = extractLinks('<base href="javascript:x"><a href="a">a</a>', 'http://example.com/d/p');
  assert.equal(r.base, undefined);
  assert.deepEqual(
    r.links.map((l) => l.url),
    ['http://example.com/d/a'],
  );
});

test('meta robots none means noindex and nofollow; link nofollow stays per link', () => {
  const r = extractLinks('<meta name="robots" content="none"><a href="/x">x</a>', 'http://example.com/');
  assert.equal(r.noindex, true);
  assert.equal(r.nofollow, true);
  assert.equal(r.links[0]!.nofollow, false);
});

test('meta robots is read case-insensitively and other meta names are ignored', () => {
  const a = extractLinks('<meta name=ROBOTS content="NoFollow">', 'http://example.com/');
  assert.deepEqual([a.noindex, a.nofollow], [false, true]);
  const b = extractLinks('<meta name="description" content="noindex, nofollow">', 'http://example.com/');
  assert.deepEqual([b.noindex, b.nofollow], [false, false]);
  const c = extractLinks('<meta name="robots" content="index, follow">', 'http://example.com/');
  assert.deepEqual([c.noindex, c.nofollow], [false, false]);
});

test('a meta refresh target becomes the refresh URL and a link', () => {
  const r = extractLinks(
    `<meta http-equiv="Refresh" content="0; URL='/moved/here?utm_campaign=x'">`,
    'http://example.com/old',
  );
  assert.equal(r.refresh, 'http://example.com/moved/here');
  assert.deepEqual(r.links, [{ url: 'http://example.com/moved/here', nofollow: false, kind: 'refresh' }]);
});

test('a meta refresh without URL only reloads the page and yields no link', () => {
  const r = extractLinks('<meta http-equiv="refresh" content="30">', 'http://example.com/live');
  assert.equal(r.refresh, undefined);
  assert.deepEqual(r.links, []);
});

test('parseRefresh follows the HTML refresh syntax', () => {
  assert.equal(parseRefresh('0; url=http://a.example/'), 'http://a.example/');
  assert.equal(parseRefresh('5;URL=next.html'), 'next.html');
  assert.equal(parseRefresh('0,next.html'), 'next.html');
  assert.equal(parseRefresh('1.5 ; url = "quoted.html" trailing'), 'quoted.html');
  assert.equal(parseRefresh("0; url='single.html"), 'single.html');
  assert.equal(parseRefresh('0 next.html'), 'next.html');
  assert.equal(parseRefresh('10'), undefined);
  assert.equal(parseRefresh('0;'), undefined);
  assert.equal(parseRefresh('soon; url=x'), undefined);
  assert.equal(parseRefresh('5x; url=x'), undefined);
});

test('a URL linked with and without nofollow is followable', () => {
  const r = extractLinks(
    '<a href="/a" rel="nofollow">1</a><a href="/a">2</a><a href="/b" rel="nofollow">3</a><a href="/b" rel="nofollow ugc">4</a>',
    'http://example.com/',
  );
  assert.deepEqual(
    r.links.map((l) => [l.url, l.nofollow]),
    [
      ['http://example.com/a', false],
      ['http://example.com/b', true],
    ],
  );
});

test('uppercase hosts and schemes collapse to one link', () => {
  const r = extractLinks(
    '<a href="HTTP://EXAMPLE.COM/x">1</a><a href="http://example.com:80/x#f">2</a><a href="http://Example.com/x?">3</a>',
    'http://other.org/',
  );
  assert.deepEqual(
    r.links.map((l) => l.url),
    ['http://example.com/x'],
  );
});

test('links are capped at 1,000 by default and at maxLinks when given', () => {
  let html = '<ul>';
  for (let i = 0; i < 1500; i++)
    html += `<li><a href="/item/${i}">Item ${i}</a></li><li><a href="/item/${i}">again</a></li>`;
  html += '</ul>';
  const all = extractLinks(html, 'http://example.com/');
  assert.equal(all.links.length, 1000);
  assert.equal(all.links[0]!.url, 'http://example.com/item/0');
  assert.equal(all.links[999]!.url, 'http://example.com/item/999');
  assert.equal(new Set(all.links.map((l) => l.url)).size, 1000);
  const ten = extractLinks(html, 'http://example.com/', { maxLinks: 10 });
  assert.deepEqual(
    ten.links.map((l) => l.url),
    Array.from({ length: 10 }, (_, i) => `http://example.com/item/${i}`),
  );
});

test('visible text is capped at MAX_TEXT_CHARS', () => {
  const html = `<p>${'word '.repeat(100_000)}</p>`;
  const { text } = extractLinks(html, 'http://example.com/');
  assert.ok(text.length <= MAX_TEXT_CHARS && text.length >= MAX_TEXT_CHARS - 1, `length ${text.length}`);
  assert.ok(text.startsWith('word word'));
});

test('a <title> inside SVG is not the page title, and an unclosed title still counts', () => {
  assert.equal(extractLinks('<svg><title>icon</title></svg><title>Real</title>', 'http://e.com/').title, 'Real');
  assert.equal(extractLinks('<title>Never closed', 'http://e.com/').title, 'Never closed');
  assert.equal(extractLinks('<p>no title</p>', 'http://e.com/').title, undefined);
});

test('extractLinks never throws on garbage', () => {
  let seed = 42;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const alphabet = '<>/="\' a href=base meta frame &#x;\u0000\ud800\n!--[CDATA[';
  for (let n = 0; n < 200; n++) {
    let s = '';
    const len = Math.floor(rand() * 2000);
    for (let i = 0; i < len; i++) s += alphabet[Math.floor(rand() * alphabet.length)];
    assert.doesNotThrow(() => extractLinks(s, 'http://example.com/'));
  }
  const hostile = [
    '<a href="' + 'x'.repeat(1_000_000) + '">',
    '<base href="http://[">' + '<a href="rel">',
    "<a href=http://example.com/unquoted>u</a><a href='/single'>s</a>",
    '<<<<a href="/x"<<>>',
    '</a></a></p></body></html>',
    '<meta http-equiv=refresh content>',
    '<link rel=canonical>',
  ];
  for (const h of hostile) assert.doesNotThrow(() => extractLinks(h, 'http://example.com/'));
  assert.doesNotThrow(() => extractLinks('<a href="/x">x</a><a href="http://ok.example/">', 'not a url'));
});

test('an invalid page URL drops relative links but keeps absolute ones', () => {
  const r = extractLinks('<a href="/x">x</a><a href="http://ok.example/">y</a>', 'not a url');
  assert.deepEqual(
    r.links.map((l) => l.url),
    ['http://ok.example/'],
  );
  assert.equal(r.dropped, 1);
});

test('an overlong href is dropped as too long', () => {
  const r = extractLinks(`<a href="/${'x'.repeat(3000)}">x</a><a href="/ok">ok</a>`, 'http://example.com/');
  assert.deepEqual(
    r.links.map((l) => l.url),
    ['http://example.com/ok'],
  );
  assert.equal(r.dropped, 1);
});
