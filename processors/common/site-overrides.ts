import { domainToASCII } from 'node:url';
import { InvalidOptionError } from '../../core/errors.js';
import { siteOf } from './normalize.js';
import { CRAWL_CONFIG_BOUNDS, describeBounds, withinBounds, type Bounds } from './config-bounds.js';

/**
 * What a `sites:` entry may change for the hosts and URLs it covers. Nothing here can loosen
 * robots.txt or the politeness floor: `minDelayMs` is at least the floor, and headers that would
 * change who we are to robots.txt (User-Agent) or what the connection is cannot be set.
 */
export interface SiteOverride {
  /** The gap floor between fetches to each host it covers, instead of --min-delay (≥ the 1000 ms floor). */
  readonly minDelayMs?: number;
  /** URLs per budget cycle the site may admit, instead of the budget it earns (a registered-domain key only). */
  readonly budget?: number;
  /** A strict hop limit from the seed for URLs it covers (carried for the scope rules; see SiteOverrides.forUrl). */
  readonly maxDepth?: number;
  /** Scope rules for URLs it covers, in the syntax of --allow / --deny (carried for the scope rules). */
  readonly allow?: readonly string[];
  readonly deny?: readonly string[];
  /** Extra request headers, lower-case names, for every request it covers. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** One `sites:` entry: the key as written and what it overrides. */
export interface SiteRule {
  readonly key: string;
  readonly override: SiteOverride;
}

/** The override fields as a config file or `--site` names them, and the field each sets. */
export const SITE_OVERRIDE_KEYS = {
  'min-delay': 'minDelayMs',
  budget: 'budget',
  'max-depth': 'maxDepth',
  allow: 'allow',
  deny: 'deny',
  headers: 'headers',
} as const satisfies Record<string, keyof SiteOverride>;

/**
 * The bounds of the numeric overrides: those of the crawl-wide field each stands in for
 * (CRAWL_CONFIG_BOUNDS), so a site, `control set` and the flag refuse alike; min-delay's least
 * is the politeness floor.
 */
export const SITE_OVERRIDE_BOUNDS = {
  minDelayMs: CRAWL_CONFIG_BOUNDS.minDelayMs,
  budget: CRAWL_CONFIG_BOUNDS.sitePageBudget,
  maxDepth: CRAWL_CONFIG_BOUNDS.maxDepth,
} as const satisfies Partial<Record<keyof SiteOverride, Bounds>>;

/** `n` when it is a whole number (or the text of one) within `b`; undefined otherwise. */
function wholeWithin(value: unknown, b: Bounds): number | undefined {
  const n = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  return withinBounds(n, b) ? n : undefined;
}

const FLOOR_NOTE = ' ms (the politeness floor; a site may be crawled more gently, never faster)';

/** Headers a site entry may not set: who we are to robots.txt, the connection, and what a lease sends itself. */
const FORBIDDEN_HEADERS = new Set([
  'user-agent',
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'upgrade',
  'te',
  'expect',
  'proxy-connection',
  'trailer',
  'accept-encoding',
  'if-none-match',
  'if-modified-since',
]);
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

type KeyKind = 'surt' | 'host' | 'glob' | 'site';

/** A key in its SURT form (no scheme: `(org,example,www,)/path`), which orders keys by how much they cover. */
interface CompiledKey {
  readonly kind: KeyKind;
  /** The SURT prefix the key covers. */
  readonly prefix: string;
  /** Whether it covers whole hosts (every key but a SURT prefix with a path). */
  readonly wholeHosts: boolean;
  /** Larger: more specific. */
  readonly rank: number;
}

/** `www.example.org` → `(org,example,www,`; the closing `)` is added by the caller. */
function surtHost(host: string): string {
  return `(${host.split('.').reverse().join(',')},`;
}

/** The SURT form of a URL without its scheme: `(org,example,www,)/path?q`. */
export function surtOf(url: string): string {
  const u = new URL(url);
  const host = u.hostname.replace(/\.+$/, '');
  return `${surtHost(host)})${u.pathname}${u.search}`;
}

function compileKey(key: string, where: string): CompiledKey {
  const fail = (why: string): never => {
    throw new InvalidOptionError(`${where}: site key ${JSON.stringify(key)} ${why}`);
  };
  const k = key.trim().toLowerCase();
  const surt = /^(?:https?:\/\/)?(\(.*)$/.exec(k);
  if (surt) {
    const prefix = surt[1]!;
    if (!/^\([a-z0-9-]+(,[a-z0-9-]*)*(\)(\/.*)?)?$/.test(prefix))
      fail('is not a SURT prefix like http://(org,example,www,)/path');
    const close = prefix.indexOf(')');
    // `(org,example,www,)` and `(org,example,` cover whole hosts; `(org,example,)/news` a part of one
    const wholeHosts = close === -1 || close === prefix.length - 1;
    return { kind: 'surt', prefix, wholeHosts, rank: prefix.length };
  }
  const glob = k.startsWith('*.');
  const name = glob ? k.slice(2) : k;
  const ascii = domainToASCII(name);
  if (ascii === '' || !/^[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(ascii) || ascii.includes('*'))
    fail('is not a registered domain, a host name, a host glob like *.example.org, or a SURT prefix');
  const stem = surtHost(ascii);
  if (glob) return { kind: 'glob', prefix: stem, wholeHosts: true, rank: stem.length + 0.5 };
  const site = siteOf(`http://${ascii}/`);
  if (site === ascii) return { kind: 'site', prefix: stem, wholeHosts: true, rank: stem.length };
  return { kind: 'host', prefix: `${stem})`, wholeHosts: true, rank: stem.length + 1 };
}

/** Whether compiled key `c` covers a SURT form (`(org,example,www,)/path`). */
function covers(c: CompiledKey, surt: string): boolean {
  if (!surt.startsWith(c.prefix)) return false;
  // a host glob covers the subdomains, not the domain itself
  return c.kind !== 'glob' || surt[c.prefix.length] !== ')';
}

/** Validates one entry's value (a YAML mapping or a parsed `--site` flag); `where` names the source in errors. */
export function parseSiteOverride(key: string, raw: unknown, where: string): SiteRule {
  const c = compileKey(key, where);
  const at = `${where}: sites.${key}`;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new InvalidOptionError(
      `${at} must be a mapping of ${Object.keys(SITE_OVERRIDE_KEYS).join(', ')}, got ${JSON.stringify(raw)}`,
    );
  const o: { -readonly [K in keyof SiteOverride]: SiteOverride[K] } = {};
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    const field = (SITE_OVERRIDE_KEYS as Record<string, keyof SiteOverride>)[name];
    if (field === undefined)
      throw new InvalidOptionError(
        `${at}: unknown override ${JSON.stringify(name)} (one of ${Object.keys(SITE_OVERRIDE_KEYS).join(', ')})`,
      );
    const whole = (b: Bounds): number => {
      const n = wholeWithin(value, b);
      if (n === undefined)
        throw new InvalidOptionError(
          `${at}.${name} must be ${describeBounds(b)}${name === 'min-delay' ? FLOOR_NOTE : ''}, got ${JSON.stringify(value)}`,
        );
      return n;
    };
    switch (field) {
      case 'minDelayMs':
        if (!c.wholeHosts)
          throw new InvalidOptionError(
            `${at}.min-delay: the gap is kept per host; give it on a host, host glob, site or SURT prefix without a path`,
          );
        o.minDelayMs = whole(SITE_OVERRIDE_BOUNDS.minDelayMs);
        break;
      case 'budget':
        if (c.kind !== 'site')
          throw new InvalidOptionError(
            `${at}.budget: a budget is kept per site; give it on the registered domain (${siteKeyHint(key)})`,
          );
        o.budget = whole(SITE_OVERRIDE_BOUNDS.budget);
        break;
      case 'maxDepth':
        o.maxDepth = whole(SITE_OVERRIDE_BOUNDS.maxDepth);
        break;
      case 'allow':
      case 'deny': {
        const list = Array.isArray(value) ? value : [value];
        if (!list.every((r) => typeof r === 'string' && r.trim() !== '' && !/[\r\n]/.test(r)))
          throw new InvalidOptionError(
            `${at}.${name} must be a rule or a list of rules (non-empty single-line strings), got ${JSON.stringify(value)}`,
          );
        o[field] = (list as string[]).map((r) => r.trim());
        break;
      }
      case 'headers': {
        if (value === null || typeof value !== 'object' || Array.isArray(value))
          throw new InvalidOptionError(`${at}.headers must be a mapping of header names to values`);
        const headers: Record<string, string> = {};
        for (const [h, v] of Object.entries(value as Record<string, unknown>)) {
          const lower = h.toLowerCase();
          if (!HEADER_NAME.test(h))
            throw new InvalidOptionError(`${at}.headers: ${JSON.stringify(h)} is not a header name`);
          if (FORBIDDEN_HEADERS.has(lower))
            throw new InvalidOptionError(
              `${at}.headers: ${h} cannot be set per site (it belongs to the crawler's identity for robots.txt, the connection, or the lease)`,
            );
          if (typeof v !== 'string' && typeof v !== 'number')
            throw new InvalidOptionError(`${at}.headers.${h} must be a string, got ${JSON.stringify(v)}`);
          const text = String(v);
          if (/[\r\n\0]/.test(text))
            throw new InvalidOptionError(`${at}.headers.${h} must be one line, got ${JSON.stringify(text)}`);
          headers[lower] = text;
        }
        o.headers = headers;
        break;
      }
    }
  }
  return { key: key.trim().toLowerCase(), override: o };
}

function siteKeyHint(key: string): string {
  try {
    const name = key.replace(/^\*\./, '');
    return /^[a-z0-9.-]+$/i.test(name) ? `e.g. ${siteOf(`http://${name}/`)}` : 'e.g. example.org';
  } catch {
    return 'e.g. example.org';
  }
}

/**
 * Parses a `--site` flag: `KEY NAME=VALUE ...`, where NAME is an override (`min-delay=5000`,
 * `budget=400`, `max-depth=3`, `allow=RULE`, `deny=RULE`, each of the last two repeatable) or
 * `header.NAME=VALUE`. Values cannot hold spaces here; the config file's `sites:` map can.
 */
export function parseSiteFlag(text: string, where: string): SiteRule {
  const [key, ...pairs] = text.trim().split(/\s+/);
  if (!key || pairs.length === 0)
    throw new InvalidOptionError(
      `${where} must be "KEY NAME=VALUE ..." (e.g. "example.org min-delay=5000"), got ${JSON.stringify(text)}`,
    );
  const raw: Record<string, unknown> = {};
  const headers: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new InvalidOptionError(`${where}: ${JSON.stringify(pair)} is not NAME=VALUE`);
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    if (name.startsWith('header.')) headers[name.slice('header.'.length)] = value;
    else if (name === 'allow' || name === 'deny') raw[name] = [...((raw[name] as string[]) ?? []), value];
    else raw[name] = value;
  }
  if (Object.keys(headers).length > 0) raw['headers'] = headers;
  return parseSiteOverride(key, raw, where);
}

/** One entry as `crawlstream config` shows it: `min-delay=5000 budget=400 header.x-team=news`. */
export function describeOverride(o: SiteOverride): string {
  const parts: string[] = [];
  if (o.minDelayMs !== undefined) parts.push(`min-delay=${o.minDelayMs}`);
  if (o.budget !== undefined) parts.push(`budget=${o.budget}`);
  if (o.maxDepth !== undefined) parts.push(`max-depth=${o.maxDepth}`);
  for (const r of o.allow ?? []) parts.push(`allow=${r}`);
  for (const r of o.deny ?? []) parts.push(`deny=${r}`);
  for (const [h, v] of Object.entries(o.headers ?? {})) parts.push(`header.${h}=${v}`);
  return parts.join(' ');
}

const NONE: SiteOverride = Object.freeze({});

/**
 * The `sites:` entries of a crawl, looked up by host, site or URL. Every entry that covers what is
 * asked about takes part, and each field comes from the most specific entry that sets it: a SURT
 * prefix with a path over an exact host, over a host glob (`*.example.org`: the subdomains only),
 * over a registered domain (the domain and all its subdomains); of two SURT prefixes or two
 * globs, the longer. Immutable; answers are cached per host (the host lookups run per dispatch).
 */
export class SiteOverrides {
  private readonly rules: readonly { c: CompiledKey; override: SiteOverride }[];
  private readonly byHost = new Map<string, SiteOverride>();
  private static readonly MAX_CACHED_HOSTS = 100_000;

  constructor(rules: readonly SiteRule[]) {
    this.rules = rules
      .map((r) => ({ c: compileKey(r.key, 'sites'), override: r.override }))
      .sort((a, b) => b.c.rank - a.c.rank);
  }

  get size(): number {
    return this.rules.length;
  }

  /** The merged override for every URL of `host` (entries that cover whole hosts only); empty when none. */
  forHost(host: string): SiteOverride {
    if (this.rules.length === 0) return NONE;
    const hit = this.byHost.get(host);
    if (hit !== undefined) return hit;
    const merged = this.merge(`${surtHost(host)})`, true);
    if (this.byHost.size >= SiteOverrides.MAX_CACHED_HOSTS) this.byHost.clear();
    this.byHost.set(host, merged);
    return merged;
  }

  /** The override of a whole site (registered domain): its `budget`. */
  forSite(site: string): SiteOverride {
    return this.forHost(site);
  }

  /**
   * The merged override for one URL: the host's entries and the SURT prefixes with a path that
   * cover it. For the scope rules (max-depth, allow, deny) and the request headers. A string
   * that is no URL gets the empty override.
   */
  forUrl(url: string): SiteOverride {
    if (this.rules.length === 0) return NONE;
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return NONE; // not a URL: nothing covers it (the fetch fails as CS_BAD_URL)
    }
    const host = u.hostname.replace(/\.+$/, '');
    if (this.rules.every((r) => r.c.wholeHosts)) return this.forHost(host);
    return this.merge(`${surtHost(host)})${u.pathname}${u.search}`, false);
  }

  private merge(surt: string, hostOnly: boolean): SiteOverride {
    const out: { -readonly [K in keyof SiteOverride]: SiteOverride[K] } = {};
    let headers: Record<string, string> | undefined;
    for (const { c, override } of this.rules) {
      if ((hostOnly && !c.wholeHosts) || !covers(c, surt)) continue;
      if (out.minDelayMs === undefined && override.minDelayMs !== undefined) out.minDelayMs = override.minDelayMs;
      if (out.maxDepth === undefined && override.maxDepth !== undefined) out.maxDepth = override.maxDepth;
      if (out.allow === undefined && override.allow !== undefined) out.allow = override.allow;
      if (out.deny === undefined && override.deny !== undefined) out.deny = override.deny;
      // only registered-domain entries carry a budget (parseSiteOverride): the site's, whichever host asks
      if (out.budget === undefined && override.budget !== undefined) out.budget = override.budget;
      // headers merge by name, the more specific entry's value first
      if (override.headers !== undefined) headers = { ...override.headers, ...headers };
    }
    if (headers !== undefined) out.headers = headers;
    return Object.keys(out).length === 0 ? NONE : Object.freeze(out);
  }
}

/** The overrides `control set` may change live, by name, and the fields they set. */
export const LIVE_SETTING_KEYS = { 'min-delay': 'minDelayMs', budget: 'budget', 'max-depth': 'maxDepth' } as const;

/** A live change: a new value per field, or null to drop the live value (the config file's, if any, applies again). */
export type LiveSettingsChange = {
  -readonly [K in (typeof LIVE_SETTING_KEYS)[keyof typeof LIVE_SETTING_KEYS]]?: number | null;
};

/**
 * Checks `control set` settings (`min-delay=5000`, `budget=default`); throws InvalidOptionError
 * naming the first bad one. The frontier checks them again, since any producer can write the
 * control topic.
 */
export function parseLiveSettings(settings: Readonly<Record<string, string>>): LiveSettingsChange {
  const change: LiveSettingsChange = {};
  const names = Object.keys(LIVE_SETTING_KEYS).join(', ');
  if (Object.keys(settings).length === 0) throw new InvalidOptionError(`control set needs KEY=VALUE (${names})`);
  for (const [name, raw] of Object.entries(settings)) {
    const field = (LIVE_SETTING_KEYS as Record<string, keyof LiveSettingsChange>)[name];
    if (field === undefined)
      throw new InvalidOptionError(
        `control set: ${JSON.stringify(name)} cannot be set live (one of ${names}; headers, allow and deny come from the config file)`,
      );
    const value = raw.trim();
    if (value === 'default') {
      change[field] = null;
      continue;
    }
    const b = SITE_OVERRIDE_BOUNDS[field];
    const n = wholeWithin(value, b);
    if (n === undefined)
      throw new InvalidOptionError(
        `control set: ${name} must be ${describeBounds(b)}${
          field === 'minDelayMs' ? ' ms (the politeness floor)' : ''
        } or 'default', got ${JSON.stringify(raw)}`,
      );
    change[field] = n;
  }
  return change;
}
