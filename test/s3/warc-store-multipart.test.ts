import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { s3ObjectStore } from '../../processors/parser/object-store.js';
import { freshBucket, listKeys, s3Client, s3Endpoint } from './s3-server.js';

const MiB = 1024 * 1024;

test('a file larger than a part is uploaded in parts to SeaweedFS, verified by size and multipart ETag, and reads back whole', async () => {
  const endpoint = s3Endpoint();
  const bucket = await freshBucket(endpoint);
  const dir = mkdtempSync(join(tmpdir(), 'multipart-'));
  const store = s3ObjectStore(
    { bucket, prefix: 'p', endpoint, region: 'us-east-1', pathStyle: true, keepLocal: false },
    5 * MiB,
  );
  const client = s3Client(endpoint);
  try {
    const bytes = randomBytes(12 * MiB + 123);
    const path = join(dir, 'big.warc.gz');
    writeFileSync(path, bytes);
    const stored = await store.upload('p/big.warc.gz', path);
    assert.equal(stored.size, bytes.length);
    assert.match(stored.etag, /^[0-9a-f]{32}-3$/, 'three parts: a multipart ETag');
    // the same file again (a retry, or a repeat after a crash) leaves one object with the same bytes
    assert.deepEqual(await store.upload('p/big.warc.gz', path), stored);
    assert.deepEqual(await listKeys(bucket, 'p/', endpoint), ['p/big.warc.gz']);
    const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: 'p/big.warc.gz' }));
    assert.ok(Buffer.from(await got.Body!.transformToByteArray()).equals(bytes));

    const small = join(dir, 'small.cdxj');
    writeFileSync(small, 'com,example)/ 20261202000000 {}\n');
    assert.match((await store.upload('p/small.cdxj', small)).etag, /^[0-9a-f]{32}$/, 'one part: a plain MD5 ETag');
  } finally {
    store.close();
    client.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an unreachable store rejects with CS_OBJECT_STORE, and the message holds no credentials', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'unreachable-'));
  // a loopback port nothing listens on
  const store = s3ObjectStore({
    bucket: 'nobucket',
    prefix: '',
    endpoint: 'http://127.0.0.1:1',
    region: 'us-east-1',
    pathStyle: true,
    keepLocal: false,
  });
  try {
    const path = join(dir, 'a.warc.gz');
    writeFileSync(path, 'A');
    await assert.rejects(store.upload('a.warc.gz', path), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'CS_OBJECT_STORE');
      assert.match(err.message, /s3:\/\/nobucket\/a\.warc\.gz/);
      const secret = process.env['AWS_SECRET_ACCESS_KEY'];
      assert.ok(secret, 'AWS_SECRET_ACCESS_KEY is not set: run with npm test (scripts/s3/start.sh sets it)');
      assert.ok(!err.message.includes(secret), 'the secret key is in the message');
      return true;
    });
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
