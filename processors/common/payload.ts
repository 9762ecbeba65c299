import { createHash } from 'node:crypto';
import type { FetchedPage } from '../../schemas/types.js';

/**
 * Whether a fetch takes part in duplicate detection: a 2xx page response with a body and no
 * error (so also a final outcome). robots.txt, redirects, errors and empty bodies never do.
 */
export function isDedupable(page: Pick<FetchedPage, 'kind' | 'status' | 'errorCode' | 'body'>): boolean {
  return (
    page.kind !== 'ROBOTS' && page.status >= 200 && page.status < 300 && page.errorCode === null && page.body.length > 0
  );
}

/** `sha1:` followed by the RFC 4648 base32 SHA-1 of `data`, the form WARC digests use. */
export function sha1Digest(...data: Buffer[]): string {
  const hash = createHash('sha1');
  for (const d of data) hash.update(d);
  return 'sha1:' + base32(hash.digest());
}

const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32, uppercase, without padding (a SHA-1 digest is exactly 32 characters). */
export function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32_ALPHABET[(value << (5 - bits)) & 31];
  return out;
}
