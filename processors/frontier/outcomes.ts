import type { FetchResult, HostState, OriginRobots, RobotsHop } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { backoffAfter, requiredGap, robotsVerdict, type RobotsCache, type RobotsVerdict } from './politeness.js';
import {
  boundedSitemaps,
  ensureOrigin,
  hostCrawlDelayMs,
  hostOfUrl,
  originOf,
  robotsRedirectRefusal,
  trimRobots,
} from './robots-origins.js';

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

/** A source of uniform numbers in [0, 1), as `Math.random`; tests pass a seeded one. */
export type RandomSource = () => number;

function jitter(ms: number, config: CrawlConfig, random: RandomSource): number {
  return Math.round(ms * (1 + (random() * config.backoffJitterPercent) / 100));
}

const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);

/** What a robots.txt result did: a verdict for the origin asked for, a redirect to follow next, or nothing known. */
export interface RobotsOutcome {
  verdict: RobotsVerdict | 'REDIRECT' | 'EXPIRED';
  /** The origin whose robots.txt was asked for (the verdict applies to it). */
  origin: string;
  /** Why a redirect was not followed (the verdict is then UNAVAILABLE). */
  refused?: string;
}

/** Whether a result says nothing of its request: dropped unfetched, or lost with its fetcher. */
export function isUnanswered(result: FetchResult): boolean {
  return result.errorCode === 'CS_LEASE_EXPIRED' || result.errorCode === 'CS_LEASE_LOST';
}

/**
 * A robots.txt request answered (or did not), RFC 9309, applied to the state of the host whose
 * origin asked for it: `hop.origin` when the request was a redirect of its chain (possibly
 * fetched by another host of the site), else the origin of the URL. A 301/302/303/307/308 to a
 * URL of the same site is followed: the next hop goes into `state.robotsHops`, for this host to
 * fetch or for the host of its URL (the caller hands it over), up to MAX_ROBOTS_REDIRECTS
 * redirects; more, a loop, another site or no usable Location is unavailable. 2xx is parsed
 * (rules, Crawl-delay, Sitemap lines), 4xx allows all, 429/5xx/no answer disallows all and holds
 * the host until a retry, doubling from robotsRetryMs. Mutates `state`. `random` draws the
 * retry's jitter.
 */
export function applyRobotsOutcome(
  state: HostState,
  result: FetchResult,
  now: number,
  config: CrawlConfig,
  robots: RobotsCache,
  hop: RobotsHop | null = null,
  random: RandomSource = Math.random,
): RobotsOutcome {
  const origin = hop?.origin ?? originOf(result.url) ?? state.origin;
  // no answer is known: that says nothing about robots.txt, so try again after the gap instead
  // of parking the host as unavailable
  if (isUnanswered(result)) return { verdict: 'EXPIRED', origin };
  const chain = hop ? [...hop.chain, result.url] : [result.url];
  state.robotsHops = state.robotsHops.filter((h) => h.origin !== origin);
  let refused: string | undefined;
  if (result.errorCode === null && REDIRECT_STATUS.has(result.status) && result.redirectTarget !== null) {
    refused = robotsRedirectRefusal(state.site, chain, result.redirectTarget);
    if (refused === undefined) {
      state.robotsHops.push({ origin, url: result.redirectTarget, chain });
      return { verdict: 'REDIRECT', origin };
    }
  }
  const verdict = robotsVerdict(result.status, result.errorCode);
  const entry = ensureOrigin(state, origin);
  entry.fetchedAt = now;
  if (verdict === 'UNAVAILABLE') {
    entry.state = 'UNAVAILABLE';
    entry.failures++;
    const wait = Math.min(config.robotsRetryMs * 2 ** (entry.failures - 1), config.backoffMaxMs);
    state.nextEligibleAt = Math.max(state.nextEligibleAt, now + jitter(wait, config, random));
    return refused === undefined ? { verdict, origin } : { verdict, origin, refused };
  }
  setRules(entry, verdict, result.robotsBody, robots);
  // the chain ended at the own robots.txt of another origin of this host (http → https): its rules are known too
  const last = chain[chain.length - 1]!;
  const lastOrigin = originOf(last);
  if (
    lastOrigin !== undefined &&
    lastOrigin !== origin &&
    last === `${lastOrigin}/robots.txt` &&
    hostOfUrl(lastOrigin) === state.host
  ) {
    const other = ensureOrigin(state, lastOrigin);
    other.fetchedAt = now;
    setRules(other, verdict, result.robotsBody, robots);
  }
  trimRobots(state, origin);
  state.crawlDelayMs = hostCrawlDelayMs(state);
  // Crawl-delay can raise the gap right away, from the end of this fetch
  state.gapMs = Math.max(state.gapMs, requiredGap(config, result.durationMs, state.crawlDelayMs));
  state.nextEligibleAt = Math.max(state.nextEligibleAt, result.startedAt + result.durationMs + state.gapMs);
  return { verdict, origin };
}

/** The origin's rules from a robots.txt answer; a READY body goes to `robots` (its store), not into the host state. */
function setRules(entry: OriginRobots, verdict: 'READY' | 'ALLOW_ALL', body: string | null, robots: RobotsCache): void {
  entry.failures = 0;
  entry.state = verdict;
  entry.body = null;
  const rules = verdict === 'READY' ? (body ?? '') : null;
  if (rules !== null) robots.remember(entry.origin, rules);
  entry.crawlDelayMs = rules !== null ? robots.crawlDelayMs(entry.origin, rules) : 0;
  entry.sitemaps = rules !== null ? boundedSitemaps(robots.sitemaps(entry.origin, rules)) : [];
}

/**
 * Politeness consequences of a page fetch: 429/503 back off (Retry-After, else doubling with
 * jitter; forgiven after --backoff-quiet past the end of the last wait), repeated connection
 * errors back off. Returns the back-off
 * applied, if any. Mutates `state`. `random` draws the jitter.
 */
export function applyPageOutcome(
  state: HostState,
  result: FetchResult,
  now: number,
  config: CrawlConfig,
  random: RandomSource = Math.random,
): number | undefined {
  if (result.status === 429 || result.status === 503) {
    if (quietSinceBackoff(state, now) > config.backoffQuietMs) state.backoffMs = 0;
    state.backoffMs = backoffAfter(config, result.retryAfterMs, state.backoffMs);
    state.lastBackoffAt = now;
    // Retry-After is honoured exactly (plus jitter on our own back-offs only)
    const wait = result.retryAfterMs !== null ? state.backoffMs : jitter(state.backoffMs, config, random);
    state.nextEligibleAt = Math.max(state.nextEligibleAt, now + wait);
    return wait;
  }
  if (isConnectionError(result.errorCode) && state.connErrors >= 2) {
    const wait = jitter(Math.min(config.backoffMs * 2 ** (state.connErrors - 2), config.backoffMaxMs), config, random);
    state.nextEligibleAt = Math.max(state.nextEligibleAt, now + wait);
    return wait;
  }
  if (result.errorCode === null && quietSinceBackoff(state, now) > config.backoffQuietMs) state.backoffMs = 0;
  return undefined;
}

/** Time since the host's last back-off wait ended (its own length counts as not quiet). */
function quietSinceBackoff(state: HostState, now: number): number {
  return now - (state.lastBackoffAt + state.backoffMs);
}
