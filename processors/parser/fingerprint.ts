import * as crypto from 'node:crypto';

/**
 * The 64-bit fingerprint of a string: the first 8 bytes of SHA-256 over its UTF-8 encoding,
 * read as an unsigned big-endian integer. Stable across runs, platforms and Node versions, so
 * fingerprints persisted in stores and changelogs stay valid. Lone surrogates are encoded as
 * U+FFFD, as `Buffer.from(s, 'utf8')` does.
 */
export function fingerprint64(s: string): bigint {
  return BigInt('0x' + fingerprintHex(s));
}

/**
 * The same fingerprint as `fingerprint64`, as 16 lowercase hex digits (zero-padded), which is
 * also its 8-byte big-endian key encoding in hex.
 */
export function fingerprintHex(s: string): string {
  return sha256Hex(s).slice(0, 16);
}

// crypto.hash (Node >= 20.12) is one-shot and about 3x faster than createHash for short input,
// and a hex digest comes out of it about twice as cheaply as a Buffer
const sha256Hex: (s: string) => string =
  typeof crypto.hash === 'function'
    ? (s) => crypto.hash('sha256', s, 'hex')
    : (s) => crypto.createHash('sha256').update(s, 'utf8').digest('hex');
