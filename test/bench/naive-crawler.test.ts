import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { naiveCrawl } from '../../bench/naive-crawler.js';
import { HTTPS_PORT } from '../../synthetic-web/origins.js';
import { PORT } from '../../synthetic-web/sites.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { makeHostCertificates, makeTestCertificates } from '../../synthetic-web/tls.js';

test('the naive crawler fetches every page of the web over both schemes, and only hosts of its map', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-naive-'));
  const certs = makeTestCertificates(dir, ['default.test']);
  const hosts = makeHostCertificates(dir, [['b.test']]);
  const web = await SyntheticWeb.start({
    sites: [
      {
        host: 'a.test',
        robots: { status: 200, body: 'User-agent: *\nDisallow: /\n' },
        pages: {
          '/': {
            title: 'a',
            links: ['/one', `https://b.test:${HTTPS_PORT}/`, `http://elsewhere.test:${PORT}/`, 'http://constructor/'],
          },
          '/one': { title: 'a one', links: ['/', `http://b.test:${PORT}/two#x`] },
        },
      },
      {
        host: 'b.test',
        address: '127.0.0.7',
        origins: { httpToHttps: true },
        pages: { '/': { title: 'b', links: ['/two'] }, '/two': { title: 'b two', links: ['/'] } },
      },
      { host: 'elsewhere.test', pages: { '/': { title: 'not in the map' } } },
    ],
    tls: { ...certs, hosts },
  });
  try {
    const result = await naiveCrawl({
      seeds: [web.url('a.test')],
      addresses: { 'a.test': '127.0.0.1', 'b.test': '127.0.0.7' },
      caPem: certs.caPem,
      concurrency: 4,
    });
    assert.deepEqual(result, { pages: 4, errors: 0 });
    const log = web.requests();
    assert.deepEqual(
      log
        .filter((e) => e.status === 200)
        .map((e) => `${e.scheme}://${e.host}${e.path}`)
        .sort(),
      ['http://a.test/', 'http://a.test/one', 'https://b.test/', 'https://b.test/two'],
    );
    // impolite by design: no robots.txt, and a disallowed site fetched all the same
    assert.ok(log.every((e) => e.path !== '/robots.txt' && e.host !== 'elsewhere.test'));
    assert.ok(
      log.every((e) => e.status !== 421),
      'every host reached at its own address',
    );
  } finally {
    await web.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
