import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCrawlArgs } from '../../cli/options.js';
import { InvalidOptionError } from '../../core/errors.js';
import { objectKey, objectUri } from '../../processors/common/warc-store-target.js';

function refuses(args: string[], message: RegExp): void {
  assert.throws(
    () => parseCrawlArgs(['--data', '/tmp/x', ...args], {}),
    (err: unknown) => {
      assert.ok(err instanceof InvalidOptionError, `expected InvalidOptionError, got ${String(err)}`);
      assert.match(err.message, message);
      return true;
    },
  );
}

test('--warc-store s3://BUCKET/PREFIX with its S3 settings becomes the crawl config target', () => {
  const cmd = parseCrawlArgs([
    '--data',
    '/tmp/x',
    '--warc-store',
    's3://my-bucket/crawls/2026/',
    '--s3-endpoint',
    'http://127.0.0.1:8333',
    '--s3-region',
    'eu-west-1',
    '--s3-path-style',
    '--warc-keep-local',
  ]);
  const target = cmd.config.warcStore!;
  assert.deepEqual(target, {
    bucket: 'my-bucket',
    prefix: 'crawls/2026',
    endpoint: 'http://127.0.0.1:8333',
    region: 'eu-west-1',
    pathStyle: true,
    keepLocal: true,
  });
  assert.equal(objectKey(target, 'a.warc.gz'), 'crawls/2026/a.warc.gz');
  assert.equal(objectUri(target, 'a.warc.gz'), 's3://my-bucket/crawls/2026/a.warc.gz');
});

test('without a prefix objects go to the bucket root; without --warc-store there is no target', () => {
  const target = parseCrawlArgs(['--data', '/tmp/x', '--warc-store', 's3://bucket1']).config.warcStore!;
  assert.equal(target.prefix, '');
  assert.equal(target.endpoint, null);
  assert.equal(target.region, 'us-east-1');
  assert.equal(objectKey(target, 'a.warc.gz'), 'a.warc.gz');
  assert.equal(parseCrawlArgs(['--data', '/tmp/x']).config.warcStore, null);
});

test('a --warc-store that is not s3://BUCKET/PREFIX is refused, naming the flag and the value', () => {
  refuses(['--warc-store', '/var/warc'], /^--warc-store must be s3:\/\/BUCKET\/PREFIX, got "\/var\/warc"/);
  refuses(['--warc-store', 'gs://bucket/x'], /^--warc-store must be s3:\/\/BUCKET\/PREFIX/);
  refuses(['--warc-store', 's3://'], /^--warc-store bucket must be 3 to 63 lower-case letters/);
  refuses(['--warc-store', 's3://My_Bucket/x'], /^--warc-store bucket must be .*"My_Bucket"/);
  refuses(['--warc-store', 's3://bucket//x'], /^--warc-store prefix must be a key path without empty parts/);
});

test('a bad --s3-endpoint or --s3-region is refused, and an endpoint never carries credentials', () => {
  const store = ['--warc-store', 's3://bucket/p'];
  refuses([...store, '--s3-endpoint', 'not a url'], /^--s3-endpoint must be an http\(s\) URL, got "not a url"/);
  refuses([...store, '--s3-endpoint', 'ftp://127.0.0.1'], /^--s3-endpoint must be an http\(s\) URL/);
  refuses([...store, '--s3-endpoint', 'http://AKIA:secret@127.0.0.1:8333'], /^--s3-endpoint must not hold credentials/);
  refuses([...store, '--s3-region', 'EU West'], /^--s3-region must be a region name/);
});

test('the S3 settings without --warc-store are refused rather than ignored', () => {
  refuses(['--s3-endpoint', 'http://127.0.0.1:8333'], /^--s3-endpoint needs --warc-store/);
  refuses(['--warc-keep-local'], /^--warc-keep-local needs --warc-store/);
  refuses(['--s3-path-style'], /^--s3-path-style needs --warc-store/);
});
