import type { FetchKind } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';

/**
 * The interval bounds of a kind of URL: pages [--recrawl-min, --recrawl-max]; sitemaps and feeds
 * their faster lane, [half --recrawl-min, --feed-max-interval], so that a page whose sitemap
 * `lastmod` changes is fetched within about one --recrawl-min.
 */
export function intervalBounds(kind: FetchKind, config: CrawlConfig): { min: number; max: number } {
  if (kind === 'SITEMAP' || kind === 'FEED') {
    const min = Math.max(1_000, Math.round(config.recrawlMinMs / 2));
    return { min, max: Math.max(min, Math.min(config.recrawlMaxMs, config.feedMaxIntervalMs)) };
  }
  return { min: config.recrawlMinMs, max: config.recrawlMaxMs };
}

/**
 * A URL's first interval: for a page --recrawl-initial, or the geometric mean of the bounds. A
 * sitemap or feed starts at the geometric mean of its lane under the optimal policy (polled soon
 * enough to learn its rate; one that never changes grows to the lane's longest within a few
 * polls), at its lane's longest (--feed-max-interval) under the adaptive one.
 */
export function firstInterval(kind: FetchKind, config: CrawlConfig): number {
  const { min, max } = intervalBounds(kind, config);
  if (kind === 'SITEMAP' || kind === 'FEED')
    return config.recrawlPolicy === 'adaptive' ? max : Math.round(Math.sqrt(min * max));
  const initial = config.recrawlInitialMs > 0 ? config.recrawlInitialMs : Math.sqrt(min * max);
  return clamp(Math.round(initial), min, max);
}

/**
 * The interval after a revisit (Nutch's AdaptiveFetchSchedule, the brief's curve): times
 * --recrawl-shorten after a change, times --recrawl-lengthen otherwise, within the kind's bounds.
 */
export function nextInterval(previousMs: number, changed: boolean, kind: FetchKind, config: CrawlConfig): number {
  const { min, max } = intervalBounds(kind, config);
  const factor = changed ? config.recrawlShorten : config.recrawlLengthen;
  return clamp(Math.round(previousMs * factor), min, max);
}

/**
 * How much sooner an important page is revisited, as a factor on its interval (≤ 1): seeds
 * (depth 0) at half, pages a hop from one at three quarters, and a quarter off again on sites
 * that at least 10 other sites link to. The result still respects --recrawl-min.
 */
export function importance(depth: number, linkingSites: number): number {
  const byDepth = depth === 0 ? 0.5 : depth === 1 ? 0.75 : 1;
  return byDepth * (linkingSites >= 10 ? 0.75 : 1);
}

function clamp(v: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, v));
}
