import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
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

/**
 * Makes a throw-away CA (valid 2 days) and a server certificate for `hosts` (one subjectAltName
 * each) in `dir`, with the machine's `openssl`. Nothing is trusted beyond the client that is
 * given `caFile`. Throws CS_INTERNAL with openssl's output when a step fails.
 */
export function makeTestCertificates(dir: string, hosts: readonly string[]): TestCertificates {
  const file = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  writeFileSync(
    file('server.ext'),
    [
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
      `subjectAltName=${hosts.map((h) => `DNS:${h}`).join(',')}`,
      '',
    ].join('\n'),
  );
  openssl(
    ['req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '2'],
    [
      '-subj',
      '/CN=crawlstream synthetic web test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
  );
  openssl(['req', ...ec, '-keyout', file('server.key'), '-out', file('server.csr')], ['-subj', '/CN=synthetic-web']);
  openssl(
    ['x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key')],
    ['-CAcreateserial', '-out', file('server.pem'), '-days', '2', '-extfile', file('server.ext')],
  );
  return {
    caFile: file('ca.pem'),
    caPem: readFileSync(file('ca.pem'), 'utf8'),
    key: readFileSync(file('server.key'), 'utf8'),
    cert: readFileSync(file('server.pem'), 'utf8'),
  };
}

function openssl(...parts: string[][]): void {
  const args = parts.flat();
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  if (r.status !== 0)
    throw new CrawlError('CS_INTERNAL', `openssl ${args[0]} failed (${r.status ?? r.error?.message}): ${r.stderr}`);
}

/**
 * An https server, not yet listening, serving `handle` with `tls`'s key and certificate; the test
 * web listens with one on each of its loopback addresses (`listenEverywhere`).
 */
export function httpsServer(
  tls: { key: string; cert: string },
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Server {
  return createServer({ key: tls.key, cert: tls.cert }, handle);
}
