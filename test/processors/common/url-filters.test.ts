import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RE2JS } from 're2js';
import {
  compileRule,
  requiredLiteral,
  surtOf,
  UrlFilter,
  type UrlRule,
} from '../../../processors/common/url-filters.js';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { parsedShape } from '../../../processors/frontier/url-shape.js';

const matches = (rule: UrlRule | string, url: string): boolean => {
  const r = typeof rule === 'string' ? compileRule(rule) : rule;
  return r.matches(url, parsedShape(url)!);
};

test('a host glob with a leading *. matches the domain and every subdomain, on any port, and nothing else', () => {
  const r = compileRule('host:*.example.org');
  for (const url of [
    'http://example.org/',
    'https://a.example.org/x',
    'http://a.b.example.org:8080/',
    'http://EXAMPLE.ORG./', // uppercase and a trailing dot: the URL parser lowercases, the shape drops the dot
  ])
    assert.ok(matches(r, url), url);
  for (const url of ['http://badexample.org/', 'http://example.org.evil.test/', 'http://example.com/'])
    assert.ok(!matches(r, url), url);
});

test('a host glob without * is one host; * inside a label matches any run; IDN and trailing dots are normalized', () => {
  assert.ok(matches('host:www.example.org', 'http://www.example.org/'));
  assert.ok(!matches('host:www.example.org', 'http://example.org/'));
  assert.ok(matches('host:cdn*.example.org', 'http://cdn7.example.org/'));
  assert.ok(!matches('host:cdn*.example.org', 'http://img.example.org/'));
  assert.ok(matches('host:BÜCHER.de.', 'http://bücher.de/'));
  assert.ok(matches('host:*.bücher.de', 'http://shop.xn--bcher-kva.de/'));
});

test('the SURT form reverses the labels, keeps a non-default port, and not the scheme', () => {
  assert.equal(surtOf(parsedShape('https://www.Example.org:8080/a/b?q=1')!), '(org,example,www,:8080)/a/b?q=1');
  assert.equal(surtOf(parsedShape('http://example.org/')!), '(org,example,)/');
  assert.equal(surtOf(parsedShape('http://127.0.0.1:81/x')!), '(127.0.0.1,:81)/x');
});

test('a SURT prefix written as SURT or as a URL: with a path it is that directory, without one every subdomain', () => {
  const news = compileRule('surt:https://example.org/news/');
  assert.ok(matches(news, 'http://example.org/news/2024/a.html'));
  assert.ok(!matches(news, 'http://example.org/newsletter'));
  assert.ok(!matches(news, 'http://www.example.org/news/'));
  const open = compileRule('surt:http://example.org');
  assert.ok(matches(open, 'https://deep.sub.example.org/x'));
  assert.ok(matches(open, 'https://example.org/'));
  assert.ok(!matches(open, 'https://example.org.uk/'));
  assert.ok(matches('surt:(ORG,Example,)/news/', 'http://example.org/news/x'));
  assert.ok(matches('surt:(org,example,:8080)/', 'http://example.org:8080/x'));
  assert.ok(!matches('surt:(org,example,:8080)/', 'http://example.org/x'));
});

test('a regex rule searches the normalized URL with RE2 syntax', () => {
  assert.ok(matches('re:[?&]replytocom=', 'http://example.org/p?replytocom=12'));
  assert.ok(!matches('re:[?&]replytocom=', 'http://example.org/p?reply=12'));
  assert.ok(matches('re:(?i)/CALENDAR/', 'http://example.org/calendar/2024'));
});

test('a catastrophic-backtracking pattern over a long URL returns, and answers correctly', () => {
  // (a+)+$ against a run of a's ending in another character backtracks exponentially in a
  // backtracking engine (2^1900 paths here); RE2 matching is linear in the input
  const r = compileRule('re:(a+)+$');
  const url = `http://example.org/${'a'.repeat(1_900)}!`;
  assert.equal(matches(r, url), false);
  assert.equal(matches(r, `http://example.org/${'a'.repeat(1_900)}`), true);
  const nested = compileRule('re:(x+x+)+y');
  assert.equal(matches(nested, `http://example.org/?q=${'x'.repeat(1_900)}`), false);
});

test('bad rules are refused with a message naming the rule and what is wrong', () => {
  const refused = (rule: string, why: RegExp) =>
    assert.throws(
      () => compileRule(rule),
      (e: Error & { code?: string }) =>
        e.code === 'CS_INVALID_OPTION' && e.message.includes(JSON.stringify(rule)) && why.test(e.message),
      rule,
    );
  refused('example.org', /must start with host:, surt: or re:/);
  refused('glob:*.example.org', /must start with host:, surt: or re:/);
  refused('host:', /needs a pattern/);
  refused('host:exa mple.org', /dot-separated labels/);
  refused('host:a..b', /dot-separated labels/);
  refused('surt:ftp://example.org/', /http or https/);
  refused('surt:not a url', /written as SURT/);
  refused('re:(a', /not an RE2 regular expression: .*missing closing \)/);
  refused('re:(?=lookahead)', /not an RE2 regular expression/);
  refused('re:(a)\\1', /not an RE2 regular expression/);
  refused(`re:${'a'.repeat(1_001)}`, /longer than 1000 characters/);
});

test('the crawl configuration refuses a bad rule, suffix or scope kind before a crawl starts', () => {
  assert.throws(() => validateCrawlConfig({ denyRules: ['re:('] }), /rule "re:\(": not an RE2/);
  assert.throws(() => validateCrawlConfig({ allowRules: ['*.example.org'] }), /must start with host:/);
  assert.throws(() => validateCrawlConfig({ denyExtensions: ['.tar.gz'] }), /--deny-extension takes a path suffix/);
  assert.throws(() => validateCrawlConfig({ allowExtensions: [''] }), /--allow-extension takes a path suffix/);
  assert.throws(() => validateCrawlConfig({ scope: 'same-site' as never }), /scope must be one of web, seed-sites/);
  assert.throws(() => validateCrawlConfig({ maxDepth: -1 }), /maxDepth must be a whole number of at least 0/);
});

const filter = (o: Partial<Parameters<typeof validateCrawlConfig>[0]> = {}) => new UrlFilter(validateCrawlConfig(o));
const refusal = (f: UrlFilter, url: string, depth = 1) => f.refusal(url, parsedShape(url)!, depth);

test('binary path suffixes are refused by default, case-insensitively, and only in the last path segment', () => {
  const f = filter();
  for (const url of [
    'http://a.test/x.JPG',
    'http://a.test/d/archive.tar.gz',
    'http://a.test/v.mp4?t=1',
    'http://a.test/f.woff2',
  ])
    assert.equal(refusal(f, url), 'extension', url);
  for (const url of [
    'http://a.test/page.html',
    'http://a.test/x.jpg/',
    'http://a.test/img.php?f=x.jpg',
    'http://a.test/zip',
    'http://a.test/a.zip.d/',
  ])
    assert.equal(refusal(f, url), undefined, url);
});

test('--deny-extension adds to the default suffixes and --allow-extension takes one off', () => {
  const f = filter({ denyExtensions: ['.PDF'], allowExtensions: ['svg'] });
  assert.equal(refusal(f, 'http://a.test/report.pdf'), 'extension');
  assert.equal(refusal(f, 'http://a.test/logo.svg'), undefined);
  assert.equal(refusal(f, 'http://a.test/logo.png'), 'extension');
});

test('deny wins over allow; with allow rules a link must match one; each refusal names its rule', () => {
  const f = filter({
    allowRules: ['host:*.example.org'],
    denyRules: ['surt:(org,example,)/private/', 're:\\?replytocom='],
  });
  assert.equal(refusal(f, 'http://www.example.org/a'), undefined);
  assert.equal(refusal(f, 'http://example.org/private/x'), 'deny surt:(org,example,)/private/');
  assert.equal(refusal(f, 'http://example.org/p?replytocom=3'), 'deny re:\\?replytocom=');
  assert.equal(refusal(f, 'http://other.test/'), 'allow');
});

test('--max-depth refuses links more hops from a seed than N and no fewer; 0 means no limit', () => {
  const f = filter({ maxDepth: 2 });
  assert.equal(refusal(f, 'http://a.test/x', 2), undefined);
  assert.equal(refusal(f, 'http://a.test/x', 3), 'max-depth');
  assert.equal(refusal(filter(), 'http://a.test/x', 500), undefined);
});

test('the literal a regex requires is found only where every match must contain it', () => {
  const cases: [string, string][] = [
    ['[?&]replytocom=', 'replytocom='],
    ['\\.php\\?.*sid=', '.php?'],
    ['^https://www\\.site[0-9]+\\.example/', 'https://www.site'],
    ['abc?d', 'ab'],
    ['ab+cd', 'ab'],
    ['foo{2,3}bar', 'bar'],
    ['[]a]bcd', 'bcd'],
    ['x\\dyz', 'yz'],
    ['(?i:abc)def', 'def'],
    ['a|bcd', ''],
    ['(?i)abcd', ''],
    ['abcd(?i)', ''],
    ['\\x41bcd', ''],
    ['(a+)+$', ''],
  ];
  for (const [pattern, literal] of cases) assert.equal(requiredLiteral(pattern), literal, pattern);
});

test('a regex rule answers as RE2 alone would, prefilter or not', () => {
  const patterns = [
    '[?&]replytocom=',
    '/(wp-admin|wp-login)/',
    '\\.php\\?.*sid=',
    '^https://www\\.site[0-9]+\\.example/',
    '(?i)/Calendar/',
    'ab+c',
    'a{2}b',
    '/p/[0-9]{3}$',
    'x?y?z',
  ];
  const urls = [
    'https://www.site7.example/p/123',
    'http://example.org/wp-admin/x',
    'http://example.org/index.php?sid=1',
    'http://example.org/a?replytocom=5',
    'http://example.org/calendar/',
    'http://example.org/abbbc',
    'http://example.org/aab',
    'http://example.org/ab',
    'http://example.org/z',
  ];
  for (const p of patterns) {
    const re = RE2JS.compile(p);
    const rule = compileRule(`re:${p}`);
    for (const url of urls) assert.equal(matches(rule, url), re.test(url), `${p} on ${url}`);
  }
});
