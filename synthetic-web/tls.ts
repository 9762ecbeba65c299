import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import { CrawlError } from '../core/errors.js';

/** A CA made for one test run and a server certificate it signed for the test web's host names. */
export interface TestCertificates {
  /** PEM of the CA certificate: what a client must trust (`--ca-file`, NODE_EXTRA_CA_CERTS). */
  readonly caFile: string;
  readonly caPem: string;
  /** PEM key and certificate for the server (`SyntheticWebOptions.tls`). */
  readonly key: string;
  readonly cert: string;
}

/** A server certificate and its key (PEM) for a few host names, served to clients that name one of them (SNI). */
export interface HostCertificate {
  readonly hosts: readonly string[];
  readonly key: string;
  readonly cert: string;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/**
 * Makes a throw-away CA (valid 2 days) and a server certificate for `hosts` (one subjectAltName
 * each) in `dir`, with the machine's `openssl`. Nothing is trusted beyond the client that is
 * given `caFile`. Throws CS_INTERNAL with openssl's output when a step fails.
 */
export function makeTestCertificates(dir: string, hosts: readonly string[]): TestCertificates {
  const file = (name: string) => join(dir, name);
  openssl(
    ['req', '-x509', ...EC, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '2'],
    [
      '-subj',
      '/CN=crawlstream synthetic web test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
  );
  const server = signHostCertificate(dir, 'server', hosts);
  return { caFile: file('ca.pem'), caPem: readFileSync(file('ca.pem'), 'utf8'), key: server.key, cert: server.cert };
}

/**
 * Certificates signed by the CA that {@link makeTestCertificates} made in `dir`, one per group of
 * `groups` (its hosts as subjectAltNames): the many small certificates of a real web, so a
 * handshake carries a certificate of a real size rather than one naming every host of the web.
 * Throws CS_INTERNAL with openssl's output when a step fails.
 */
export function makeHostCertificates(dir: string, groups: readonly (readonly string[])[]): HostCertificate[] {
  return groups.map((hosts, i) => signHostCertificate(dir, `host-${i}`, hosts));
}

function signHostCertificate(dir: string, name: string, hosts: readonly string[]): HostCertificate {
  const file = (suffix: string) => join(dir, `${name}${suffix}`);
  writeFileSync(
    file('.ext'),
    [
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
      `subjectAltName=${hosts.map((h) => `DNS:${h}`).join(',')}`,
      '',
    ].join('\n'),
  );
  openssl(['req', ...EC, '-keyout', file('.key'), '-out', file('.csr')], ['-subj', '/CN=synthetic-web']);
  openssl(
    ['x509', '-req', '-in', file('.csr'), '-CA', join(dir, 'ca.pem'), '-CAkey', join(dir, 'ca.key')],
    ['-CAcreateserial', '-out', file('.pem'), '-days', '2', '-extfile', file('.ext')],
  );
  return { hosts, key: readFileSync(file('.key'), 'utf8'), cert: readFileSync(file('.pem'), 'utf8') };
}

function openssl(...parts: string[][]): void {
  const args = parts.flat();
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  if (r.status !== 0)
    throw new CrawlError('CS_INTERNAL', `openssl ${args[0]} failed (${r.status ?? r.error?.message}): ${r.stderr}`);
}

/**
 * A maker of https servers, not yet listening, serving `handle` with `tls`'s key and certificate,
 * or, to a client that names (SNI) a host of one of `tls.hosts`, with that one's. The test web
 * listens with one on each of its loopback addresses (`listenEverywhere`); the certificates' secure
 * contexts are made once here and shared by all of them (made per server, 500 addresses × 200
 * certificates took minutes and gigabytes).
 */
export function httpsServers(
  tls: { key: string; cert: string; hosts?: readonly HostCertificate[] },
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): () => Server {
  const byName = new Map<string, SecureContext>();
  for (const one of tls.hosts ?? []) {
    const context = createSecureContext({ key: one.key, cert: one.cert });
    for (const host of one.hosts) byName.set(host, context);
  }
  const sni =
    byName.size === 0
      ? {}
      : {
          SNICallback: (name: string, done: (err: Error | null, ctx?: SecureContext) => void) =>
            done(null, byName.get(name.toLowerCase())),
        };
  return () => createServer({ key: tls.key, cert: tls.cert, ...sni }, handle);
}
