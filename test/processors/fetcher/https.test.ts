import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createSecureContext, type TLSSocket } from 'node:tls';
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

test('onSend runs when the request is written, after the TLS handshake, however long the handshake takes', async () => {
  const HANDSHAKE_MS = 300;
  const context = createSecureContext({ key: certs.key, cert: certs.cert });
  const events: string[] = [];
  const server = createServer(
    {
      key: certs.key,
      cert: certs.cert,
      // the server answers the ClientHello late, as a loaded or distant one does
      SNICallback: (_name, done) => setTimeout(() => done(null, context), HANDSHAKE_MS),
    },
    (req, res) => {
      events.push(`server ${req.url}`);
      res.end('ok');
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const client = loopbackClient({ rules: ['*.test=127.0.0.1'], extraCaPem: certs.caPem });
  try {
    const started = performance.now();
    let sentAfter = -1;
    const out = await client.fetch(`https://tls.test:${port}/slow`, {}, undefined, () => {
      sentAfter = performance.now() - started;
      events.push('sent /slow');
    });
    assert.equal(out.errorCode, undefined, out.errorMessage);
    assert.deepEqual(events, ['sent /slow', 'server /slow']);
    assert.ok(
      sentAfter >= HANDSHAKE_MS - 5,
      `sent ${sentAfter.toFixed(1)} ms after the fetch began, handshake ${HANDSHAKE_MS} ms`,
    );
  } finally {
    await client.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('TLS sessions are resumed on reconnection, for more hosts than undici keeps (100) and after garbage collections', async () => {
  const HOSTS = 150;
  const names = Array.from({ length: HOSTS }, (_, i) => `s${i}.test`);
  const many = makeTestCertificates(mkdtempSync(join(dir, 'many-')), names);
  let handshakes = 0;
  let resumed = 0;
  const server = createServer({ key: many.key, cert: many.cert }, (_req, res) => {
    // every answer closes its connection: the next fetch of the host connects again
    res.setHeader('connection', 'close');
    res.end('ok');
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    handshakes++;
    if (socket.isSessionReused()) resumed++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const client = loopbackClient({ rules: ['*.test=127.0.0.1'], extraCaPem: many.caPem });
  const fetchAll = async () => {
    for (const name of names) {
      const out = await client.fetch(`https://${name}:${port}/`);
      assert.equal(out.errorCode, undefined, out.errorMessage);
    }
  };
  try {
    await fetchAll();
    assert.equal(resumed, 0, 'nothing to resume the first time');
    // garbage of a busy process between the two rounds (undici's cache held sessions weakly)
    for (let i = 0; i < 50; i++) Buffer.alloc(1 << 20).fill(i);
    await fetchAll();
    assert.equal(handshakes, 2 * HOSTS);
    assert.equal(resumed, HOSTS, `${resumed} of the second round's ${HOSTS} handshakes resumed a session`);
    assert.equal(client.tlsSessions.size, HOSTS);
  } finally {
    await client.close();
    await new Promise((resolve) => server.close(resolve));
  }
});
