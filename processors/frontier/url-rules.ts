import type { CrawlConfig } from '../crawl-config.js';
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
export function trapRules(url: string, shape: UrlShape | undefined, redirectHops: number, config: CrawlConfig): DropReason | undefined {
  if (url.length > config.maxUrlLength) return 'too-long';
  if (redirectHops > config.maxRedirectHops) return 'too-many-redirects';
  if (shape === undefined) return 'bad-url';
  const segments = pathSegments(shape.pathname);
  if (segments.length > config.maxPathDepth) return 'too-deep';
  // at most maxPathDepth segments here: comparing pairs beats building a map per URL
  const repeats = config.maxSegmentRepeats;
  for (let i = 0; i < segments.length; i++) {
    let n = 1;
    for (let j = i + 1; j < segments.length; j++) {
      if (segments[j] === segments[i] && ++n >= repeats) return 'repeated-segment';
    }
    if (n >= repeats) return 'repeated-segment';
  }
  return undefined;
}

/** The non-empty segments of a path. */
export function pathSegments(pathname: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i <= pathname.length; i++) {
    if (i === pathname.length || pathname.charCodeAt(i) === 0x2f) {
      if (i > start) out.push(pathname.slice(start, i));
      start = i + 1;
    }
  }
  return out;
}
