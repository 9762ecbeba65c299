import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { surt } from '../../../processors/parser/surt.js';
import { python } from '../../python/python.js';

// what pywb meets: hosts, ports, paths, queries, escapes, session ids, addresses, odd forms
const URLS = [
  'http://example.com/',
  'http://www.Example.COM/Index.HTML',
  'https://www2.example.com:443/a/',
  'http://example.com:80/',
  'http://site-1.test:8123/page/2.html',
  'http://example.com/a/b/../c/./d//e/',
  'http://example.com/../x',
  'http://example.com/?',
  'http://example.com/a?',
  'http://example.com/a?b=2&a=1&B=0&a',
  'http://example.com/a?a=&a&a=1',
  'http://example.com/p?jsessionid=0123456789abcdef0123456789abcdef&x=1',
  'http://example.com/p?x=1&PHPSESSID=0123456789abcdef0123456789ABCDEF',
  'http://example.com/p?sid=0123456789abcdef0123456789abcdef',
  'http://example.com/p?cfid=12&cftoken=34&z=9',
  'http://example.com/dir/(S(abcdefghijklmnopqrstuvwx))/page.aspx?q',
  'http://example.com/dir/(abcdefghijklmnopqrstuvwx)/page.aspx',
  'http://example.com/%7Euser/a%20b/%2541/%2f?q=%3D%26&r=a%20b',
  'http://example.com/a b?c d#frag',
  'http://example.com/#only-frag',
  'http://user:pass@example.com:8080/x',
  'http://127.0.0.1:8080/x',
  'http://2130706433/',
  'http://0177.0.0.1/',
  'http://10.1/',
  'http://[::1]:8080/x',
  'http://example.com./x',
  'http://ex..ample.com/',
  'http://bücher.example/straße?ä=ö',
  'http://example.com/caf%C3%A9/é',
  'HTTP://EXAMPLE.com/UPPER',
  'http://http://example.com/doubled',
  'example.com/no-scheme',
  '  http://example.com/\tspaced\n  ',
  'http://example.com:abc/bad-port',
  'http://example.com:99999/too-big',
  'dns:example.com',
  'filedesc://crawl.warc.gz',
  'mailto:someone@example.com',
  'ftp://www.example.com:21/file',
  '',
];

test('SURT keys are those of the Python surt package pywb and cdxj-indexer use', () => {
  // cdxj-indexer's fallback: a URL surt cannot parse keys its line as itself
  const script = [
    'import json, sys, surt',
    'def key(u):',
    '    try: return surt.surt(u)',
    '    except Exception: return u',
    'print(json.dumps([key(u) for u in json.load(sys.stdin)]))',
  ].join('\n');
  const r = spawnSync(python(), ['-c', script], { input: JSON.stringify(URLS), encoding: 'utf8' });
  assert.equal(r.status, 0, `python surt failed: ${r.stderr}`);
  const expected = JSON.parse(r.stdout) as string[];
  assert.equal(expected.length, URLS.length);
  const mismatches = URLS.map((u, i) => ({ url: u, ours: surt(u), surt: expected[i] })).filter(
    (m) => m.ours !== m.surt,
  );
  assert.deepEqual(mismatches, []);
});

test('a SURT key reverses the host, drops www and the default port, and sorts the query', () => {
  assert.equal(surt('http://www.Example.com:80/A/?b=1&a=2'), 'com,example)/a?a=2&b=1');
  assert.equal(surt('https://site.test:8443/'), 'test,site:8443)/');
});
