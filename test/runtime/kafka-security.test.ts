import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { isCrawlError } from '../../core/errors.js';
import { ConfluentSchemaRegistry } from '../../runtime/engines/kafka/confluent-registry.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { resolveKafkaSecurity } from '../../runtime/engines/kafka/kafka-security.js';

const SCHEMA = JSON.stringify({ type: 'record', name: 'R', fields: [] });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-kafka-security-rt-'));
const CA = path.join(dir, 'ca.pem');
const CERT = path.join(dir, 'client.pem');
const KEY = path.join(dir, 'client.key');
fs.writeFileSync(CA, '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n');
fs.writeFileSync(CERT, '-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n');
fs.writeFileSync(KEY, '-----BEGIN EC PRIVATE KEY-----\nKEY\n-----END EC PRIVATE KEY-----\n');

function invalid(run: () => unknown, message: string): void {
  assert.throws(
    run,
    (err: unknown) => isCrawlError(err) && err.code === 'CS_INVALID_OPTION' && err.message === message,
  );
}

test('no options: no ssl, no sasl (PLAINTEXT)', () => {
  assert.deepEqual(resolveKafkaSecurity(), {});
  assert.deepEqual(resolveKafkaSecurity({ tls: false }), {});
});

test('TLS reads the CA, certificate and key at resolution and always verifies the broker', () => {
  assert.deepEqual(resolveKafkaSecurity({ tls: true }), { ssl: { rejectUnauthorized: true } });
  assert.deepEqual(resolveKafkaSecurity({ tls: true, caFile: CA, certFile: CERT, keyFile: KEY }), {
    ssl: {
      rejectUnauthorized: true,
      ca: fs.readFileSync(CA, 'utf8'),
      cert: fs.readFileSync(CERT, 'utf8'),
      key: fs.readFileSync(KEY, 'utf8'),
    },
  });
});

test('SASL is passed through as the client expects it', () => {
  assert.deepEqual(resolveKafkaSecurity({ sasl: { mechanism: 'scram-sha-256', username: 'u', password: 'p' } }), {
    sasl: { mechanism: 'scram-sha-256', username: 'u', password: 'p' },
  });
});

test('KafkaPort validates its security options when constructed, before any connection', () => {
  invalid(
    () => new KafkaPort(['127.0.0.1:1'], 'test', undefined, { tls: true, caFile: `${dir}/absent.pem` }),
    `Kafka CA file ${dir}/absent.pem cannot be read: ENOENT`,
  );
  invalid(
    () =>
      new KafkaPort(['127.0.0.1:1'], 'test', undefined, {
        // e.g. from an untyped config file
        sasl: { mechanism: 'SCRAM' as 'plain', username: 'u', password: 'p' },
      }),
    'Kafka SASL mechanism must be one of plain, scram-sha-256, scram-sha-512, oauthbearer, got "SCRAM"',
  );
  invalid(
    () =>
      new KafkaPort(['127.0.0.1:1'], 'test', undefined, { sasl: { mechanism: 'plain', username: '', password: 'p' } }),
    'Kafka SASL plain needs a username (--kafka-sasl-username)',
  );
  invalid(
    () =>
      new KafkaPort(['127.0.0.1:1'], 'test', undefined, { sasl: { mechanism: 'plain', username: 'u', password: '' } }),
    'Kafka SASL plain needs a non-empty password',
  );
  invalid(
    () => new KafkaPort(['127.0.0.1:1'], 'test', undefined, { keyFile: KEY }),
    `Kafka client key ${KEY} given without TLS (--kafka-tls)`,
  );
  // valid options construct a port without connecting
  new KafkaPort(['127.0.0.1:1'], 'test', undefined, { tls: true, caFile: CA });
});

test('a registry that keeps no config for an unseen subject gets FULL_TRANSITIVE right after the first version', async () => {
  let registered = false;
  let level: string | undefined;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const json = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' }).end(JSON.stringify(value));
      const notFound = () => json(404, { error_code: 40401, message: 'Subject not found' });
      if (req.method === 'PUT' && req.url === '/config/s') {
        if (!registered) return notFound();
        level = (JSON.parse(body) as { compatibility: string }).compatibility;
        return json(200, { compatibility: level });
      }
      if (req.method === 'GET' && req.url === '/config/s')
        return level === undefined ? notFound() : json(200, { compatibilityLevel: level });
      if (req.method === 'POST' && req.url === '/subjects/s/versions') {
        registered = true;
        return json(200, { id: 3 });
      }
      if (req.method === 'GET' && req.url === '/subjects/s/versions') return json(200, [1]);
      if (req.method === 'GET' && req.url === '/subjects/s/versions/1') return json(200, { id: 3, schema: SCHEMA });
      notFound();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    assert.equal(await new ConfluentSchemaRegistry(url).register('s', SCHEMA), 3);
    assert.equal(level, 'FULL_TRANSITIVE');
  } finally {
    server.close();
  }
});

test('the registry client sends its basic credentials on every request, its own and the library’s, and sets the subject FULL_TRANSITIVE before it registers', async () => {
  const seen: { method: string; url: string; auth: string | undefined }[] = [];
  // the subject's level as a Confluent registry keeps it: 404 until set
  let level: string | undefined;
  let levelAtRegister: string | undefined;
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', auth: req.headers.authorization });
    if (req.headers.authorization !== `Basic ${Buffer.from('reg:pw').toString('base64')}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error_code":401,"message":"Unauthorized"}');
      return;
    }
    const json = (body: unknown) =>
      res.writeHead(200, { 'content-type': 'application/vnd.schemaregistry.v1+json' }).end(JSON.stringify(body));
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/subjects/s/versions') {
        levelAtRegister = level;
        return json({ id: 7 });
      }
      if (req.method === 'PUT' && req.url === '/config/s') {
        level = (JSON.parse(body) as { compatibility: string }).compatibility;
        return json({ compatibility: level });
      }
      if (req.method === 'GET' && req.url === '/config/s' && level !== undefined)
        return json({ compatibilityLevel: level });
      if (req.method === 'GET' && req.url === '/subjects/s/versions') return json([1]);
      if (req.method === 'GET' && req.url === '/subjects/s/versions/1') return json({ id: 7, schema: SCHEMA });
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error_code":40401,"message":"not found"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const registry = new ConfluentSchemaRegistry(url, { username: 'reg', password: 'pw' });
    assert.equal(await registry.register('s', SCHEMA), 7);
    assert.deepEqual(registry.versions('s'), [{ id: 7, schema: SCHEMA }]);
    assert.equal(levelAtRegister, 'FULL_TRANSITIVE', 'the schema was registered before the level was set');
    assert.equal(level, 'FULL_TRANSITIVE');
    const requests = new Set(seen.map((r) => `${r.method} ${r.url}`));
    for (const r of [
      'PUT /config/s',
      'POST /subjects/s/versions',
      'GET /subjects/s/versions',
      'GET /subjects/s/versions/1',
    ])
      assert.ok(requests.has(r), `${r} not made: ${[...requests].join(', ')}`);
    for (const r of seen)
      assert.equal(r.auth, `Basic ${Buffer.from('reg:pw').toString('base64')}`, `${r.method} ${r.url}`);
    // and without credentials the same registry refuses
    await assert.rejects(
      new ConfluentSchemaRegistry(url).register('s', SCHEMA),
      /refused compatibility FULL_TRANSITIVE for s: 401/,
    );
  } finally {
    server.close();
  }
  invalid(
    () => new ConfluentSchemaRegistry(url, { username: 'a:b', password: 'pw' }),
    'registry credentials need a username without ":" (--registry-username) and a non-empty password',
  );
});
