import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_URL_LENGTH, hostOf, normalizeUrl, siteOf } from '../../../processors/common/normalize.js';
import { CrawlError } from '../../../core/errors.js';
import { NORMALIZE_CASES } from './normalize-cases.js';

test('the normalization table has at least 100 cases', () => {
  assert.ok(NORMALIZE_CASES.length >= 100, `only ${NORMALIZE_CASES.length} cases`);
});

for (const c of NORMALIZE_CASES) {
  const label = `${JSON.stringify(c.raw.length > 60 ? c.raw.slice(0, 57) + '...' : c.raw)}`;
  test(`normalizeUrl: ${c.why} (${label})`, () => {
    const got = normalizeUrl(c.raw, c.base);
    if (typeof c.expect === 'string') {
      assert.deepEqual(got, { ok: true, url: c.expect });
    } else {
      assert.deepEqual(got, { ok: false, reason: c.expect.reject });
    }
  });
}

test('normalizing a normalized URL returns it unchanged', () => {
  for (const c of NORMALIZE_CASES) {
    if (typeof c.expect !== 'string') continue;
    assert.deepEqual(normalizeUrl(c.expect), { ok: true, url: c.expect }, `not idempotent for ${c.expect}`);
  }
});

test('every accepted URL is at most MAX_URL_LENGTH characters', () => {
  assert.equal(MAX_URL_LENGTH, 2000);
  for (const c of NORMALIZE_CASES) {
    const got = normalizeUrl(c.raw, c.base);
    if (got.ok) assert.ok(got.url.length <= MAX_URL_LENGTH);
  }
});

test('normalizeUrl never throws on hostile input', () => {
  const junk = [
    '\u0000',
    '%',
    'http://[',
    'http://a.com/\ud800',
    ':::',
    'http:\\\\',
    '\uffff'.repeat(5000),
    'h'.repeat(100_000),
  ];
  for (const raw of junk) {
    assert.doesNotThrow(() => normalizeUrl(raw));
    assert.doesNotThrow(() => normalizeUrl(raw, 'http://example.com/'));
  }
});

test('siteOf is the registered domain by the ICANN public suffix list', () => {
  assert.equal(siteOf('http://blog.example.co.uk/x'), 'example.co.uk');
  assert.equal(siteOf('https://a.b.example.com/'), 'example.com');
  assert.equal(siteOf('http://example.com/'), 'example.com');
  assert.equal(siteOf('http://www.city.kawasaki.jp/'), 'city.kawasaki.jp');
  // private suffixes (github.io) are ignored, so all of github.io is one site
  assert.equal(siteOf('https://someone.github.io/page'), 'github.io');
  assert.equal(siteOf('http://xn--mnchen-3ya.de/'), 'xn--mnchen-3ya.de');
});

test('siteOf falls back to the hostname for IPs and hosts without a registered domain', () => {
  assert.equal(siteOf('http://192.0.2.7:8080/'), '192.0.2.7');
  assert.equal(siteOf('http://[2001:db8::1]/'), '[2001:db8::1]');
  assert.equal(siteOf('http://localhost:3000/'), 'localhost');
  assert.equal(siteOf('http://co.uk/'), 'co.uk');
});

test('hostOf is the lowercase hostname without port', () => {
  assert.equal(hostOf('http://WWW.Example.com:8080/a'), 'www.example.com');
  assert.equal(hostOf('https://example.com./'), 'example.com');
  assert.equal(hostOf('http://[::1]:81/'), '[::1]');
});

test('siteOf and hostOf refuse a string that is not an absolute URL with CS_BAD_URL', () => {
  for (const fn of [siteOf, hostOf]) {
    assert.throws(
      () => fn('/relative'),
      (err: unknown) => err instanceof CrawlError && err.code === 'CS_BAD_URL',
    );
  }
});
