import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidOptionError } from '../../../core/errors.js';
import {
  parseLiveSettings,
  parseSiteFlag,
  parseSiteOverride,
  SiteOverrides,
  type SiteRule,
} from '../../../processors/common/site-overrides.js';

const rule = (key: string, raw: Record<string, unknown>): SiteRule => parseSiteOverride(key, raw, 'crawl.yaml');

test('the most specific key wins per field: SURT path over host over host glob over registered domain', () => {
  const sites = new SiteOverrides([
    rule('example.org', { 'min-delay': 2000, budget: 50, 'max-depth': 9, headers: { 'X-A': 'site', 'X-B': 'site' } }),
    rule('*.example.org', { 'min-delay': 3000, headers: { 'X-A': 'glob' } }),
    rule('news.example.org', { 'min-delay': 4000 }),
    rule('http://(org,example,news,)/archive/', { 'max-depth': 2, deny: ['*.pdf'] }),
  ]);
  assert.equal(sites.forHost('example.org').minDelayMs, 2000, 'the registered domain covers itself');
  assert.equal(sites.forHost('www.example.org').minDelayMs, 3000, 'a glob covers subdomains, over the site');
  assert.equal(sites.forHost('news.example.org').minDelayMs, 4000, 'an exact host over the glob');
  assert.equal(sites.forHost('example.com').minDelayMs, undefined, 'another site gets nothing');
  assert.equal(sites.forHost('notexample.org').minDelayMs, undefined, 'a name that only ends alike gets nothing');
  assert.deepEqual(sites.forHost('www.example.org').headers, { 'x-a': 'glob', 'x-b': 'site' }, 'headers merge by name');
  assert.equal(sites.forSite('example.org').budget, 50);
  const archive = sites.forUrl('http://news.example.org/archive/2020/a.html');
  assert.equal(archive.maxDepth, 2, 'a SURT prefix with a path over every host key');
  assert.deepEqual(archive.deny, ['*.pdf']);
  assert.equal(archive.minDelayMs, 4000, 'fields the prefix does not set come from the host entries');
  assert.equal(sites.forUrl('http://news.example.org/today.html').maxDepth, 9, 'outside the prefix the site’s value');
  assert.deepEqual(sites.forUrl('not a url'), {}, 'a string that is no URL is covered by nothing');
});

test('a host glob covers the subdomains of its domain, not the domain itself', () => {
  const sites = new SiteOverrides([rule('*.example.org', { 'min-delay': 5000 })]);
  assert.equal(sites.forHost('a.b.example.org').minDelayMs, 5000);
  assert.equal(sites.forHost('example.org').minDelayMs, undefined);
});

test('a min-delay below the politeness floor is refused with the key, the value and why', () => {
  assert.throws(
    () => rule('example.org', { 'min-delay': 999 }),
    (e: unknown) =>
      e instanceof InvalidOptionError &&
      /crawl\.yaml: sites\.example\.org\.min-delay must be a whole number of at least 1000 ms \(the politeness floor/.test(
        e.message,
      ) &&
      /got 999/.test(e.message),
  );
});

test('each class of bad entry is refused with a message naming it', () => {
  const bad: [string, Record<string, unknown> | string, RegExp][] = [
    ['example.org', { 'min-delay': 'soon' }, /min-delay must be a whole number/],
    ['example.org', { speed: 3 }, /unknown override "speed"/],
    [
      'www.example.org',
      { budget: 10 },
      /budget is kept per site; give it on the registered domain \(e\.g\. example\.org\)/,
    ],
    ['http://(org,example,)/news/', { 'min-delay': 2000 }, /the gap is kept per host/],
    ['example.org', { headers: { 'User-Agent': 'other' } }, /User-Agent cannot be set per site/],
    ['example.org', { headers: { 'X-A': 'a\r\nHost: evil' } }, /must be one line/],
    ['example.org', { headers: { 'bad name': 'x' } }, /is not a header name/],
    ['example.org', { allow: [''] }, /allow must be a rule or a list of rules/],
    ['example.org', { 'max-depth': -1 }, /max-depth must be a whole number of at least 0/],
    ['exa mple.org', { budget: 3 }, /is not a registered domain, a host name/],
    ['http://(org,example', { budget: 3 }, /budget is kept per site/],
    ['(org,EX AMPLE,)', { 'max-depth': 3 }, /is not a SURT prefix/],
    ['example.org', 'fast', /must be a mapping of/],
  ];
  for (const [key, raw, message] of bad)
    assert.throws(
      () => parseSiteOverride(key, raw, 'crawl.yaml'),
      (e: unknown) => e instanceof InvalidOptionError && message.test(e.message),
      `${key} ${JSON.stringify(raw)}`,
    );
});

test('--site takes KEY NAME=VALUE pairs, header.NAME and repeated allow/deny', () => {
  const r = parseSiteFlag('Example.org min-delay=2500 budget=40 header.X-Team=news deny=a deny=b', '--site');
  assert.deepEqual(r, {
    key: 'example.org',
    override: { minDelayMs: 2500, budget: 40, headers: { 'x-team': 'news' }, deny: ['a', 'b'] },
  });
  assert.throws(() => parseSiteFlag('example.org', '--site'), /--site must be "KEY NAME=VALUE \.\.\."/);
  assert.throws(() => parseSiteFlag('example.org fast', '--site'), /"fast" is not NAME=VALUE/);
});

test('control set takes min-delay, budget and max-depth, each a number or default, and nothing else', () => {
  assert.deepEqual(parseLiveSettings({ 'min-delay': '3000', budget: 'default' }), { minDelayMs: 3000, budget: null });
  assert.throws(() => parseLiveSettings({ 'min-delay': '500' }), /at least 1000 ms \(the politeness floor\)/);
  assert.throws(() => parseLiveSettings({ headers: 'x' }), /cannot be set live/);
  assert.throws(() => parseLiveSettings({ budget: '-3' }), /budget must be a whole number of at least 1/);
  assert.throws(() => parseLiveSettings({}), /control set needs KEY=VALUE/);
});
