import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseControlArgs } from '../../cli/control.js';
import { runTopics } from '../../cli/topics.js';
import { parseRunArgs } from '../../cli/run-options.js';
import { isCrawlError } from '../../core/errors.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-kafka-security-'));
const CA = path.join(dir, 'ca.pem');
const KEY = path.join(dir, 'client.key');
const PASSWORD = path.join(dir, 'password');
const EMPTY = path.join(dir, 'empty');
fs.writeFileSync(CA, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
fs.writeFileSync(KEY, '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n');
fs.writeFileSync(PASSWORD, 's3cret\n');
fs.writeFileSync(EMPTY, '\n');

const BASE = ['--role', 'all', '--brokers', '127.0.0.1:9093', '--registry', 'http://127.0.0.1:8081', '--data', dir];

function refuses(run: () => unknown, message: string): void {
  assert.throws(run, (err: unknown) => {
    assert.ok(isCrawlError(err), `expected a CrawlError, got ${String(err)}`);
    assert.equal(err.code, 'CS_INVALID_OPTION');
    assert.equal(err.message.split('\n')[0], message);
    return true;
  });
}

test('run: no security settings means PLAINTEXT without credentials', () => {
  assert.deepEqual(parseRunArgs(BASE, {}).security, {});
});

test('run: TLS with a CA and SCRAM, the password from its file (trailing newline dropped)', () => {
  const cmd = parseRunArgs(
    [
      ...BASE,
      '--kafka-tls',
      '--kafka-ca',
      CA,
      '--kafka-sasl-mechanism',
      'scram-sha-512',
      '--kafka-sasl-username',
      'alice',
      '--kafka-sasl-password-file',
      PASSWORD,
      '--registry-username',
      'reg',
      '--registry-password-file',
      PASSWORD,
    ],
    {},
  );
  assert.deepEqual(cmd.security, {
    kafka: { tls: true, caFile: CA, sasl: { mechanism: 'scram-sha-512', username: 'alice', password: 's3cret' } },
    registry: { username: 'reg', password: 's3cret' },
  });
});

test('run: every setting also comes from CRAWLSTREAM_*; passwords from CRAWLSTREAM_*_PASSWORD', () => {
  const cmd = parseRunArgs(BASE, {
    CRAWLSTREAM_KAFKA_TLS: 'true',
    CRAWLSTREAM_KAFKA_SASL_MECHANISM: 'plain',
    CRAWLSTREAM_KAFKA_SASL_USERNAME: 'bob',
    CRAWLSTREAM_KAFKA_SASL_PASSWORD: 'pw',
    CRAWLSTREAM_REGISTRY_USERNAME: 'reg',
    CRAWLSTREAM_REGISTRY_PASSWORD: 'rpw',
  });
  assert.deepEqual(cmd.security, {
    kafka: { tls: true, sasl: { mechanism: 'plain', username: 'bob', password: 'pw' } },
    registry: { username: 'reg', password: 'rpw' },
  });
});

test('run: inconsistent or unreadable security settings are refused, each with a precise message', () => {
  const run =
    (args: string[], env: NodeJS.ProcessEnv = {}) =>
    () =>
      parseRunArgs([...BASE, ...args], env);
  refuses(run(['--kafka-sasl-username', 'alice']), '--kafka-sasl-username needs --kafka-sasl-mechanism');
  refuses(run(['--kafka-sasl-password-file', PASSWORD]), '--kafka-sasl-password-file needs --kafka-sasl-mechanism');
  refuses(
    run(['--kafka-sasl-mechanism', 'scram-sha-256'], { CRAWLSTREAM_KAFKA_SASL_PASSWORD: 'pw' }),
    '--kafka-sasl-mechanism scram-sha-256 needs --kafka-sasl-username',
  );
  refuses(
    run(['--kafka-sasl-mechanism', 'plain', '--kafka-sasl-username', 'alice']),
    '--kafka-sasl-mechanism plain needs a password: --kafka-sasl-password-file FILE or CRAWLSTREAM_KAFKA_SASL_PASSWORD',
  );
  refuses(
    run(['--kafka-sasl-mechanism', 'plain', '--kafka-sasl-username', 'a', '--kafka-sasl-password-file', PASSWORD], {
      CRAWLSTREAM_KAFKA_SASL_PASSWORD: 'pw',
    }),
    'give --kafka-sasl-password-file or CRAWLSTREAM_KAFKA_SASL_PASSWORD, not both',
  );
  refuses(
    run(['--kafka-sasl-mechanism', 'plain', '--kafka-sasl-username', 'a', '--kafka-sasl-password-file', EMPTY]),
    `--kafka-sasl-password-file ${EMPTY} is empty`,
  );
  refuses(
    run(['--kafka-sasl-mechanism', 'plain', '--kafka-sasl-username', 'a', '--kafka-sasl-password-file', `${dir}/nope`]),
    `--kafka-sasl-password-file ${dir}/nope cannot be read: ENOENT`,
  );
  refuses(
    run(['--kafka-sasl-mechanism', 'gssapi']),
    '--kafka-sasl-mechanism must be one of plain, scram-sha-256, scram-sha-512, oauthbearer, got "gssapi" (from flag --kafka-sasl-mechanism)',
  );
  refuses(run(['--kafka-ca', CA]), `Kafka CA file ${CA} given without TLS (--kafka-tls)`);
  refuses(
    run(['--kafka-tls', '--kafka-cert', CA]),
    `Kafka client certificate ${CA} given without its key (--kafka-key)`,
  );
  refuses(
    run(['--kafka-tls', '--kafka-key', KEY]),
    `Kafka client key ${KEY} given without its certificate (--kafka-cert)`,
  );
  refuses(
    run(['--kafka-tls', '--kafka-ca', `${dir}/missing.pem`]),
    `Kafka CA file ${dir}/missing.pem cannot be read: ENOENT`,
  );
  refuses(run(['--kafka-tls', '--kafka-ca', PASSWORD]), `Kafka CA file ${PASSWORD} holds no PEM CERTIFICATE`);
  refuses(
    run(['--kafka-tls', '--kafka-cert', CA, '--kafka-key', CA]),
    `Kafka client key ${CA} holds no PEM PRIVATE KEY`,
  );
  refuses(run(['--registry-password-file', PASSWORD]), '--registry-password-file needs --registry-username');
  refuses(
    run(['--registry-username', 'reg']),
    '--registry-username needs a password: --registry-password-file FILE or CRAWLSTREAM_REGISTRY_PASSWORD',
  );
  refuses(
    run(['--registry-username', 'a:b'], { CRAWLSTREAM_REGISTRY_PASSWORD: 'x' }),
    '--registry-username must be non-empty and without ":", got "a:b"',
  );
});

test('mutual TLS: a certificate and its key are both kept', () => {
  const cmd = parseRunArgs([...BASE, '--kafka-tls', '--kafka-cert', CA, '--kafka-key', KEY], {});
  assert.deepEqual(cmd.security, { kafka: { tls: true, certFile: CA, keyFile: KEY } });
});

/** `control pause example.com` on Kafka with `args`: its target's security. */
const controlSecurity = (args: string[], env: NodeJS.ProcessEnv = {}) => {
  const { target } = parseControlArgs(
    ['pause', 'example.com', '--brokers', '127.0.0.1:9093', '--registry', 'http://127.0.0.1:8081', ...args],
    0,
    env,
  );
  assert.ok('security' in target);
  return target.security;
};

test('the other Kafka commands (topics, replay, inject, control) take the same settings and variables as run', async () => {
  assert.deepEqual(
    controlSecurity(['--kafka-tls', '--kafka-sasl-mechanism', 'scram-sha-256', '--kafka-sasl-username', 'u'], {
      CRAWLSTREAM_KAFKA_SASL_PASSWORD: 'pw',
      CRAWLSTREAM_KAFKA_CA: CA,
    }),
    { kafka: { tls: true, caFile: CA, sasl: { mechanism: 'scram-sha-256', username: 'u', password: 'pw' } } },
  );
  refuses(
    () => controlSecurity([], { CRAWLSTREAM_KAFKA_TLS: 'maybe' }),
    '--kafka-tls must be true or false, got "maybe" (from env CRAWLSTREAM_KAFKA_TLS)',
  );
  refuses(() => controlSecurity(['--kafka-sasl-username', 'u']), '--kafka-sasl-username needs --kafka-sasl-mechanism');
  // topics create checks them before it connects to the brokers
  await assert.rejects(
    runTopics(['create', '--brokers', '127.0.0.1:1', '--kafka-sasl-username', 'u'], () => undefined, {}),
    /--kafka-sasl-username needs --kafka-sasl-mechanism/,
  );
  const { target } = parseControlArgs([
    'pause',
    'example.com',
    '--brokers',
    '127.0.0.1:9093',
    '--registry',
    'http://127.0.0.1:8081',
    '--kafka-tls',
    '--kafka-ca',
    CA,
  ]);
  assert.ok('brokers' in target);
  assert.deepEqual(target.security, { kafka: { tls: true, caFile: CA } });
  refuses(
    () => parseControlArgs(['pause', 'example.com', '--data', dir, '--kafka-tls']),
    '--kafka-tls is for --brokers (Kafka); --data needs no credentials',
  );
});

test('run and the other Kafka commands: OAUTHBEARER takes the client id and secret as username and password, and the token URL', () => {
  const oauth = [
    '--kafka-tls',
    '--kafka-sasl-mechanism',
    'oauthbearer',
    '--kafka-sasl-username',
    'crawler-1',
    '--kafka-sasl-password-file',
    PASSWORD,
    '--kafka-oauth-token-url',
    'https://idp.example/token',
    '--kafka-oauth-scope',
    'kafka crawl',
  ];
  const expected = {
    kafka: {
      tls: true,
      sasl: {
        mechanism: 'oauthbearer',
        tokenUrl: 'https://idp.example/token',
        clientId: 'crawler-1',
        clientSecret: 's3cret',
        scope: 'kafka crawl',
      },
    },
  };
  assert.deepEqual(parseRunArgs([...BASE, ...oauth], {}).security, expected);
  assert.deepEqual(
    controlSecurity(
      [
        '--kafka-tls',
        '--kafka-sasl-mechanism',
        'oauthbearer',
        '--kafka-sasl-username',
        'crawler-1',
        '--kafka-oauth-scope',
        'kafka crawl',
      ],
      {
        CRAWLSTREAM_KAFKA_SASL_PASSWORD: 's3cret',
        CRAWLSTREAM_KAFKA_OAUTH_TOKEN_URL: 'https://idp.example/token',
      },
    ),
    expected,
  );
  const run =
    (args: string[], env: NodeJS.ProcessEnv = {}) =>
    () =>
      parseRunArgs([...BASE, ...args], env);
  refuses(
    run(['--kafka-oauth-token-url', 'https://idp.example/token']),
    '--kafka-oauth-token-url needs --kafka-sasl-mechanism oauthbearer',
  );
  refuses(
    run(['--kafka-sasl-mechanism', 'plain', '--kafka-sasl-username', 'a', '--kafka-oauth-scope', 'kafka'], {
      CRAWLSTREAM_KAFKA_SASL_PASSWORD: 'pw',
    }),
    '--kafka-oauth-scope needs --kafka-sasl-mechanism oauthbearer',
  );
  refuses(
    run(['--kafka-sasl-mechanism', 'oauthbearer', '--kafka-sasl-username', 'c'], {
      CRAWLSTREAM_KAFKA_SASL_PASSWORD: 'pw',
    }),
    '--kafka-sasl-mechanism oauthbearer needs --kafka-oauth-token-url',
  );
  refuses(
    run(
      ['--kafka-sasl-mechanism', 'oauthbearer', '--kafka-sasl-username', 'c', '--kafka-oauth-token-url', 'idp/token'],
      {
        CRAWLSTREAM_KAFKA_SASL_PASSWORD: 'pw',
      },
    ),
    'Kafka SASL oauthbearer needs an http(s) token endpoint (--kafka-oauth-token-url), got "idp/token"',
  );
});
