import { test } from 'node:test';
import assert from 'node:assert/strict';
import { trapCheck } from '../../../processors/frontier/url-rules.js';
import { defaultCrawlConfig, validateCrawlConfig } from '../../../processors/common/crawl-config.js';

const config = defaultCrawlConfig;
const path = (segments: string[]) => `https://example.com/${segments.join('/')}`;
const distinct = (n: number) => Array.from({ length: n }, (_, i) => `s${i}`);

test('the defaults behind these rules: 2000 chars, depth 15, 3 repeats, 5 redirect hops', () => {
  assert.deepEqual(
    [config.maxUrlLength, config.maxPathDepth, config.maxSegmentRepeats, config.maxRedirectHops],
    [2000, 15, 3, 5],
  );
});

test('a URL of exactly maxUrlLength is admitted; one character more is too long', () => {
  const base = 'https://example.com/';
  const exact = base + 'a'.repeat(config.maxUrlLength - base.length);
  assert.equal(exact.length, 2000);
  assert.equal(trapCheck(exact, 0, config), undefined);
  assert.equal(trapCheck(exact + 'a', 0, config), 'too-long');
});

test('a path 15 segments deep is admitted; 16 is too deep', () => {
  assert.equal(trapCheck(path(distinct(15)), 0, config), undefined);
  assert.equal(trapCheck(path(distinct(16)), 0, config), 'too-deep');
  assert.equal(trapCheck(path(distinct(15)) + '/', 0, config), undefined, 'a trailing slash adds no segment');
  assert.equal(
    trapCheck(`https://example.com/${distinct(15).join('//')}`, 0, config),
    undefined,
    'empty segments do not count',
  );
});

test('a segment seen twice is admitted; three times is a trap', () => {
  assert.equal(trapCheck(path(['a', 'b', 'a']), 0, config), undefined);
  assert.equal(trapCheck(path(['a', 'b', 'a', 'c', 'a']), 0, config), 'repeated-segment');
  assert.equal(trapCheck(path(['cal', 'cal', 'cal']), 0, config), 'repeated-segment');
  assert.equal(
    trapCheck(path(['a', 'a', 'b', 'b', 'c', 'c']), 0, config),
    undefined,
    'many segments twice each are fine',
  );
  assert.equal(trapCheck('https://example.com/a/b?x=/a/a/a', 0, config), undefined, 'the query is not the path');
});

test('five redirect hops are admitted; six are too many', () => {
  assert.equal(trapCheck('https://example.com/', 5, config), undefined);
  assert.equal(trapCheck('https://example.com/', 6, config), 'too-many-redirects');
});

test('a URL that does not parse is a bad URL', () => {
  assert.equal(trapCheck('not a url', 0, config), 'bad-url');
});

test('the limits come from the config', () => {
  const strict = validateCrawlConfig({ maxPathDepth: 2, maxSegmentRepeats: 2, maxUrlLength: 30, maxRedirectHops: 0 });
  assert.equal(trapCheck(path(['a', 'b', 'c']), 0, strict), 'too-deep');
  assert.equal(trapCheck(path(['a', 'a']), 0, strict), 'repeated-segment');
  assert.equal(trapCheck('https://example.com/' + 'x'.repeat(20), 0, strict), 'too-long');
  assert.equal(trapCheck('https://example.com/', 1, strict), 'too-many-redirects');
  assert.equal(trapCheck('https://example.com/a', 0, strict), undefined);
});
