import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import { CLI } from '../e2e/harness.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import type { KafkaSecurityOptions } from '../../runtime/engines/kafka/kafka-security.js';
import { secureKafkaInfra } from './infra.js';
import { startTestIdp, type TestIdp } from './oauth-idp.js';

/** `promise`, or a rejection after `ms`: a failing connection must fail, not hang. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The error `attempt` fails with (bounded); fails the test if it succeeds. */
async function failure(what: string, attempt: () => Promise<unknown>): Promise<Error> {
  try {
    await within(45_000, what, attempt());
  } catch (err) {
    return err as Error;
  }
  assert.fail(`${what} succeeded`);
}

function secured(mechanism: 'scram-sha-256' | 'scram-sha-512', password?: string): KafkaSecurityOptions {
  const { ca, username, password: right } = secureKafkaInfra();
  return { tls: true, caFile: ca, sasl: { mechanism, username, password: password ?? right } };
}

test('topics create reaches the SASL_SSL listener with --kafka-tls, --kafka-ca and SCRAM', { timeout: 120_000 }, () => {
  const { brokers, ca, username, password } = secureKafkaInfra();
  const args = ['topics', 'create', '--brokers', brokers, '--partitions', '4', '--kafka-tls', '--kafka-ca', ca];
  const run = (env: NodeJS.ProcessEnv) =>
    spawnSync(
      process.execPath,
      [CLI, ...args, '--kafka-sasl-mechanism', 'scram-sha-256', '--kafka-sasl-username', username],
      {
        encoding: 'utf8',
        timeout: 90_000,
        env: { ...process.env, ...env },
      },
    );
  const ok = run({ CRAWLSTREAM_KAFKA_SASL_PASSWORD: password });
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /(created|exists) +links /);
  const wrong = run({ CRAWLSTREAM_KAFKA_SASL_PASSWORD: `${password}-wrong` });
  assert.notEqual(wrong.status, 0, 'a wrong password must not create topics');
  assert.equal(wrong.error, undefined, 'the command ends by itself (spawnSync timeout)');
  assert.match(wrong.stderr, /SASL|authenticat/i);
});

test(
  'over TLS + SCRAM-SHA-512 a record produced through KafkaPort is read back by a group consumer',
  { timeout: 120_000 },
  async () => {
    const port = new KafkaPort(
      [secureKafkaInfra().brokers],
      'crawlstream-secure-test',
      undefined,
      secured('scram-sha-512'),
    );
    try {
      await roundTrip(port);
    } finally {
      await port.close();
    }
  },
);

test('a wrong SCRAM password fails with an authentication error, promptly', { timeout: 120_000 }, async () => {
  const { brokers } = secureKafkaInfra();
  const port = new KafkaPort(
    [brokers],
    'crawlstream-secure-test',
    undefined,
    secured('scram-sha-256', 'not-the-password'),
  );
  try {
    const err = await failure('admin with a wrong password', () => port.admin());
    assert.match(err.message, /SASL SCRAM SHA256 authentication failed/i);
  } finally {
    await port.close();
  }
});

test('TLS without the CA fails certificate verification', { timeout: 120_000 }, async () => {
  const { brokers, username, password } = secureKafkaInfra();
  const port = new KafkaPort([brokers], 'crawlstream-secure-test', undefined, {
    tls: true,
    sasl: { mechanism: 'scram-sha-256', username, password },
  });
  try {
    const err = await failure('TLS without the CA', () => port.admin());
    assert.match(err.message, /self-signed certificate|unable to (get|verify)|certificate verify/i);
  } finally {
    await port.close();
  }
});

test('the secure port refuses a PLAINTEXT client (the listener really is SASL_SSL)', { timeout: 120_000 }, async () => {
  const { brokers } = secureKafkaInfra();
  const port = new KafkaPort([brokers], 'crawlstream-secure-test');
  try {
    await failure('PLAINTEXT to the SASL_SSL port', () => port.admin().then((a) => a.listTopics()));
  } finally {
    await port.close();
  }
});

/** A record produced through `port` to a new topic, read back by a group consumer (bounded). */
async function roundTrip(port: KafkaPort): Promise<void> {
  const topic = `secure-${randomUUID()}`;
  const key = Buffer.from(`key-${randomUUID()}`);
  const value = Buffer.from(`value-${randomUUID()}`);
  const admin = await within(45_000, 'admin connect', port.admin());
  try {
    assert.deepEqual(await admin.createTopics([{ name: topic, partitions: 1, config: {} }]), [topic]);
  } finally {
    await admin.close();
  }
  const producer = await port.producer();
  await producer.send([{ topic, partition: 0, key, value, timestamp: Date.now() }]);
  await producer.close();
  const received = await within(
    60_000,
    'group consumer',
    new Promise<{ key: Buffer; value: Buffer | null }>((resolve, reject) => {
      port
        .groupConsumer(
          { groupId: `secure-${randomUUID()}`, topics: [topic], fromBeginning: true, sessionTimeoutMs: 6_000 },
          {
            onAssignment: () => undefined,
            onRecords: (records) => {
              if (records[0]) resolve({ key: records[0].key, value: records[0].value });
              return Promise.resolve();
            },
          },
        )
        .catch(reject);
    }),
  );
  assert.deepEqual(received, { key, value });
}

/** `body` with a KafkaPort that authenticates by OAUTHBEARER at a test token endpoint (both closed after). */
async function withOAuthPort(
  idpOptions: { clients: Record<string, string>; foreignKey?: boolean },
  credentials: { clientId: string; clientSecret: string; scope?: string },
  body: (port: KafkaPort, idp: TestIdp) => Promise<void>,
): Promise<void> {
  const { brokers, ca, oauthKey } = secureKafkaInfra();
  const idp = await startTestIdp({ keyFile: oauthKey, ...idpOptions });
  const port = new KafkaPort([brokers], 'crawlstream-oauth-test', undefined, {
    tls: true,
    caFile: ca,
    sasl: { mechanism: 'oauthbearer', tokenUrl: idp.tokenUrl, ...credentials },
  });
  try {
    await body(port, idp);
  } finally {
    await port.close();
    await idp.close();
  }
}

test(
  'SASL OAUTHBEARER: tokens from a client-credentials endpoint, checked by the broker against its JWKS, carry a round trip; one token serves every connection',
  { timeout: 120_000 },
  () =>
    withOAuthPort(
      { clients: { 'crawler-1': 's3cret' } },
      { clientId: 'crawler-1', clientSecret: 's3cret', scope: 'kafka crawl' },
      async (port, idp) => {
        await roundTrip(port);
        // admin, producer and consumer each opened connections; all authenticated with one token
        assert.deepEqual(idp.requests, [
          { clientId: 'crawler-1', grantType: 'client_credentials', scope: 'kafka crawl', status: 200 },
        ]);
      },
    ),
);

test(
  'SASL OAUTHBEARER: a token signed by a key the broker does not trust is refused, promptly',
  { timeout: 120_000 },
  () =>
    withOAuthPort(
      { clients: { 'crawler-1': 's3cret' }, foreignKey: true },
      { clientId: 'crawler-1', clientSecret: 's3cret' },
      async (port, idp) => {
        const err = await failure('admin with a foreign token', () => port.admin().then((a) => a.listTopics()));
        assert.match(
          err.message,
          /SASL OAUTHBEARER authentication failed: broker [\d.:]+ refused the token \(invalid_token\)/,
        );
        assert.ok(idp.requests.length >= 1 && idp.requests.every((r) => r.status === 200), 'the token was issued');
      },
    ),
);

test(
  'topics create with --kafka-sasl-mechanism oauthbearer; a wrong client secret fails naming the token endpoint',
  { timeout: 120_000 },
  async () => {
    const { brokers, ca, oauthKey } = secureKafkaInfra();
    const idp = await startTestIdp({ keyFile: oauthKey, clients: { 'crawler-cli': 'cli-secret' } });
    try {
      const args = ['topics', 'create', '--brokers', brokers, '--partitions', '4', '--kafka-tls', '--kafka-ca', ca];
      const oauth = ['--kafka-sasl-mechanism', 'oauthbearer', '--kafka-sasl-username', 'crawler-cli'];
      const run = async (secret: string) => {
        const child = spawn(process.execPath, [CLI, ...args, ...oauth, '--kafka-oauth-token-url', idp.tokenUrl], {
          env: { ...process.env, CRAWLSTREAM_KAFKA_SASL_PASSWORD: secret },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        const status = await within(
          90_000,
          'topics create',
          new Promise<number | null>((resolve) => child.on('close', resolve)),
        ).finally(() => child.kill('SIGKILL'));
        return { status, stdout, stderr };
      };
      const ok = await run('cli-secret');
      assert.equal(ok.status, 0, ok.stderr);
      assert.match(ok.stdout, /(created|exists) +links /);
      const wrong = await run('not-the-secret');
      assert.notEqual(wrong.status, 0, 'a wrong client secret must not create topics');
      assert.ok(wrong.stderr.includes(`OAuth token endpoint ${idp.tokenUrl}: HTTP 401 (invalid_client`), wrong.stderr);
      assert.ok(!wrong.stderr.includes('not-the-secret'), 'the secret is never printed');
    } finally {
      await idp.close();
    }
  },
);
