import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { InvalidOptionError } from '../../core/errors.js';
import { crawlerAddressArgs } from '../../synthetic-web/addresses.js';
import { realWeb } from '../../synthetic-web/real-web.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { makeHostCertificates, makeTestCertificates, type TestCertificates } from '../../synthetic-web/tls.js';

/** The status of GET `/` for `host`, sent to `address` on the web's port. */
function statusAt(web: SyntheticWeb, address: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port: web.port, path: '/', agent: false, headers: { host } }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end();
  });
}

/** The status and body of GET `path` over https for `host`, sent to `address` on the web's https port. */
function httpsAt(
  web: SyntheticWeb,
  certs: TestCertificates,
  address: string,
  host: string,
  path = '/',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: address, port: web.httpsPort, path, servername: host, ca: certs.caPem, agent: false, headers: { host } },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.once('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.once('error', reject);
    req.end();
  });
}

const site = (host: string, address?: string) => ({
  host,
  ...(address === undefined ? {} : { address }),
  pages: { '/': { title: host, links: [] } },
});

test('sites on other loopback addresses are served there, on the one port, and logged with the address', async () => {
  const web = await SyntheticWeb.start({
    sites: [site('a.test'), site('b.test', '127.0.0.7'), site('c.test', '127.0.0.7')],
  });
  try {
    assert.equal(await statusAt(web, '127.0.0.1', 'a.test'), 200);
    assert.equal(await statusAt(web, '127.0.0.7', 'b.test'), 200);
    assert.equal(await statusAt(web, '127.0.0.7', 'c.test'), 200);
    // a request that reached another address than its site's is refused, as a real server would not serve it
    assert.equal(await statusAt(web, '127.0.0.1', 'b.test'), 421);
    assert.equal(await statusAt(web, '127.0.0.7', 'a.test'), 421);
    assert.deepEqual(
      web.requests().map((e) => [e.host, e.address, e.status]),
      [
        ['a.test', '127.0.0.1', 200],
        ['b.test', '127.0.0.7', 200],
        ['c.test', '127.0.0.7', 200],
        ['b.test', '127.0.0.1', 421],
        ['a.test', '127.0.0.7', 421],
      ],
    );
    assert.equal(web.ipOf('b.test'), '127.0.0.7');
    assert.equal(web.ipOf('a.test'), '127.0.0.1');
    assert.equal(web.ipOf('nowhere.test'), undefined);
  } finally {
    await web.close();
  }
});

test('a site address outside 127.0.0.0/8 is refused before anything listens', async () => {
  for (const address of ['10.0.0.1', '0.0.0.0', '::1', '128.0.0.1', 'localhost']) {
    await assert.rejects(SyntheticWeb.start({ sites: [site('a.test', address)] }), (err: unknown) => {
      assert.ok(err instanceof InvalidOptionError, String(err));
      assert.match(err.message, /a\.test: address must be an IPv4 loopback address/);
      return true;
    });
  }
});

test('crawler arguments send each site to its address: exact and subdomain rules, one --allow-ip each', () => {
  assert.deepEqual(
    crawlerAddressArgs([
      { host: 'a.test' },
      { host: 'b.test', address: '127.0.0.7' },
      { host: 'c.test', address: '127.0.0.7', subdomains: true },
      { host: 'd.test', address: '127.0.0.1' },
    ]),
    [
      ...['--resolve', 'b.test=127.0.0.7'],
      ...['--resolve', 'c.test=127.0.0.7', '--resolve', '*.c.test=127.0.0.7'],
      ...['--allow-ip', '127.0.0.7/32'],
    ],
  );
});

test('the real-shaped web spreads its hosts: a shared-hosting address, the rest drawn among the others', () => {
  const { sites } = realWeb();
  const byAddress = new Map<string, string[]>();
  for (const s of sites) byAddress.set(s.address!, [...(byAddress.get(s.address!) ?? []), s.host]);
  assert.equal(byAddress.size, 24);
  assert.equal(byAddress.get('127.0.0.1')!.length, 60);
  assert.ok(byAddress.get('127.0.0.1')!.every((h) => /^w\d+\.test$/.test(h)));
  // every other address holds a few hosts, none as many as the shared one
  for (const [address, hosts] of byAddress) if (address !== '127.0.0.1') assert.ok(hosts.length < 60, address);
  assert.deepEqual(
    realWeb(240, 300, 200, 1).sites.filter((s) => s.address !== undefined),
    [],
    'one address: every host on the default',
  );
});

test('with tls, https is served on every address of the web, on one port, and refused 421 when misdirected', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-addresses-tls-'));
  const certs = makeTestCertificates(dir, ['a.test', 'b.test', 'c.test']);
  const web = await SyntheticWeb.start({
    sites: [
      site('a.test'),
      { ...site('b.test', '127.0.0.7'), origins: { httpToHttps: true } },
      {
        host: 'c.test',
        address: '127.0.0.9',
        pages: { '/': { title: 'c', links: ['https://b.test:{{HTTPS_PORT}}/', 'http://a.test:{{PORT}}/'] } },
      },
    ],
    tls: certs,
  });
  try {
    assert.ok(web.httpsPort > 0 && web.httpsPort !== web.port);
    assert.equal((await httpsAt(web, certs, '127.0.0.1', 'a.test')).status, 200);
    assert.equal((await httpsAt(web, certs, '127.0.0.7', 'b.test')).status, 200);
    // http still answers on the site's address: here with the site's redirect to its https origin
    assert.equal(await statusAt(web, '127.0.0.7', 'b.test'), 301);
    assert.equal((await httpsAt(web, certs, '127.0.0.1', 'b.test')).status, 421);
    assert.equal((await httpsAt(web, certs, '127.0.0.7', 'c.test')).status, 421);
    const page = await httpsAt(web, certs, '127.0.0.9', 'c.test');
    assert.equal(page.status, 200);
    assert.ok(page.body.includes(`href="https://b.test:${web.httpsPort}/"`), 'https port filled into the page');
    assert.ok(page.body.includes(`href="http://a.test:${web.port}/"`), 'http port filled into the page');
    assert.deepEqual(
      web.requests().map((e) => [e.scheme, e.host, e.address, e.status]),
      [
        ['https', 'a.test', '127.0.0.1', 200],
        ['https', 'b.test', '127.0.0.7', 200],
        ['http', 'b.test', '127.0.0.7', 301],
        ['https', 'b.test', '127.0.0.1', 421],
        ['https', 'c.test', '127.0.0.7', 421],
        ['https', 'c.test', '127.0.0.9', 200],
      ],
    );
  } finally {
    await web.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with host certificates, an https client naming a host (SNI) is served the certificate for it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-addresses-sni-'));
  // the default certificate names a.test only: b.test and c.test verify only with their own
  const certs = makeTestCertificates(dir, ['a.test']);
  const hosts = makeHostCertificates(dir, [['b.test'], ['c.test', 'd.test']]);
  const web = await SyntheticWeb.start({
    sites: [site('a.test'), site('b.test', '127.0.0.7'), site('c.test', '127.0.0.7'), site('d.test')],
    tls: { ...certs, hosts },
  });
  try {
    for (const [address, host] of [
      ['127.0.0.1', 'a.test'],
      ['127.0.0.7', 'b.test'],
      ['127.0.0.7', 'c.test'],
      ['127.0.0.1', 'd.test'],
    ] as const)
      assert.equal((await httpsAt(web, certs, address, host)).status, 200, host);
    const peer = await new Promise<string>((resolve, reject) => {
      const req = httpsRequest(
        { host: '127.0.0.7', port: web.httpsPort, servername: 'c.test', ca: certs.caPem, agent: false },
        (res) => {
          res.resume();
          resolve(String((res.socket as TLSSocket).getPeerCertificate().subjectaltname));
        },
      );
      req.setHeader('host', 'c.test');
      req.once('error', reject);
      req.end();
    });
    assert.equal(peer, 'DNS:c.test, DNS:d.test');
  } finally {
    await web.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
