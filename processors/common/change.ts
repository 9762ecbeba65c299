/** What one visit of a URL found, as far as change detection looks. */
export interface VisitDigest {
  /** HTTP status; 0 when no response came. */
  readonly status: number;
  readonly digest: string | null;
  /** 8-byte SimHash, or null when the body was not parsed as text. */
  readonly simhash: Uint8Array | null;
}

/** SimHashes at most this many bits apart are the same page (a changed timestamp or ad). */
export const NEAR_BITS = 3;

/**
 * Whether a page changed between two visits, by one rule for the parser (the page record's
 * `changed`) and the frontier (the revisit interval): its status class changed, or it sent a
 * different payload whose SimHash is more than NEAR_BITS bits away (or cannot be compared). A 304
 * answer is never a change.
 */
export function pageChanged(previous: VisitDigest, next: VisitDigest, notModified: boolean): boolean {
  if (notModified) return false;
  if (Math.floor(previous.status / 100) !== Math.floor(next.status / 100)) return true;
  if (previous.digest === next.digest) return false;
  if (previous.simhash === null || next.simhash === null) return previous.digest !== null || next.digest !== null;
  return bitsApart(previous.simhash, next.simhash) > NEAR_BITS;
}

function bitsApart(a: Uint8Array, b: Uint8Array): number {
  let d = 0;
  for (let i = 0; i < 8; i++) {
    let x = (a[i]! ^ b[i]!) & 0xff;
    while (x !== 0) {
      x &= x - 1;
      d++;
    }
  }
  return d;
}
