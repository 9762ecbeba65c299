import * as crypto from 'node:crypto';
import type { HostState } from '../../schemas/types.js';
import { siteOf } from '../parser/normalize.js';

/** A host the frontier has not seen before: robots.txt unknown, due at once (but for the restart gap). */
export function newHost(host: string, origin: string, site: string): HostState {
  return {
    host, origin, site, headSeq: 0, tailSeq: 0, nextEligibleAt: 0, gapMs: 0, backoffMs: 0,
    robotsState: 'UNKNOWN', robotsBody: null, robotsFetchedAt: 0, robotsFailures: 0, crawlDelayMs: 0, lease: null, fetches: 0,
    ip: null, connErrors: 0, lastBackoffAt: 0, parkedUntil: 0,
  };
}

/** The site of a URL, or null when it does not parse. */
export function safeSite(url: string): string | null {
  try {
    return siteOf(url);
  } catch {
    return null;
  }
}

/** The seen-set key of a normalized URL: its 64-bit fingerprint (`fingerprint64`), big-endian. */
export function fingerprintBytes(url: string): Buffer {
  return packedFingerprints([url]);
}

/** `fingerprintBytes` of each URL, as 8-byte views of one buffer (`packedFingerprints`). */
export function fingerprintsOf(urls: readonly string[]): Buffer[] {
  const packed = packedFingerprints(urls);
  return urls.map((_, i) => packed.subarray(8 * i, 8 * i + 8));
}

/**
 * `fingerprintBytes` of each URL, back to back in one new buffer (URL i at bytes 8i..8i+8): the
 * first 8 bytes of SHA-256 over the UTF-8 of the URL, as `fingerprint64`
 * (processors/parser/fingerprint.ts) computes them.
 */
export function packedFingerprints(urls: readonly string[]): Buffer {
  const packed = Buffer.allocUnsafe(8 * urls.length);
  for (let i = 0, o = 0; i < urls.length; i++, o += 8) {
    // a 'binary' (latin1: one char a byte) digest is the cheapest way out of crypto.hash: no Buffer, no hex
    const d = sha256Latin1(urls[i]!);
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

const sha256Latin1: (s: string) => string =
  typeof crypto.hash === 'function'
    ? (s) => crypto.hash('sha256', s, 'binary')
    : (s) => crypto.createHash('sha256').update(s, 'utf8').digest('binary');

/** A u64 counter in frontier-meta; absent reads as 0. */
export function readNumber(b: Buffer | undefined): number {
  return b === undefined ? 0 : Number(b.readBigUInt64BE(0));
}

export function numberBytes(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}
