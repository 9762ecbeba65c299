import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SyntheticWeb } from '../../../synthetic-web/synthetic-web.js';
import { makeTestCertificates, type TestCertificates } from '../../../synthetic-web/tls.js';
import { loopbackClient } from './loopback.js';

const sites = [
  {
    host: 'tls.test',
    robots: { status: 200, body: 'User-agent: *\nDisallow: /x\n' },
    pages: { '/': { title: 'over tls' } },
  },
];
let dir: string;
let certs: TestCertificates;
let web: SyntheticWeb;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'crawlstream-https-'));
  certs = makeTestCertificates(dir, ['tls.test']);
  web = await SyntheticWeb.start({ sites, tls: certs });
});
after(async () => {
  await web.close();
  rmSync(dir, { recursive: true, force: true });
});

test('an https origin signed by the --ca-file CA is fetched, and the server logs the scheme', async () => {
  const client = loopbackClient({ rules: ['*.test=127.0.0.1'], extraCaPem: certs.caPem });
  try {
    const out = await client.fetch(web.httpsUrl('tls.test', '/robots.txt'));
    assert.equal(out.errorCode, undefined, out.errorMessage);
    assert.equal(out.status, 200);
    assert.equal(out.body.toString(), 'User-agent: *\nDisallow: /x\n');
    assert.deepEqual(
      web.requests().map((e) => [e.scheme, e.host, e.path]),
      [['https', 'tls.test', '/robots.txt']],
    );
  } finally {
    await client.close();
  }
});

test('an https origin whose CA is not trusted fails as CS_TLS, before any request is made', async () => {
  const before = web.requests().length;
  const client = loopbackClient({ rules: ['*.test=127.0.0.1'] });
  try {
    const out = await client.fetch(web.httpsUrl('tls.test'));
    assert.equal(out.status, 0);
    assert.equal(out.errorCode, 'CS_TLS', out.errorMessage);
    assert.equal(web.requests().length, before);
  } finally {
    await client.close();
  }
});

test('the certificate is checked against the host name, not just the CA', async () => {
  const client = loopbackClient({ rules: ['*.test=127.0.0.1'], extraCaPem: certs.caPem });
  try {
    const out = await client.fetch(`https://other.test:${web.httpsPort}/`);
    assert.equal(out.errorCode, 'CS_TLS', out.errorMessage);
  } finally {
    await client.close();
  }
});
