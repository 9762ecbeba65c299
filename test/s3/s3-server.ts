import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { python } from '../python/python.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const READER = fileURLToPath(new URL('../../../test/python/s3_warc_reader.py', import.meta.url));

/**
 * The S3 server `npm test` started (scripts/s3/start.sh exports CRAWLSTREAM_S3_SERVER and the
 * credentials). A --warc-store test fails without one: a test that skips proves nothing.
 */
export function s3Endpoint(): string {
  const endpoint = process.env['CRAWLSTREAM_S3_SERVER'];
  assert.ok(
    endpoint,
    'CRAWLSTREAM_S3_SERVER is not set: run the --warc-store tests with npm test (scripts/test.sh starts SeaweedFS)',
  );
  return endpoint;
}

export function s3Client(endpoint = s3Endpoint()): S3Client {
  return new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true });
}

/** Creates a bucket of a fresh name on the server and returns it. */
export async function freshBucket(endpoint = s3Endpoint()): Promise<string> {
  const bucket = `crawl-${randomBytes(5).toString('hex')}`;
  const client = s3Client(endpoint);
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
  return bucket;
}

export async function listKeys(bucket: string, prefix: string, endpoint = s3Endpoint()): Promise<string[]> {
  const client = s3Client(endpoint);
  const keys: string[] = [];
  try {
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }),
      );
      for (const o of page.Contents ?? []) keys.push(o.Key!);
      token = page.NextContinuationToken;
    } while (token !== undefined);
  } finally {
    client.destroy();
  }
  return keys.sort();
}

/** The crawl's `--warc-store` flags for a bucket and prefix on `endpoint`. */
export function warcStoreArgs(bucket: string, prefix: string, endpoint = s3Endpoint()): string[] {
  return ['--warc-store', `s3://${bucket}/${prefix}`, '--s3-endpoint', endpoint, '--s3-path-style'];
}

export interface ReaderReport {
  /** Page records whose (warcUri, warcOffset, warcLength) held a record of their URL. */
  checked: number;
  problems: unknown[];
  objects: Record<string, number>;
  /** WARC-Record-IDs found in more than one place across the bucket's WARC objects. */
  recordIds: string[];
  records: number;
}

/** Runs the independent Python reader (boto3 + warcio, test/python/s3_warc_reader.py) on page records. */
export function readBack(
  records: readonly object[],
  bucket: string,
  prefix: string,
  endpoint = s3Endpoint(),
): ReaderReport {
  const r = spawnSync(python(), [READER, bucket, prefix], {
    input: records.map((x) => JSON.stringify(x)).join('\n'),
    encoding: 'utf8',
    env: { ...process.env, CRAWLSTREAM_S3_SERVER: endpoint },
    maxBuffer: 64 * 1024 * 1024,
    timeout: 120_000,
  });
  assert.equal(r.status, 0, `the S3 reader failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as ReaderReport;
}

/**
 * A SeaweedFS server of the test's own (scripts/s3/start.sh on `port` and the next three, data in
 * `runDir`), for a test that stops and starts it; `keepData` restarts it with what it stored.
 */
export function startOwnServer(port: number, runDir: string, keepData = false): string {
  const r = spawnSync('bash', ['scripts/s3/start.sh'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, S3_PORT: String(port), CRAWLSTREAM_S3_RUN: runDir, S3_KEEP_DATA: keepData ? '1' : '0' },
    timeout: 120_000,
  });
  assert.equal(r.status, 0, `scripts/s3/start.sh failed: ${r.stderr}`);
  return `http://127.0.0.1:${port}`;
}

export function stopOwnServer(port: number, runDir: string): void {
  spawnSync('bash', ['scripts/s3/stop.sh'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, S3_PORT: String(port), CRAWLSTREAM_S3_RUN: runDir },
    timeout: 60_000,
  });
}
