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
  return sha256(s, 'hex').slice(0, 16);
}

// crypto.hash (Node >= 20.12) is one-shot and about 3x faster than createHash for short input,
// and a string digest comes out of it far more cheaply than a Buffer
const sha256: (s: string, encoding: 'hex' | 'binary') => string =
  typeof crypto.hash === 'function'
    ? (s, encoding) => crypto.hash('sha256', s, encoding)
    : (s, encoding) => crypto.createHash('sha256').update(s, 'utf8').digest(encoding);

/**
 * `fingerprint64` of each string, big-endian, back to back in one new buffer (string i at bytes
 * 8i..8i+8): the layout of `LinkBatch.fingerprints` and of the seen-set's keys.
 */
export function packedFingerprints(strings: readonly string[]): Buffer {
  const packed = Buffer.allocUnsafe(8 * strings.length);
  for (let i = 0, o = 0; i < strings.length; i++, o += 8) {
    // a 'binary' (latin1: one char a byte) digest is the cheapest way out of crypto.hash: no Buffer, no hex
    const d = sha256(strings[i]!, 'binary');
    packed[o] = d.charCodeAt(0);
    packed[o + 1] = d.charCodeAt(1);
    packed[o + 2] = d.charCodeAt(2);
    packed[o + 3] = d.charCodeAt(3);
    packed[o + 4] = d.charCodeAt(4);
    packed[o + 5] = d.charCodeAt(5);
    packed[o + 6] = d.charCodeAt(6);
    packed[o + 7] = d.charCodeAt(7);
  }
  return packed;
}
