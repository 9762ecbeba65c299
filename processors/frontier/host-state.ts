import type { HostState } from '../../schemas/types.js';
import { siteOf } from '../common/normalize.js';

/** A host the frontier has not seen before: robots.txt of no origin known, due at once (but for the restart gap). */
export function newHost(host: string, origin: string, site: string): HostState {
  return {
    host,
    origin,
    site,
    headSeq: 0,
    tailSeq: 0,
    nextEligibleAt: 0,
    gapMs: 0,
    backoffMs: 0,
    robotsState: 'UNKNOWN',
    robotsBody: null,
    robotsFetchedAt: 0,
    robotsFailures: 0,
    crawlDelayMs: 0,
    lease: null,
    fetches: 0,
    ip: null,
    connErrors: 0,
    lastBackoffAt: 0,
    parkedUntil: 0,
    robots: [],
    robotsHops: [],
    leaseVisit: 0,
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

/** A u64 counter in frontier-meta; absent reads as 0. */
export function readNumber(b: Buffer | undefined): number {
  return b === undefined ? 0 : Number(b.readBigUInt64BE(0));
}

export function numberBytes(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}
