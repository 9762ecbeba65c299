import type { KeyValueStore } from '../../state/state-store.js';
import type { LinkBatch } from '../../schemas/types.js';
import { compileRule, portOf, UrlFilter, type ScopeKind, type UrlParts, type UrlRule } from '../common/url-filters.js';
import type { SiteOverride } from '../common/site-overrides.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { urlShape, type UrlShape } from './url-shape.js';

/** The seeds' scope in store `frontier-scope`: `s\0site`, `h\0host[:port]`, `p\0host[:port]\0path prefix` → empty. */
export type ScopeStore = KeyValueStore<string, Buffer>;

const EMPTY = Buffer.alloc(0);

/**
 * A host as the seed scopes compare it: without a leading `www.`, with its port when not the
 * default (`www.example.org` and `example.org` are one host; `example.org:8080` is another).
 */
export function scopeHost(parts: UrlParts): string {
  const host = parts.host.startsWith('www.') ? parts.host.slice(4) : parts.host;
  return host + portOf(parts.origin);
}

/** The directory of a path, with its trailing slash (`/news/a.html` → `/news/`): a seed's prefix. */
function dirOf(pathname: string): string {
  return pathname.slice(0, pathname.lastIndexOf('/') + 1) || '/';
}

/**
 * What the seeds of this frontier task put in scope, persisted in `frontier-scope` (so a restart
 * and the Kafka engine keep it) and held in memory. A task owns the sites of its partition, and
 * every link of a site comes to that site's partition (`links` is keyed by site), so each task's
 * own seeds decide its links. Seeds injected later widen the scope; nothing narrows it. Under
 * `web` nothing is recorded and every link is in scope.
 */
export class SeedScope {
  private readonly sites = new Set<string>();
  /** Seed hosts (scopeHost) → the path prefixes of their seeds (only under seed-prefixes). */
  private readonly hosts = new Map<string, string[]>();

  constructor(
    private readonly kind: ScopeKind,
    private readonly store: ScopeStore,
  ) {
    if (kind === 'web') return;
    for (const [key] of store.range('', '\uffff')) this.remember(key);
  }

  /** Puts the seeds of a batch in scope (a seed batch: sourceUrl null and not from a feed). */
  noteSeeds(batch: LinkBatch): void {
    if (this.kind === 'web') return;
    this.add(`s\0${batch.site}`);
    for (const link of batch.links) {
      const shape = urlShape(link.url);
      if (shape === undefined) continue;
      const host = scopeHost(shape);
      this.add(`h\0${host}`);
      if (this.kind === 'seed-prefixes') this.add(`p\0${host}\0${dirOf(shape.pathname)}`);
    }
  }

  /** Whether any link of `site` can be in scope (false: the site is refused whole). */
  siteInScope(site: string): boolean {
    return this.kind === 'web' || this.sites.has(site);
  }

  /**
   * Whether a link of a site in scope is in scope. Under seed-prefixes a sitemap or feed of a
   * seed host is in scope whatever its path (the sitemaps of in-scope origins are read).
   */
  inScope(shape: UrlShape, kind: string | null | undefined): boolean {
    if (this.kind === 'web' || this.kind === 'seed-sites') return true;
    const prefixes = this.hosts.get(scopeHost(shape));
    if (prefixes === undefined) return false;
    if (this.kind === 'seed-hosts' || kind === 'SITEMAP' || kind === 'FEED') return true;
    const path = shape.pathname;
    for (const p of prefixes) if (path.startsWith(p)) return true;
    return false;
  }

  private add(key: string): void {
    if (this.remember(key)) this.store.put(key, EMPTY);
  }

  /** Adds a stored key to the in-memory scope; true when it is new. */
  private remember(key: string): boolean {
    const tag = key.charCodeAt(0);
    const rest = key.slice(2);
    if (tag === 0x73 /* s */) {
      if (this.sites.has(rest)) return false;
      this.sites.add(rest);
      return true;
    }
    if (tag === 0x68 /* h */) {
      if (this.hosts.has(rest)) return false;
      this.hosts.set(rest, []);
      return true;
    }
    const sep = rest.indexOf('\0');
    const host = rest.slice(0, sep);
    const prefix = rest.slice(sep + 1);
    let prefixes = this.hosts.get(host);
    if (prefixes === undefined) this.hosts.set(host, (prefixes = []));
    if (prefixes.includes(prefix)) return false;
    prefixes.push(prefix);
    return true;
  }
}

/** The per-site overrides covering one URL of a site (`sites:` entries under live `control set` values). */
export type SiteScopeLookup = (site: string, url: string) => SiteOverride;

/** Distinct per-site rule lists compiled at most (each is a few rules; configs hold few lists). */
const MAX_COMPILED_LISTS = 10_000;

/**
 * Scope and filters together, as admission applies them to a batch: seeds widen the scope and
 * are in it; other links are refused (and counted by rule, never marked seen) when out of scope
 * or refused by the filter. A per-site `max-depth` replaces the crawl's for the URLs it covers;
 * per-site `allow`/`deny` rules apply besides the crawl's (deny wins; a site's allow rules narrow
 * its URLs further, they never let in what the crawl's rules refuse).
 */
export class LinkScope {
  readonly filter: UrlFilter;
  private readonly compiled = new Map<string, readonly UrlRule[]>();

  constructor(
    config: CrawlConfig,
    readonly seeds: SeedScope,
    private readonly perSite?: SiteScopeLookup,
  ) {
    this.filter = new UrlFilter(config);
  }

  /** Notes a batch's seeds; answers whether its site is in scope (seeds always are). */
  openBatch(batch: LinkBatch): boolean {
    if (batch.sourceUrl !== null || batch.fromFeed === true) return this.seeds.siteInScope(batch.site);
    this.seeds.noteSeeds(batch);
    return true;
  }

  /**
   * Why one link of a batch whose site is in scope (`openBatch` answered true) is refused: the
   * `urls_refused` rule (`scope`, or the filter's), or undefined to let it through.
   */
  refusal(
    url: string,
    shape: UrlShape,
    depth: number,
    kind: string | null | undefined,
    site?: string,
  ): string | undefined {
    if (!this.seeds.inScope(shape, kind)) return 'scope';
    // a sitemap or feed is read whatever its suffix (`sitemap.xml.gz`); rules and depth still apply
    const bySuffix = kind !== 'SITEMAP' && kind !== 'FEED';
    const o = this.perSite !== undefined && site !== undefined ? this.perSite(site, url) : undefined;
    if (o === undefined || (o.maxDepth === undefined && o.allow === undefined && o.deny === undefined))
      return this.filter.active ? this.filter.refusal(url, shape, depth, undefined, bySuffix) : undefined;
    const refused = this.filter.refusal(url, shape, depth, o.maxDepth, bySuffix);
    if (refused !== undefined) return refused;
    for (const r of this.rules(o.deny)) if (r.matches(url, shape)) return `deny ${r.text}`;
    const allow = this.rules(o.allow);
    if (allow.length === 0) return undefined;
    for (const r of allow) if (r.matches(url, shape)) return undefined;
    return 'allow';
  }

  /** A per-site rule list, compiled once (the lists were validated when the config was read). */
  private rules(texts: readonly string[] | undefined): readonly UrlRule[] {
    if (texts === undefined || texts.length === 0) return [];
    const key = texts.join('\0');
    let rules = this.compiled.get(key);
    if (rules === undefined) {
      if (this.compiled.size >= MAX_COMPILED_LISTS) this.compiled.clear();
      this.compiled.set(key, (rules = texts.map(compileRule)));
    }
    return rules;
  }
}
