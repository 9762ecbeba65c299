import type { CrawlConfig } from '../crawl-config.js';

export type DropReason = 'too-long' | 'too-deep' | 'repeated-segment' | 'bad-url' | 'too-many-redirects';

/**
 * Trap rules applied before a URL costs anything: length, path depth, a segment repeated
 * `maxSegmentRepeats` times, redirect chains. Returns the reason to drop, or undefined to admit.
 */
export function trapCheck(url: string, redirectHops: number, config: CrawlConfig): DropReason | undefined {
  if (url.length > config.maxUrlLength) return 'too-long';
  if (redirectHops > config.maxRedirectHops) return 'too-many-redirects';
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return 'bad-url';
  }
  const segments = path.split('/').filter((s) => s.length > 0);
  if (segments.length > config.maxPathDepth) return 'too-deep';
  const counts = new Map<string, number>();
  for (const s of segments) {
    const n = (counts.get(s) ?? 0) + 1;
    if (n >= config.maxSegmentRepeats) return 'repeated-segment';
    counts.set(s, n);
  }
  return undefined;
}
