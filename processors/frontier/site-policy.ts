import { GenerationCache } from '../../state/generation-cache.js';
import { KeyFilter } from '../../state/key-filter.js';
import type { KeyValueStore } from '../../state/state-store.js';
import type { ControlCommand, SiteControl, SiteState } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';

export type SiteVerdict = 'admit' | 'site-budget' | 'blocked' | 'dup-cut';

/** RAM for recently used site states. */
const SITE_CACHE_BYTES = 32 * 2 ** 20;

/** About what a decoded SiteState holds in RAM. */
function siteStateBytes(site: string, s: SiteState): number {
  let n = 160 + 2 * site.length;
  for (const from of s.linkingSites) n += 32 + 2 * from.length;
  return n;
}

/**
 * Per-site budgets, inlinks, the duplicate cut and operator controls, in store `frontier-sites`.
 * A site's budget per cycle is sitePageBudget + siteBudgetPerInlink × distinct linking sites
 * (capped); once its recent pages are mostly duplicates the budget freezes where it is.
 */
export class SitePolicy {
  /** Controls in force, cached: consulted on every dispatch. */
  private readonly controls = new Map<string, SiteControl>();
  /** Every site stored or written: a new site's state is made without a store read. */
  private readonly known = new KeyFilter();
  /** States of recently seen sites (the very objects put to the store): a site linked to again is not read. */
  private readonly recent = new GenerationCache<SiteState>(SITE_CACHE_BYTES, siteStateBytes);
  private static readonly MAX_LINKING_TRACKED = 1_000;

  constructor(
    private readonly store: KeyValueStore<string, SiteState>,
    private readonly config: CrawlConfig,
  ) {
    for (const [site, state] of store.range('', '\uffff')) {
      this.known.note(site);
      if (state.control) this.controls.set(site, state.control);
    }
  }

  private state(site: string): SiteState {
    const cached = this.recent.get(site);
    if (cached !== undefined) return cached;
    const state = (this.known.mightHave(site) ? this.store.get(site) : undefined) ?? {
      site,
      admitted: 0,
      linkingSites: [],
      seeded: false,
      recentPages: 0,
      recentDuplicates: 0,
      dupCut: false,
      control: null,
    };
    this.recent.set(site, state);
    return state;
  }

  private put(site: string, state: SiteState): void {
    this.known.note(site);
    this.recent.set(site, state);
    this.store.put(site, state);
  }

  budget(state: SiteState): number {
    return Math.min(
      this.config.siteBudgetMax,
      this.config.sitePageBudget + this.config.siteBudgetPerInlink * state.linkingSites.length,
    );
  }

  /** Notes that `fromSite` links into `site` (a seed when fromSite is null). */
  noteInlink(site: string, fromSite: string | null): void {
    if (fromSite === site) return;
    const state = this.state(site);
    if (fromSite === null) {
      if (state.seeded) return;
      state.seeded = true;
    } else {
      if (state.linkingSites.length >= SitePolicy.MAX_LINKING_TRACKED || state.linkingSites.includes(fromSite)) return;
      state.linkingSites.push(fromSite);
    }
    this.put(site, state);
  }

  /** Decides one new URL of `site`; counts it against the budget when admitted. */
  admit(site: string): SiteVerdict {
    const { admitted, refused } = this.admitMany(site, 1);
    return admitted === 1 ? 'admit' : refused;
  }

  /**
   * Decides `n` new URLs of `site` as `admit` would one by one: the first `admitted` are admitted
   * (and counted against the budget), the rest refused for `refused`.
   */
  admitMany(site: string, n: number): { admitted: number; refused: Exclude<SiteVerdict, 'admit'> } {
    if (this.controls.get(site)?.blocked) return { admitted: 0, refused: 'blocked' };
    if (n <= 0) return { admitted: 0, refused: 'site-budget' };
    const state = this.state(site);
    if (state.dupCut) return { admitted: 0, refused: 'dup-cut' };
    const admitted = Math.max(0, Math.min(n, this.budget(state) - state.admitted));
    if (admitted > 0) {
      state.admitted += admitted;
      this.put(site, state);
    }
    return { admitted, refused: 'site-budget' };
  }

  /** A page of the site was recorded; a window of recent pages that is mostly copies cuts the budget. */
  notePage(site: string, duplicate: boolean): boolean {
    const state = this.state(site);
    state.recentPages++;
    if (duplicate) state.recentDuplicates++;
    let cut = false;
    if (state.recentPages >= this.config.dupCutWindow) {
      if (!state.dupCut && state.recentDuplicates * 100 >= this.config.dupCutPercent * state.recentPages) {
        state.dupCut = true;
        cut = true;
      }
      state.recentPages = 0;
      state.recentDuplicates = 0;
    }
    this.put(site, state);
    return cut;
  }

  control(site: string): SiteControl | undefined {
    return this.controls.get(site);
  }

  /** Applies an operator command; returns the control now in force (undefined after RESUME). */
  apply(cmd: ControlCommand): SiteControl | undefined {
    const state = this.state(cmd.site);
    const prev = state.control ?? { blocked: false, paused: false, minGapMs: 0, issuedAt: 0 };
    let next: SiteControl | null;
    switch (cmd.action) {
      case 'BLOCK':
        next = { ...prev, blocked: true, issuedAt: cmd.issuedAt };
        break;
      case 'PAUSE':
        next = { ...prev, paused: true, issuedAt: cmd.issuedAt };
        break;
      case 'SLOW':
        next = { ...prev, minGapMs: cmd.minGapMs ?? prev.minGapMs, issuedAt: cmd.issuedAt };
        break;
      case 'RESUME':
        next = null;
        break;
    }
    state.control = next;
    this.put(cmd.site, state);
    if (next) this.controls.set(cmd.site, next);
    else this.controls.delete(cmd.site);
    return next ?? undefined;
  }
}
