import { InvalidOptionError } from '../../core/errors.js';

/**
 * Where closed WARC files (and their CDXJ indexes) are uploaded: `s3://BUCKET/PREFIX` with the
 * S3 client's settings. Credentials are never part of it: the client takes them from the
 * environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or the shared files
 * (~/.aws/credentials, AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE), so no setting, log line or
 * record ever holds them.
 */
export interface WarcStoreTarget {
  readonly bucket: string;
  /** Key prefix without leading or trailing `/`; '' for the bucket's root. */
  readonly prefix: string;
  /** `--s3-endpoint`, e.g. http://127.0.0.1:8333; null: AWS's endpoint of the region. */
  readonly endpoint: string | null;
  readonly region: string;
  /** `--s3-path-style`: http://host/bucket/key rather than http://bucket.host/key. */
  readonly pathStyle: boolean;
  /** `--warc-keep-local`: keep each file on disk after it is uploaded and verified. */
  readonly keepLocal: boolean;
}

// S3's bucket naming rules: 3–63 of lower-case letters, digits, '.', '-', starting and ending alnum
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Parses `s3://BUCKET/PREFIX` (PREFIX optional); throws InvalidOptionError naming `--warc-store`. */
export function parseWarcStoreUrl(url: string, rest: Omit<WarcStoreTarget, 'bucket' | 'prefix'>): WarcStoreTarget {
  const m = /^s3:\/\/([^/]*)(?:\/(.*))?$/.exec(url);
  if (m === null) throw new InvalidOptionError(`--warc-store must be s3://BUCKET/PREFIX, got ${JSON.stringify(url)}`);
  const bucket = m[1]!;
  if (!BUCKET.test(bucket))
    throw new InvalidOptionError(
      `--warc-store bucket must be 3 to 63 lower-case letters, digits, '.' or '-', got ${JSON.stringify(bucket)}`,
    );
  const prefix = (m[2] ?? '').replace(/\/+$/, '');
  if (prefix.startsWith('/') || prefix.includes('//') || [...prefix].some((c) => c < ' ' || c === '\\'))
    throw new InvalidOptionError(
      `--warc-store prefix must be a key path without empty parts, got ${JSON.stringify(prefix)}`,
    );
  if (rest.endpoint !== null) {
    let parsed: URL;
    try {
      parsed = new URL(rest.endpoint);
    } catch {
      throw new InvalidOptionError(`--s3-endpoint must be an http(s) URL, got ${JSON.stringify(rest.endpoint)}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new InvalidOptionError(`--s3-endpoint must be an http(s) URL, got ${JSON.stringify(rest.endpoint)}`);
    if (parsed.username !== '' || parsed.password !== '')
      throw new InvalidOptionError(
        '--s3-endpoint must not hold credentials: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY',
      );
  }
  if (!/^[a-z0-9-]+$/.test(rest.region))
    throw new InvalidOptionError(
      `--s3-region must be a region name such as us-east-1, got ${JSON.stringify(rest.region)}`,
    );
  return { bucket, prefix, ...rest };
}

/** The object key of a file of the crawl's WARC directory: `PREFIX/NAME`. Deterministic: the same file always gets the same key. */
export function objectKey(target: WarcStoreTarget, fileName: string): string {
  return target.prefix === '' ? fileName : `${target.prefix}/${fileName}`;
}

/** `s3://BUCKET/PREFIX/NAME`: where a page record's WARC file lives once uploaded. */
export function objectUri(target: WarcStoreTarget, fileName: string): string {
  return `s3://${target.bucket}/${objectKey(target, fileName)}`;
}
