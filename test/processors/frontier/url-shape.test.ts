import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import { bandOf } from '../../../processors/frontier/front-queues.js';
import { trapCheck } from '../../../processors/frontier/url-rules.js';
import { parsedShape, urlShape } from '../../../processors/frontier/url-shape.js';
import { fingerprint64, packedFingerprints } from '../../../processors/common/fingerprint.js';

// the frontier's URL handling before it parsed once: the reference the one-parse code must match
function hostOfByParser(url: string): string {
  return new URL(url).hostname.replace(/\.+$/, '');
}

function trapCheckByParser(url: string, redirectHops: number, config: CrawlConfig): string | undefined {
  if (url.length > config.maxUrlLength) return 'too-long';
  if (redirectHops > config.maxRedirectHops) return 'too-many-redirects';
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return 'bad-url';
  }
  const segments = path.split('/').filter((s) => s.length > 0);
  if (segments.length > config.maxPathDepth) return 'too-deep';
  const counts = new Map<string, number>();
  for (const s of segments) {
    const n = (counts.get(s) ?? 0) + 1;
    if (n >= config.maxSegmentRepeats) return 'repeated-segment';
    counts.set(s, n);
  }
  return undefined;
}

function bandOfByParser(url: string, depth: number): number {
  if (depth === 0) return 0;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 3;
  }
  const params = u.search.length > 1 ? u.search.slice(1).split('&').length : 0;
  const segments = u.pathname.split('/').filter(Boolean).length;
  if (params > 3 || url.length > 300 || segments > 8 || depth > 10) return 3;
  if (depth <= 2) return 1;
  return 2;
}

const TABLE = [
  'https://www.example.com/',
  'http://example.com/a/b/c?x=1&y=2&z=3&w=4',
  'https://example.com/a//b/',
  'https://example.com/a/b/a/c/a',
  'https://example.com/cal/cal/cal',
  'https://example.com/?',
  'https://example.com/a?',
  'https://example.com/a?b?c',
  'https://example.com/a#frag',
  'https://example.com',
  'https://example.com?q=1',
  'https://Example.com/',
  'HTTPS://example.com/',
  'https://example.com:443/',
  'https://example.com:8443/x',
  'https://user:pw@example.com/',
  'https://example.com./a',
  'https://example.com../a',
  'https://.example.com/a',
  'https://a..b.com/',
  'https://192.168.0.1/',
  'https://0x7f.1/',
  'https://1.2.3.4.5/',
  'https://example.123/',
  'https://123.example/',
  'https://[::1]/x',
  'https://xn--bcher-kva.example/',
  'https://xn--zz.example/',
  'https://bücher.example/',
  'https://example.com/ä',
  'https://example.com/a b',
  'https://example.com/a\tb',
  ' https://example.com/',
  'https://example.com/a\\b',
  'https://example.com/./a',
  'https://example.com/a/../b',
  'https://example.com/a/%2e%2E/b',
  'https://example.com/%2e/b',
  'https://example.com/a%2fb/c',
  'https://example.com/.well-known/x',
  'https://example.com/a.b/c..d/',
  "https://example.com/it's?q='x'",
  'https://example.com/{x}|^`<>"',
  'https://example.com/a;b=c/d',
  'https://example.com/~user/!$&()*+,;=:@',
  'https://exa_mple.com/',
  'https://-x-.example/',
  'https://example.com/?a=%zz&b=%41',
  'ftp://example.com/a',
  'mailto:a@example.com',
  'http:/example.com/a',
  'http:///example.com/a',
  'https://',
  'not a url',
  '',
];

function* generated(n: number): Generator<string> {
  const pieces = [
    'a',
    'b',
    'xyz',
    '',
    '.',
    '..',
    '%2e',
    '%41',
    'ä',
    ' ',
    '?',
    '#',
    '&',
    '=',
    ';',
    ':',
    '@',
    'A',
    '1',
    '0x1',
    '-',
    '_',
    '~',
    "'",
    '\\',
    '|',
  ];
  const hosts = [
    'example.com',
    'www.example.co.uk',
    'a.b.c.d',
    'x1.example',
    'example.1',
    '1.2.3.4',
    'EXAMPLE.com',
    'ex_ample.com',
    'example.com:80',
    'example.com.',
    'xn--bcher-kva.example',
  ];
  let seed = 12345;
  const rnd = (k: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % k;
  };
  for (let i = 0; i < n; i++) {
    let path = '';
    const segs = rnd(12);
    for (let s = 0; s < segs; s++)
      path += '/' + pieces[rnd(pieces.length)] + (rnd(3) === 0 ? pieces[rnd(pieces.length)] : '');
    let query = '';
    if (rnd(3) === 0) {
      query = '?';
      for (let q = rnd(6); q > 0; q--)
        query += (query.length > 1 ? '&' : '') + pieces[rnd(pieces.length)] + '=' + pieces[rnd(pieces.length)];
    }
    yield `${rnd(2) ? 'https' : 'http'}://${hosts[rnd(hosts.length)]}${path}${query}`;
  }
}

test('one parse of a URL agrees with the URL parser on host, origin, path and query', () => {
  for (const url of [...TABLE, ...generated(20_000)]) {
    assert.deepEqual(urlShape(url), parsedShape(url), url);
    const shape = urlShape(url);
    if (shape) assert.equal(shape.host, hostOfByParser(url), url);
  }
});

test('trap rules and bands from one parse are those of the URL parser', () => {
  const strict = { ...defaultCrawlConfig, maxPathDepth: 4, maxSegmentRepeats: 2 };
  for (const url of [...TABLE, ...generated(20_000)]) {
    for (const config of [defaultCrawlConfig, strict]) {
      for (const hops of [0, 6]) assert.equal(trapCheck(url, hops, config), trapCheckByParser(url, hops, config), url);
    }
    for (const depth of [0, 1, 2, 5, 11])
      assert.equal(bandOf(url, urlShape(url), depth), bandOfByParser(url, depth), `${url} at depth ${depth}`);
  }
});

test('fingerprints of a batch are the 64-bit fingerprints of the parser, big-endian', () => {
  const urls = [...TABLE, 'https://example.com/\ud800', 'https://example.com/😀'];
  const fps = packedFingerprints(urls);
  assert.equal(fps.length, 8 * urls.length);
  for (const [i, url] of urls.entries()) {
    assert.equal(fps.readBigUInt64BE(8 * i), fingerprint64(url), url);
    assert.deepEqual(packedFingerprints([url]), fps.subarray(8 * i, 8 * i + 8));
  }
});
