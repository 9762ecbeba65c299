import type { PageSpec, RobotsSpec, SiteSpec } from './sites.js';
import { fillPort } from './sites.js';

/**
 * The origins of a site beyond its plain http one: what its https origin serves and whether its
 * http origin sends everything there. The server (`synthetic-web.ts`) answers from these through
 * `originReply`, and the politeness checker reads robots.txt per origin through `originRobots`,
 * so both see one web.
 */

/** Placeholder for the server's https port in Locations and bodies; replaced when serving. */
export const HTTPS_PORT = '{{HTTPS_PORT}}';

export type Scheme = 'http' | 'https';

export interface Ports {
  readonly http: number;
  readonly https: number;
}

/** An answer decided by the origin rather than by the page: a redirect or a robots.txt. */
export interface OriginReply {
  readonly status: number;
  readonly location?: string;
  readonly body: string;
}

/** The robots.txt spec an origin serves (undefined: 404). */
function robotsSpec(site: SiteSpec, scheme: Scheme): RobotsSpec | undefined {
  return scheme === 'https' && site.origins?.httpsRobots !== undefined ? site.origins.httpsRobots : site.robots;
}

export function fillPorts(text: string, ports: Ports): string {
  return fillPort(text, ports.http).replaceAll(HTTPS_PORT, String(ports.https));
}

/**
 * What `site` answers on `scheme` for `pathname` when the origin decides it: the http → https
 * redirect of everything, or robots.txt (a 3xx one with its Location). Undefined: serve the page.
 */
export function originReply(
  site: SiteSpec,
  scheme: Scheme,
  pathname: string,
  search: string,
  ports: Ports,
): OriginReply | undefined {
  if (scheme === 'http' && site.origins?.httpToHttps === true) {
    return { status: 301, location: `https://${site.host}:${ports.https}${pathname}${search}`, body: 'moved\n' };
  }
  if (pathname !== '/robots.txt') return undefined;
  const robots = robotsSpec(site, scheme);
  if (robots === undefined) return { status: 404, body: 'no robots.txt here\n' };
  return robots.location === undefined
    ? { status: robots.status, body: robots.body }
    : { status: robots.status, location: fillPorts(robots.location, ports), body: robots.body };
}

/** What an origin's robots.txt comes to after its redirects, RFC 9309: rules, allow all, or unavailable. */
export type OriginRules =
  | { readonly kind: 'rules'; readonly body: string; readonly origin: string }
  | { readonly kind: 'allow-all' }
  | { readonly kind: 'unavailable' };

const MAX_REDIRECTS = 5;
// stand-ins: the checker only needs each Location's scheme, host and path
const CHECK_PORTS: Ports = { http: 80, https: 443 };

/** One request of a robots.txt chain. */
export interface ChainStep {
  readonly scheme: Scheme;
  readonly host: string;
  readonly path: string;
}

/**
 * Follows `scheme://site.host/robots.txt` through the web as served, RFC 9309: at most five
 * redirects, to any host of `sites` (a host not in it answers 404); a sixth, a loop or a 3xx
 * without Location is unavailable, as are 429 and 5xx; 4xx allows all. Also returns the
 * requests the chain makes. A crawler that treats a redirect to another site as unavailable is
 * stricter than this, which the checker never counts against it.
 */
export function originRobots(
  site: SiteSpec,
  scheme: Scheme,
  sites: readonly SiteSpec[] = [site],
): { rules: OriginRules; chain: ChainStep[] } {
  const chain: ChainStep[] = [];
  let at: ChainStep = { scheme, host: site.host, path: '/robots.txt' };
  for (;;) {
    chain.push(at);
    const where = sites.find((s) => s.host === at.host);
    const reply = where === undefined ? { status: 404, body: '' } : answerOf(where, at.scheme, at.path);
    if (reply.status >= 300 && reply.status < 400) {
      if (reply.location === undefined || chain.length > MAX_REDIRECTS)
        return { rules: { kind: 'unavailable' }, chain };
      const next = new URL(reply.location, `${at.scheme}://${at.host}${at.path}`);
      const step: ChainStep = {
        scheme: next.protocol === 'https:' ? 'https' : 'http',
        host: next.hostname,
        path: next.pathname,
      };
      if (chain.some((c) => c.scheme === step.scheme && c.host === step.host && c.path === step.path))
        return { rules: { kind: 'unavailable' }, chain };
      at = step;
      continue;
    }
    if (reply.status >= 200 && reply.status < 300)
      return { rules: { kind: 'rules', body: reply.body, origin: `${scheme}://${site.host}` }, chain };
    if (reply.status === 429 || reply.status >= 500) return { rules: { kind: 'unavailable' }, chain };
    return { rules: { kind: 'allow-all' }, chain };
  }
}

function answerOf(site: SiteSpec, scheme: Scheme, path: string): OriginReply {
  const special = originReply(site, scheme, path, '', CHECK_PORTS);
  if (special !== undefined) return special;
  const page: PageSpec | undefined = Object.hasOwn(site.pages, path) ? site.pages[path] : site.route?.(path);
  if (page === undefined) return { status: 404, body: '' };
  const location = Object.entries(page.headers ?? {}).find(([name]) => name.toLowerCase() === 'location')?.[1];
  const body = typeof page.body === 'string' ? page.body : '';
  return location === undefined
    ? { status: page.status ?? 200, body }
    : { status: page.status ?? 200, location: fillPorts(location, CHECK_PORTS), body };
}
