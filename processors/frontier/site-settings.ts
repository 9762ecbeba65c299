import type { SiteSettings } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { parseLiveSettings, SiteOverrides, type SiteOverride } from '../common/site-overrides.js';

/**
 * A site's settings as the frontier applies them: live overrides (`control set`, kept in the
 * site's state) over the config file's `sites:` entries (the most specific key that sets a
 * field) over the crawl's options. Holds the live overrides of every site of the task in memory
 * (few: one entry per site an operator changed), loaded with the site states.
 */
export class SiteSettingsTable {
  readonly overrides: SiteOverrides;
  private readonly live = new Map<string, SiteSettings>();
  /** The crawl config with another min delay, one per distinct delay in use. */
  private readonly withDelay = new Map<number, CrawlConfig>();

  constructor(private readonly config: CrawlConfig) {
    this.overrides = new SiteOverrides(config.sites);
  }

  /** Notes a site's stored live overrides (on load, and after every change). */
  noteLive(site: string, settings: SiteSettings | null | undefined): void {
    if (settings) this.live.set(site, settings);
    else this.live.delete(site);
  }

  liveOf(site: string): SiteSettings | undefined {
    return this.live.get(site);
  }

  /** The gap floor for `host` of `site` (never below the crawl's floor: every source is checked ≥ 1000 ms). */
  minDelayMs(site: string, host: string): number {
    return this.live.get(site)?.minDelayMs ?? this.overrides.forHost(host).minDelayMs ?? this.config.minDelayMs;
  }

  /** The crawl config as a fetch to `host` is paced by: the same object unless the site's min delay differs. */
  hostConfig(site: string, host: string): CrawlConfig {
    const delay = this.minDelayMs(site, host);
    if (delay === this.config.minDelayMs) return this.config;
    let c = this.withDelay.get(delay);
    if (c === undefined) this.withDelay.set(delay, (c = { ...this.config, minDelayMs: delay }));
    return c;
  }

  /** The site's fixed budget per cycle, when one is set live or in the config file; undefined: it earns its budget. */
  budget(site: string): number | undefined {
    return this.live.get(site)?.budget ?? this.overrides.forSite(site).budget;
  }

  /**
   * The override for one URL with the live values on top: what the scope rules read for
   * max-depth, allow and deny (and the fetcher for headers, from the file only).
   */
  forUrl(site: string, url: string): SiteOverride {
    const file = this.overrides.forUrl(url);
    const maxDepth = this.live.get(site)?.maxDepth;
    return maxDepth === null || maxDepth === undefined ? file : { ...file, maxDepth };
  }
}

/**
 * The live overrides after a `control set` with `settings`, or undefined when they are not valid
 * (the message says why; nothing is changed then). Null when no live override is left.
 */
export function applyLiveSettings(
  prev: SiteSettings | null | undefined,
  settings: Readonly<Record<string, string>>,
  issuedAt: number,
): { next: SiteSettings | null } | { error: string } {
  let change;
  try {
    change = parseLiveSettings(settings);
  } catch (err) {
    return { error: (err as Error).message };
  }
  const next: SiteSettings = {
    minDelayMs: prev?.minDelayMs ?? null,
    budget: prev?.budget ?? null,
    maxDepth: prev?.maxDepth ?? null,
    issuedAt,
  };
  if ('minDelayMs' in change) next.minDelayMs = change.minDelayMs ?? null;
  if ('budget' in change) next.budget = change.budget ?? null;
  if ('maxDepth' in change) next.maxDepth = change.maxDepth ?? null;
  const empty = next.minDelayMs === null && next.budget === null && next.maxDepth === null;
  return { next: empty ? null : next };
}
