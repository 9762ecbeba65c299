import { originRobots, type ChainStep, type Scheme } from '../origins.js';
import { RobotsTxt } from '../robots-rfc9309.js';
import type { SiteSpec } from '../sites.js';
import type { RequestLogEntry } from '../request-log.js';
import { byStart, schemeOf } from './types.js';

/** What one robots.txt request (with its redirects) told the crawler about its origin, RFC 9309 §2.3.1. */
export interface RobotsAnswer {
  /** When the answer was complete: the end of the request, or of the last request of its redirect chain. */
  at: number;
  /** When the `/robots.txt` request that asked started: the earliest time a crawler can date the answer by. */
  askedAt: number;
  /** The `/robots.txt` request that asked. */
  seq: number;
  status: number;
  /** rules: 2xx (parsed); allow-all: 4xx but 429; unavailable: 429, 5xx, no answer, a redirect chain that fails. */
  verdict: 'rules' | 'allow-all' | 'unavailable';
  rules?: RobotsTxt;
}

interface Chain {
  steps: ChainStep[];
  body: string | undefined;
  kind: string;
}

const key = (scheme: Scheme, host: string, path: string): string => `${scheme} ${host} ${path}`;

/**
 * The robots.txt answers of every origin in the log, by `scheme://host`, in time order. A
 * `/robots.txt` request asks for its own origin; its status in the log decides the verdict. A 3xx
 * is answered by the last request of the redirect chain the web serves (origins.ts), found in the
 * log after it: that request's status decides, and the rules are the ones the chain ends at. A
 * chain the log does not complete answers nothing. The rules' text comes from `sites` (the log
 * has no bodies); a host not in `sites` has none to serve, so its 2xx is read as empty. Where the
 * log and `sites` disagree (hand-made logs), unavailable in either wins.
 */
export class RobotsAnswers {
  readonly #byOrigin = new Map<string, RobotsAnswer[]>();
  /** `scheme host path` of every request of a robots.txt redirect chain of the web. */
  readonly #chainRequests = new Set<string>();
  /** `scheme host path` of every request a robots.txt redirect chain reaches after its first. */
  readonly #chainHops = new Set<string>();

  constructor(log: readonly RequestLogEntry[], sites: readonly SiteSpec[]) {
    const byHost = new Map(sites.map((s) => [s.host, s]));
    for (const site of sites)
      for (const scheme of ['http', 'https'] as const)
        originRobots(site, scheme, sites).chain.forEach((c, i) => {
          this.#chainRequests.add(key(c.scheme, c.host, c.path));
          if (i > 0) this.#chainHops.add(key(c.scheme, c.host, c.path));
        });
    const chains = new Map<string, Chain | undefined>();
    const chainOf = (scheme: Scheme, host: string): Chain | undefined => {
      const origin = `${scheme}://${host}`;
      if (chains.has(origin)) return chains.get(origin);
      const site = siteFor(byHost, host);
      let chain: Chain | undefined;
      if (site !== undefined) {
        const { rules, chain: steps } = originRobots(site, scheme, sites);
        chain = { steps, body: rules.kind === 'rules' ? rules.body : undefined, kind: rules.kind };
      }
      chains.set(origin, chain);
      return chain;
    };

    const sorted = log.slice().sort(byStart);
    const parsed = new Map<string, RobotsTxt>();
    const rulesOf = (body: string): RobotsTxt => {
      let r = parsed.get(body);
      if (r === undefined) parsed.set(body, (r = RobotsTxt.parse(body)));
      return r;
    };
    for (const e of sorted) {
      if (e.path !== '/robots.txt') continue;
      const origin = `${schemeOf(e)}://${e.host}`;
      const chain = chainOf(schemeOf(e), e.host);
      let last: RequestLogEntry | undefined = e;
      if (e.status >= 300 && e.status < 400 && chain !== undefined && chain.steps.length > 1) {
        const end = chain.steps[chain.steps.length - 1]!;
        last = sorted.find(
          (x) =>
            x.start >= e.start &&
            x.seq !== e.seq &&
            key(schemeOf(x), x.host, x.path) === key(end.scheme, end.host, end.path),
        );
      }
      if (last === undefined) continue; // the chain is not complete in the log: nothing was learnt
      const answer: RobotsAnswer = {
        at: last.end,
        askedAt: e.start,
        seq: e.seq,
        status: last.status,
        verdict: verdictOf(last.status),
      };
      // the web serves what `sites` says; a verdict the log and the spec disagree on is the stricter one
      if (chain?.kind === 'unavailable') answer.verdict = 'unavailable';
      else if (answer.verdict === 'rules') answer.rules = rulesOf(chain?.body ?? '');
      let list = this.#byOrigin.get(origin);
      if (list === undefined) this.#byOrigin.set(origin, (list = []));
      list.push(answer);
    }
    for (const list of this.#byOrigin.values()) list.sort((a, b) => a.at - b.at);
  }

  /** Whether `e` asks for robots.txt: `/robots.txt` itself, or a request of a robots.txt redirect chain. */
  isRobotsRequest(e: RequestLogEntry): boolean {
    return e.path === '/robots.txt' || this.#chainRequests.has(key(schemeOf(e), e.host, e.path));
  }

  /**
   * Whether `e` may be a later hop of another origin's robots.txt redirect chain (an http
   * origin's robots.txt redirected to the https one's): then a crawler asking for its own
   * origin's robots.txt after it, or it after its own, refetches nothing.
   */
  mayBeChainHop(e: { scheme?: Scheme; host: string; path: string }): boolean {
    return this.#chainHops.has(key(e.scheme ?? 'http', e.host, e.path));
  }

  /** The answers of `origin` (`scheme://host`) complete at or before `t`, oldest first. */
  answersBy(origin: string, t: number): RobotsAnswer[] {
    return (this.#byOrigin.get(origin) ?? []).filter((a) => a.at <= t);
  }

  /** The latest answer of `origin` complete at or before `t`. */
  latest(origin: string, t: number): RobotsAnswer | undefined {
    return this.answersBy(origin, t).at(-1);
  }
}

/** The site serving `host`, as the server picks it: its own, or a parent's that serves its subdomains. */
function siteFor(byHost: ReadonlyMap<string, SiteSpec>, host: string): SiteSpec | undefined {
  const own = byHost.get(host);
  if (own !== undefined) return own;
  for (let dot = host.indexOf('.'); dot !== -1; dot = host.indexOf('.', dot + 1)) {
    const site = byHost.get(host.slice(dot + 1));
    if (site?.subdomains) return site;
  }
  return undefined;
}

/** RFC 9309 §2.3.1: 2xx rules; 3xx left unfollowed, 429, 5xx and no answer (0) unavailable; other 4xx allow all. */
function verdictOf(status: number): RobotsAnswer['verdict'] {
  if (status >= 200 && status < 300) return 'rules';
  if (status === 0 || (status >= 300 && status < 400) || status === 429 || status >= 500) return 'unavailable';
  return 'allow-all';
}
