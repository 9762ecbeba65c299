import { test } from 'node:test';
import assert from 'node:assert/strict';
import { extractLinks, MAX_FEEDS } from '../../../processors/parser/extract-links.js';
import { isFeedLink } from '../../../processors/parser/feeds/feed-links.js';

test('a link announces a feed when rel has alternate and the type is RSS or Atom', () => {
  assert.equal(isFeedLink('alternate', 'application/rss+xml'), true);
  assert.equal(isFeedLink('Alternate Home', ' Application/Atom+XML; charset=utf-8'), true);
  assert.equal(isFeedLink('alternate', 'text/html'), false);
  assert.equal(isFeedLink('stylesheet', 'application/rss+xml'), false);
  assert.equal(isFeedLink('alternates', 'application/rss+xml'), false);
  assert.equal(isFeedLink(undefined, 'application/rss+xml'), false);
  assert.equal(isFeedLink('alternate', undefined), false);
});

test('extractLinks reports the feeds a page announces, resolved, unique, apart from its links', () => {
  const html = `<html><head><base href="https://a.example/blog/">
    <link rel="alternate" type="application/rss+xml" title="Posts" href="feed.xml">
    <link rel="alternate" type="application/atom+xml" href="https://a.example/atom.xml">
    <link rel="alternate" type="application/rss+xml" href="feed.xml#again">
    <link rel="alternate" hreflang="de" href="https://a.example/de/">
    <link rel="alternate" type="application/rss+xml" href="javascript:void(0)">
    </head><body><a href="post/1">one</a></body></html>`;
  const r = extractLinks(html, 'https://a.example/blog/index.html');
  assert.deepEqual(r.feeds, ['https://a.example/blog/feed.xml', 'https://a.example/atom.xml']);
  assert.deepEqual(
    r.links.map((l) => l.url),
    ['https://a.example/blog/post/1'],
  );
});

test('a page without feed links has no feeds field; a page with many keeps the first MAX_FEEDS', () => {
  assert.equal('feeds' in extractLinks('<a href="/x">x</a>', 'https://a.example/'), false);
  const many = Array.from(
    { length: 50 },
    (_, i) => `<link rel=alternate type=application/rss+xml href=/cat/${i}/feed>`,
  ).join('');
  const r = extractLinks(many, 'https://a.example/');
  assert.equal(r.feeds?.length, MAX_FEEDS);
  assert.equal(r.feeds?.[0], 'https://a.example/cat/0/feed');
});
