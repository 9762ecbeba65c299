import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { CrawlError } from '../../core/errors.js';
import type { WarcStoreTarget } from '../common/warc-store-target.js';

/** A file as the store holds it after a verified upload. */
export interface StoredObject {
  readonly key: string;
  readonly size: number;
  /** The object's ETag (MD5 of the bytes, or of the parts' MD5s and `-N` for a multipart upload). */
  readonly etag: string;
}

/**
 * Where WARC files go: an S3 bucket. The only file that talks to the AWS SDK (one door per
 * outside library). Credentials come from the SDK's default chain (environment, then shared
 * credential files); they are never read, kept or logged here.
 */
export interface ObjectStore {
  /**
   * Uploads the file at `path` to `key` (multipart when it is larger than one part), then checks
   * that the stored object has the file's size and ETag. Idempotent: uploading the same file to
   * the same key again leaves one object with the same bytes. Rejects with CS_OBJECT_STORE on any
   * failure (unreachable, refused, or stored bytes that differ); the caller retries.
   */
  upload(key: string, path: string): Promise<StoredObject>;
  /** Releases the client's sockets; idempotent. */
  close(): void;
}

/** Multipart part size: S3's minimum is 5 MiB; 16 MiB parts keep a 1 GiB file at 64 parts. */
export const PART_BYTES = 16 * 1024 * 1024;

export function s3ObjectStore(target: WarcStoreTarget, partBytes = PART_BYTES): ObjectStore {
  const client = new S3Client({
    region: target.region,
    forcePathStyle: target.pathStyle,
    ...(target.endpoint !== null ? { endpoint: target.endpoint } : {}),
    // the uploader backs off and retries itself, for as long as an outage lasts
    maxAttempts: 1,
    // checksums only where S3 requires them: S3-compatible stores differ in the rest
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
  });
  return {
    async upload(key, path) {
      try {
        const { size } = await stat(path);
        const etag = await expectedEtag(path, size, partBytes);
        const upload = new Upload({
          client,
          params: { Bucket: target.bucket, Key: key, Body: createReadStream(path), ContentLength: size },
          partSize: partBytes,
          queueSize: 2,
          leavePartsOnError: false,
        });
        await upload.done();
        const head = await client.send(new HeadObjectCommand({ Bucket: target.bucket, Key: key }));
        const stored = (head.ETag ?? '').replace(/"/g, '');
        if (head.ContentLength !== size || stored !== etag)
          throw new CrawlError(
            'CS_OBJECT_STORE',
            `s3://${target.bucket}/${key} holds ${head.ContentLength} bytes with ETag ${stored}, expected ${size} bytes with ETag ${etag}`,
          );
        return { key, size, etag };
      } catch (err) {
        if (err instanceof CrawlError) throw err;
        throw new CrawlError(
          'CS_OBJECT_STORE',
          `uploading ${path} to s3://${target.bucket}/${key} failed: ${describe(err)}`,
          {
            cause: err,
          },
        );
      }
    },
    close() {
      client.destroy();
    },
  };
}

/** The ETag S3 gives the file uploaded in parts of `partBytes`: its MD5, or `md5(md5(part)…)-N`. */
export async function expectedEtag(path: string, size: number, partBytes: number): Promise<string> {
  const whole = createHash('md5');
  const parts: Buffer[] = [];
  let part = createHash('md5');
  let inPart = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    whole.update(chunk);
    let at = 0;
    while (at < chunk.length) {
      const take = Math.min(chunk.length - at, partBytes - inPart);
      part.update(chunk.subarray(at, at + take));
      inPart += take;
      at += take;
      if (inPart === partBytes) {
        parts.push(part.digest());
        part = createHash('md5');
        inPart = 0;
      }
    }
  }
  if (size <= partBytes) return whole.digest('hex');
  if (inPart > 0) parts.push(part.digest());
  return `${createHash('md5').update(Buffer.concat(parts)).digest('hex')}-${parts.length}`;
}

/** An SDK error in one line: its name and message, never the request (which carries the signature). */
function describe(err: unknown): string {
  const e = err as { name?: string; message?: string; code?: string };
  return [e.name ?? e.code, e.message].filter((s) => s !== undefined && s !== '').join(': ') || String(err);
}
