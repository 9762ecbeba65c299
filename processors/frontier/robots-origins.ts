import type { Type } from 'avsc';
import { loadSchema } from '../../schemas/index.js';
import type { HostState, OriginRobots, RobotsHop } from '../../schemas/types.js';
import { safeSite } from './host-state.js';
import { encoded, type Serde } from '../../core/serde.js';
import { urlShape } from './url-shape.js';

/** RFC 9309 §2.3.1.2: a crawler follows at least five consecutive redirects of robots.txt; we follow exactly five. */
export const MAX_ROBOTS_REDIRECTS = 5;
/** Origins whose robots.txt a host state keeps; the least recently fetched one makes room for a new one. */
export const MAX_ORIGINS_PER_HOST = 8;
/**
 * Characters of robots.txt bodies a host state keeps, all origins together: two full 500 KiB
 * bodies (http and https). Bodies now live in `frontier-robots`, by origin, and a host state
 * carries none; this bounds only states written by older versions, which still hold theirs (a host
 * state is rewritten after every fetch of the host): past it the origins fetched longest ago are
 * dropped (and fetched again before their next URL).
 */
export const MAX_ROBOTS_CHARS_PER_HOST = 2 * 500 * 1024;
/** `Sitemap:` lines kept per origin, and the longest kept. */
export const MAX_SITEMAPS = 50;
export const MAX_SITEMAP_CHARS = 2_000;

/** `scheme://host[:port]` of an absolute URL (as `URL.origin`), or undefined when it does not parse. */
export function originOf(url: string): string | undefined {
  return urlShape(url)?.origin;
}

/** The back-queue host of an absolute URL or origin, or undefined when it does not parse. */
export function hostOfUrl(url: string): string | undefined {
  return urlShape(url)?.host;
}

/** The robots.txt redirect this host is to fetch next (its url is on this host), if any. */
export function hopToFetch(state: HostState): RobotsHop | undefined {
  for (const h of state.robotsHops) if (hostOfUrl(h.url) === state.host) return h;
  return undefined;
}

/** Whether this host's own robots.txt chain waits for a request of another host. */
export function waitsOnAnotherHost(state: HostState): boolean {
  for (const h of state.robotsHops)
    if (hostOfUrl(h.origin) === state.host && hostOfUrl(h.url) !== state.host) return true;
  return false;
}

/** The robots.txt entry of `origin`, if the host has one. */
export function originRobots(state: HostState, origin: string): OriginRobots | undefined {
  for (const r of state.robots) if (r.origin === origin) return r;
  return undefined;
}

/**
 * The entry of `origin`, added (UNKNOWN) when missing. A host keeps at most MAX_ORIGINS_PER_HOST
 * origins: the one fetched longest ago is dropped for a new one (and fetched again if it comes back).
 */
export function ensureOrigin(state: HostState, origin: string): OriginRobots {
  const known = originRobots(state, origin);
  if (known) return known;
  if (state.robots.length >= MAX_ORIGINS_PER_HOST) {
    let oldest = 0;
    for (let i = 1; i < state.robots.length; i++)
      if (state.robots[i]!.fetchedAt < state.robots[oldest]!.fetchedAt) oldest = i;
    state.robots.splice(oldest, 1);
  }
  const entry: OriginRobots = {
    origin,
    state: 'UNKNOWN',
    body: null,
    fetchedAt: 0,
    failures: 0,
    crawlDelayMs: 0,
    sitemaps: [],
  };
  state.robots.push(entry);
  return entry;
}

/** Drops the entries fetched longest ago, except `keep`'s, while the host's robots bodies exceed MAX_ROBOTS_CHARS_PER_HOST. */
export function trimRobots(state: HostState, keep: string): void {
  let total = 0;
  for (const r of state.robots) total += r.body?.length ?? 0;
  while (total > MAX_ROBOTS_CHARS_PER_HOST) {
    let oldest = -1;
    for (let i = 0; i < state.robots.length; i++) {
      const r = state.robots[i]!;
      if (r.origin !== keep && r.body !== null && (oldest < 0 || r.fetchedAt < state.robots[oldest]!.fetchedAt))
        oldest = i;
    }
    if (oldest < 0) return;
    total -= state.robots[oldest]!.body!.length;
    state.robots.splice(oldest, 1);
  }
}

/** Whether `origin`'s robots.txt must be fetched before one of its URLs: never fetched, unavailable, or older than `ttlMs`. */
export function robotsDue(entry: OriginRobots | undefined, now: number, ttlMs: number): boolean {
  if (entry === undefined || entry.state === 'UNKNOWN' || entry.state === 'UNAVAILABLE') return true;
  return now - entry.fetchedAt > ttlMs;
}

/** The host's Crawl-delay: the largest of its origins' (the gap is per host, whatever the scheme). */
export function hostCrawlDelayMs(state: HostState): number {
  let ms = 0;
  for (const r of state.robots) if (r.crawlDelayMs > ms) ms = r.crawlDelayMs;
  return ms;
}

/** Why a robots.txt redirect is not followed, or undefined when it is (RFC 9309 §2.3.1.2). */
export function robotsRedirectRefusal(
  site: string,
  chain: readonly string[],
  target: string,
): 'too-many-redirects' | 'redirect-loop' | 'redirect-other-site' | 'redirect-bad-url' | undefined {
  // chain holds every URL fetched so far: following this redirect makes chain.length redirects
  if (chain.length > MAX_ROBOTS_REDIRECTS) return 'too-many-redirects';
  if (chain.includes(target)) return 'redirect-loop';
  const shape = urlShape(target);
  if (shape === undefined) return 'redirect-bad-url';
  // a request to another host is that host's lease (its gap, its single flight), which only the
  // frontier task holding its state can give: the one of the same site. Another site's host may
  // be in another partition, so such a robots.txt is treated as unavailable (docs/FRONTIER.md, "robots.txt redirects")
  if (safeSite(target) !== site) return 'redirect-other-site';
  return undefined;
}

/** `Sitemap:` lines of a robots.txt as the parser read them, bounded. */
export function boundedSitemaps(urls: readonly string[]): string[] {
  const kept: string[] = [];
  for (const u of urls) {
    if (kept.length >= MAX_SITEMAPS) break;
    if (u.length <= MAX_SITEMAP_CHARS && !kept.includes(u)) kept.push(u);
  }
  return kept;
}

/**
 * Host states written before per-origin robots carry their one origin's rules in the top-level
 * robots fields: move them into `robots` (for `state.origin`) and reset those fields to their
 * defaults. Idempotent; a state of this version is left as it is.
 */
export function migrateLegacyRobots(state: HostState): HostState {
  if (state.robotsState !== 'UNKNOWN' && state.robots.length === 0) {
    state.robots.push({
      origin: state.origin,
      state: state.robotsState,
      body: state.robotsBody,
      fetchedAt: state.robotsFetchedAt,
      failures: state.robotsFailures,
      crawlDelayMs: state.crawlDelayMs,
      sitemaps: [],
    });
  }
  state.robotsState = 'UNKNOWN';
  state.robotsBody = null;
  state.robotsFetchedAt = 0;
  state.robotsFailures = 0;
  return state;
}

/**
 * The Avro encodings of fields added later, at their defaults, for values written before them,
 * newest first: `leaseVisit` (int 0) after `robotsHops`; and `robots`, `robotsHops` (empty arrays:
 * block count 0) and `leaseVisit` after `parkedUntil`.
 */
const ADDED_FIELDS_AT_DEFAULTS = [Buffer.from([0]), Buffer.from([0, 0, 0])];

/**
 * The `frontier-hosts` value serde: HostState Avro binary. The store holds no writer schema, so a
 * value written before `robots` and `robotsHops` were added ends after `parkedUntil`, too short
 * for this schema: it is read with those fields at their defaults, then migrated.
 */
function olderValue(type: Type, b: Buffer): HostState | undefined {
  for (const tail of ADDED_FIELDS_AT_DEFAULTS) {
    try {
      return type.fromBuffer(Buffer.concat([b, tail])) as HostState;
    } catch {
      // not written by that version: try an older one
    }
  }
  return undefined;
}

function rethrow(err: unknown): never {
  throw err;
}

export function hostStateSerde(): Serde<HostState> {
  const type = loadSchema('HostState').type;
  return {
    serialize: (v) => encoded((buf, pos) => type.encode(v, buf, pos)),
    deserialize: (b) => {
      let state: HostState;
      try {
        state = type.fromBuffer(b) as HostState;
      } catch (err) {
        state = olderValue(type, b) ?? rethrow(err);
      }
      return migrateLegacyRobots(state);
    },
  };
}
