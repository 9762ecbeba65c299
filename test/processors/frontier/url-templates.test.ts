import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  skeletonKeyOf,
  templateCounter,
  templateKey,
  templateKeyOf,
  urlTemplate,
  TEMPLATE_SLOTS,
} from '../../../processors/frontier/url-templates.js';
import { urlShape } from '../../../processors/frontier/url-shape.js';
import type { TemplateCount } from '../../../schemas/types.js';

const templateOf = (url: string) => urlTemplate(urlShape(url)!);

test('numbers and dates in paths and query values become {n}', () => {
  assert.equal(templateOf('https://a.test/cal/2031/07/').template, '/cal/{n}/{n}/');
  assert.equal(templateOf('https://a.test/news/2024-05-12/storm-warning').template, '/news/{n}-{n}-{n}/storm-warning');
  assert.equal(templateOf('https://a.test/product/12345?page=3&sort=asc').template, '/product/{n}?page={n}&sort=asc');
  assert.equal(templateOf('https://a.test/post-481.html').template, '/post-{n}.html');
});

test('hex ids, UUIDs and long mixed tokens such as session ids become {id}', () => {
  assert.equal(templateOf('https://a.test/s/a8f3e1/page').template, '/s/{id}/page');
  assert.equal(templateOf('https://a.test/commit/9fceb02d0ae598e95dc970b74767f19372d61af8').template, '/commit/{id}');
  assert.equal(templateOf('https://a.test/order/123e4567-e89b-12d3-a456-426614174000/').template, '/order/{id}/');
  assert.equal(templateOf('https://a.test/session/Zx9Kq2LmP0aB7wQ/home').template, '/session/{id}/home');
  assert.equal(templateOf('https://a.test/view?token=dGhpcyBpcyBhIHRva2Vu0&x=1').template, '/view?token={id}&x={n}');
});

test('two URLs a script emits one after the other share a template', () => {
  const a = templateOf('https://a.test/s/4f1c9e0b7a2d3e5f/help/contact?ref=77');
  const b = templateOf('https://a.test/s/09ab7e3c1d2f4a6b/help/contact?ref=78');
  assert.equal(a.template, b.template);
  assert.equal(a.templated, true);
});

test('words, slugs and short names with a digit are kept as written, and such URLs are not templated', () => {
  for (const url of [
    'https://a.test/blog/my-first-post',
    'https://a.test/about/',
    'https://a.test/page2',
    'https://a.test/v2/docs/mp3-players',
    'https://a.test/deadbeef/cafe',
    'https://a.test/covid19-update',
    'https://a.test/search?q=maple&lang=en',
    'https://a.test/',
  ]) {
    const { template, templated } = templateOf(url);
    assert.equal(template, urlShape(url)!.pathname + urlShape(url)!.search, url);
    assert.equal(templated, false, url);
  }
});

test('a template key depends on the host as well as the template', () => {
  assert.notEqual(templateKey('a.test', '/x/{n}'), templateKey('b.test', '/x/{n}'));
  assert.equal(templateKey('a.test', '/x/{n}'), templateKey('a.test', '/x/{n}'));
});

test('the template table is bounded, and a template that comes back is never counted lower than it was', () => {
  const table: TemplateCount[] = [];
  const hot = templateCounter(table, 1);
  hot.internal = 50;
  for (let k = 2; k < 1_000; k++) templateCounter(table, k).internal++;
  assert.ok(table.length <= TEMPLATE_SLOTS);
  assert.equal(templateCounter(table, 1).internal, 50, 'the heavy template was evicted');
  // a light one evicted and seen again inherits at least its own count
  const again = templateCounter(table, 2);
  assert.ok(again.internal >= 1);
  assert.equal(again.external, 0, 'an evicted slot passed its outside links on');
});

test('the slot kept aside is never taken over', () => {
  const table: TemplateCount[] = [];
  for (let k = 0; k < TEMPLATE_SLOTS; k++) templateCounter(table, k).internal = k + 1;
  const keep = templateCounter(table, 0);
  const other = templateCounter(table, 999, keep);
  assert.notEqual(other, keep);
  assert.equal(keep.key, 0);
});

test('the key counted while reading a URL is the key of its spelled-out template; hand-named URLs have none', () => {
  for (const url of [
    'https://a.test/cal/2031/07/',
    'https://a.test/s/a8f3e1/page?x=1&y=abc&z',
    'https://a.test/order/123e4567-e89b-12d3-a456-426614174000/items-42_v2.json',
    'https://a.test/caf%C3%A9/2024',
  ]) {
    const shape = urlShape(url)!;
    assert.equal(templateKeyOf(shape.host, shape), templateKey(shape.host, urlTemplate(shape).template), url);
  }
  const slug = urlShape('https://a.test/blog/my-first-post?lang=en')!;
  assert.equal(templateKeyOf(slug.host, slug), undefined);
});

test('a hand-named URL is counted under its skeleton: every segment and query value a word, parameter names kept, the root not at all', () => {
  const key = (url: string) => {
    const shape = urlShape(url)!;
    return skeletonKeyOf(shape.host, shape);
  };
  assert.equal(key('https://a.test/about'), key('https://a.test/contact'));
  assert.equal(key('https://a.test/kalomi-nerusa'), key('https://a.test/about'));
  assert.equal(key('https://a.test/posts/my-first-post'), key('https://a.test/wiki/lantern'));
  assert.notEqual(key('https://a.test/about'), key('https://a.test/posts/my-first-post'), 'depth is kept');
  assert.notEqual(key('https://a.test/about/'), key('https://a.test/about'), 'a trailing slash is kept');
  assert.equal(key('https://a.test/help?topic=contact'), key('https://a.test/news?topic=sport'));
  assert.notEqual(key('https://a.test/help?topic=contact'), key('https://a.test/help?lang=en'), 'names are kept');
  assert.notEqual(key('https://a.test/about'), key('https://b.test/about'), 'per host');
  assert.equal(key('https://a.test/'), undefined);
});
