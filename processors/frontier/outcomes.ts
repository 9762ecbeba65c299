import type { FetchResult, HostState } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { backoffAfter, requiredGap, robotsVerdict, type RobotsCache, type RobotsVerdict } from './politeness.js';

const CONNECTION_ERRORS = new Set(['CS_CONNECT', 'CS_TIMEOUT', 'CS_RESET', 'CS_DNS', 'CS_TLS']);

export function isConnectionError(code: string | null): boolean {
  return code !== null && CONNECTION_ERRORS.has(code);
}

/**
 * What any fetch (page or robots.txt) that ran says of its host: the gap it needs, counted from the
 * fetch's end as the fetcher saw it (never before the server's end), and its run of connection
 * errors. Mutates `state`; a lease that expired unfetched changes nothing. Returns true when the
 * host is parked now (too many connection errors in a row), for `backoffMaxMs`.
 */
export function applyFetchTiming(state: HostState, result: FetchResult, now: number, config: CrawlConfig): boolean {
  if (result.errorCode === 'CS_LEASE_EXPIRED') return false;
  state.fetches++;
  state.gapMs = requiredGap(config, result.durationMs, state.crawlDelayMs);
  state.nextEligibleAt = Math.max(state.nextEligibleAt, result.startedAt + result.durationMs + state.gapMs);
  if (result.errorCode === null) state.connErrors = 0;
  if (!isConnectionError(result.errorCode)) return false;
  state.connErrors++;
  if (state.connErrors < config.connErrorsToPark) return false;
  state.parkedUntil = now + config.backoffMaxMs;
  return true;
}

function jitter(ms: number, config: CrawlConfig): number {
  return Math.round(ms * (1 + (Math.random() * config.backoffJitterPercent) / 100));
}

/**
 * robots.txt answered (or did not): 2xx is parsed, 4xx allows all, 429/5xx/no answer disallows all
 * and parks the host until a retry, doubling from robotsRetryMs. Mutates `state`.
 */
export function applyRobotsOutcome(
  state: HostState,
  result: FetchResult,
  now: number,
  config: CrawlConfig,
  robots: RobotsCache,
): RobotsVerdict | 'EXPIRED' {
  // no answer is known (dropped unfetched, or lost with its fetcher): that says nothing about
  // robots.txt, so try again after the gap instead of parking the host as unavailable
  if (result.errorCode === 'CS_LEASE_EXPIRED' || result.errorCode === 'CS_LEASE_LOST') return 'EXPIRED';
  const verdict = robotsVerdict(result.status, result.errorCode);
  state.robotsFetchedAt = now;
  if (verdict === 'UNAVAILABLE') {
    state.robotsState = 'UNAVAILABLE';
    state.robotsFailures++;
    const wait = Math.min(config.robotsRetryMs * 2 ** (state.robotsFailures - 1), config.backoffMaxMs);
    state.nextEligibleAt = Math.max(state.nextEligibleAt, now + jitter(wait, config));
    return verdict;
  }
  state.robotsFailures = 0;
  state.robotsState = verdict;
  state.robotsBody = verdict === 'READY' ? (result.robotsBody ?? '') : null;
  state.crawlDelayMs = state.robotsBody !== null ? robots.crawlDelayMs(state.origin, state.robotsBody) : 0;
  // Crawl-delay can raise the gap right away, from the end of this fetch
  state.gapMs = Math.max(state.gapMs, requiredGap(config, result.durationMs, state.crawlDelayMs));
  state.nextEligibleAt = Math.max(state.nextEligibleAt, result.startedAt + result.durationMs + state.gapMs);
  return verdict;
}

/**
 * Politeness consequences of a page fetch: 429/503 back off (Retry-After, else doubling with
 * jitter; forgiven after a quiet period), repeated connection errors back off. Returns the back-off
 * applied, if any. Mutates `state`.
 */
export function applyPageOutcome(
  state: HostState,
  result: FetchResult,
  now: number,
  config: CrawlConfig,
): number | undefined {
  if (result.status === 429 || result.status === 503) {
    if (now - state.lastBackoffAt > config.backoffQuietMs) state.backoffMs = 0;
    state.backoffMs = backoffAfter(config, result.retryAfterMs, state.backoffMs);
    state.lastBackoffAt = now;
    // Retry-After is honoured exactly (plus jitter on our own back-offs only)
    const wait = result.retryAfterMs !== null ? state.backoffMs : jitter(state.backoffMs, config);
    state.nextEligibleAt = Math.max(state.nextEligibleAt, now + wait);
    return wait;
  }
  if (isConnectionError(result.errorCode) && state.connErrors >= 2) {
    const wait = jitter(Math.min(config.backoffMs * 2 ** (state.connErrors - 2), config.backoffMaxMs), config);
    state.nextEligibleAt = Math.max(state.nextEligibleAt, now + wait);
    return wait;
  }
  if (result.errorCode === null && now - state.lastBackoffAt > config.backoffQuietMs) state.backoffMs = 0;
  return undefined;
}
