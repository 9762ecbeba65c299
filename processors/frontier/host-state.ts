import * as crypto from 'node:crypto';
import type { HostState } from '../../schemas/types.js';
import { siteOf } from '../parser/normalize.js';
import type { RawBuffer } from './queue-chunk.js';

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
  return fingerprintsOf([url])[0]!;
}

/**
 * `fingerprintBytes` of each URL, as 8-byte views of one buffer: the first 8 bytes of SHA-256
 * over the UTF-8 of the URL, as `fingerprint64` (processors/parser/fingerprint.ts) computes them.
 */
export function fingerprintsOf(urls: readonly string[]): Buffer[] {
  const slab = Buffer.allocUnsafe(8 * urls.length);
  const out: Buffer[] = new Array(urls.length);
  for (let i = 0; i < urls.length; i++) {
    // a hex digest is about 5x cheaper to get out of crypto.hash than a Buffer
    (slab as RawBuffer).hexWrite(sha256Hex(urls[i]!), 8 * i, 8);
    out[i] = slab.subarray(8 * i, 8 * i + 8);
  }
  return out;
}

const sha256Hex: (s: string) => string =
  typeof crypto.hash === 'function'
    ? (s) => crypto.hash('sha256', s, 'hex')
    : (s) => crypto.createHash('sha256').update(s, 'utf8').digest('hex');

/** A u64 counter in frontier-meta; absent reads as 0. */
export function readNumber(b: Buffer | undefined): number {
  return b === undefined ? 0 : Number(b.readBigUInt64BE(0));
}

export function numberBytes(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}
