import type { CrawlConfig } from '../common/crawl-config.js';
import { urlShape, type UrlShape } from './url-shape.js';

export type DropReason = 'too-long' | 'too-deep' | 'repeated-segment' | 'bad-url' | 'too-many-redirects';

/**
 * Trap rules applied before a URL costs anything: length, path depth, a segment repeated
 * `maxSegmentRepeats` times, redirect chains. Returns the reason to drop, or undefined to admit.
 */
export function trapCheck(url: string, redirectHops: number, config: CrawlConfig): DropReason | undefined {
  return trapRules(url, urlShape(url), redirectHops, config);
}

/** `trapCheck` for a URL already parsed into `shape` (undefined: it does not parse). */
export function trapRules(
  url: string,
  shape: UrlShape | undefined,
  redirectHops: number,
  config: CrawlConfig,
): DropReason | undefined {
  if (url.length > config.maxUrlLength) return 'too-long';
  if (redirectHops > config.maxRedirectHops) return 'too-many-redirects';
  if (shape === undefined) return 'bad-url';
  const path = shape.pathname;
  const n = segmentBounds(path, config.maxPathDepth + 1);
  if (n > config.maxPathDepth) return 'too-deep';
  // at most maxPathDepth segments here: comparing pairs in place beats building a map per URL
  const repeats = config.maxSegmentRepeats;
  for (let i = 0; i < n; i++) {
    let count = 1;
    for (let j = i + 1; j < n; j++) {
      if (sameSegment(path, i, j) && ++count >= repeats) return 'repeated-segment';
    }
    if (count >= repeats) return 'repeated-segment';
  }
  return undefined;
}

// bounds of the segments found by the last segmentBounds call: segment i is [STARTS[i], ENDS[i])
let STARTS = new Int32Array(32);
let ENDS = new Int32Array(32);

/** Finds the non-empty segments of a path, up to `max` of them (into STARTS/ENDS); returns how many. */
function segmentBounds(path: string, max: number): number {
  if (STARTS.length < max) {
    STARTS = new Int32Array(max);
    ENDS = new Int32Array(max);
  }
  let n = 0;
  let start = 0;
  for (let i = 0; i <= path.length && n < max; i++) {
    if (i === path.length || path.charCodeAt(i) === 0x2f) {
      if (i > start) {
        STARTS[n] = start;
        ENDS[n++] = i;
      }
      start = i + 1;
    }
  }
  return n;
}

function sameSegment(path: string, a: number, b: number): boolean {
  const len = ENDS[a]! - STARTS[a]!;
  if (ENDS[b]! - STARTS[b]! !== len) return false;
  for (let k = 0; k < len; k++) if (path.charCodeAt(STARTS[a]! + k) !== path.charCodeAt(STARTS[b]! + k)) return false;
  return true;
}
