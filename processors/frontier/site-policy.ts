import { InvalidOptionError } from '../../core/errors.js';
import { GenerationCache } from '../../state/generation-cache.js';
import { KeyFilter } from '../../state/key-filter.js';
import type { KeyValueStore } from '../../state/state-store.js';
import type { ControlCommand, SiteControl, SiteState, TemplateCount } from '../../schemas/types.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { templateCounter } from './url-templates.js';
import { GAP_SAFETY_MS } from './politeness.js';
import { applyLiveSettings, SiteSettingsTable } from './site-settings.js';

export type SiteVerdict = 'admit' | 'site-budget' | 'blocked' | 'dup-cut';

/**
 * What the template rule says of one new URL: queue it, queue it in the lowest band, or hold it
 * back (deferred-set.ts) until its template's allowance grows.
 */
export type TemplateVerdict = 'admit' | 'demote' | 'defer';

/**
 * The gap an operator's `slow` sets between the end of one fetch to a host of the site and the
 * start of the next (with the usual safety slack), or 0 when the site is not slowed.
 */
export function slowGapMs(control: SiteControl | undefined): number {
  return control !== undefined && control.minGapMs > 0 ? control.minGapMs + GAP_SAFETY_MS : 0;
}

/** The state of a site nothing is known of yet: nothing admitted, no evidence, no controls. */
export function emptySiteState(site: string): SiteState {
  return {
    site,
    admitted: 0,
    linkingSites: [],
    seeded: false,
    recentPages: 0,
    recentDuplicates: 0,
    dupCut: false,
    control: null,
    overrides: null,
    templates: [],
    cycleStartedAt: 0,
    hostRates: [],
    rateVisits: 0,
    rateChanges: 0,
    rateExposureMs: 0,
    templateRates: [],
  };
}

/** RAM for recently used site states. */
const SITE_CACHE_BYTES = 32 * 2 ** 20;

/** About what a decoded SiteState holds in RAM. */
function siteStateBytes(site: string, s: SiteState): number {
  let n =
    160 +
    2 * site.length +
    48 * s.templates.length +
    300 * (s.hostRates?.length ?? 0) +
    64 * (s.templateRates?.length ?? 0);
  for (const from of s.linkingSites) n += 32 + 2 * from.length;
  return n;
}

/**
 * Per-site budgets, inlinks, URL-template counters, the duplicate cut and operator controls, in
 * store `frontier-sites`. A site earns its budget from outside links: per cycle (--recrawl-max,
 * counted from the site's first admission) it may admit sitePageBudget URLs + siteBudgetPerInlink
 * × distinct other sites linking in (capped at siteBudgetMax); links from itself earn nothing. A
 * seeded site is trusted: no cap unless seedPageBudget is set (then that is its base). Once its
 * recent pages are mostly duplicates the budget freezes where it is.
 */
export class SitePolicy {
  /** Controls in force, cached: consulted on every dispatch. */
  private readonly controls = new Map<string, SiteControl>();
  /** Every site stored or written: a new site's state is made without a store read. */
  private readonly known = new KeyFilter();
  /** States of recently seen sites (the very objects put to the store): a site linked to again is not read. */
  private readonly recent = new GenerationCache<SiteState>(SITE_CACHE_BYTES, siteStateBytes);
  private static readonly MAX_LINKING_TRACKED = 1_000;
  /** Per-site settings: live (`control set`) over the config file's `sites:` over the options. */
  readonly settings: SiteSettingsTable;

  /** Bytes of site states cached (bounded by SITE_CACHE_BYTES). */
  get cacheBytes(): number {
    return this.recent.bytes;
  }

  /** `now`: the clock budget cycles are measured by (the task's stream time). */
  constructor(
    private readonly store: KeyValueStore<string, SiteState>,
    private readonly config: CrawlConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.settings = new SiteSettingsTable(config);
    for (const [site, state] of store.range('', '\uffff')) {
      this.known.note(site);
      if (state.control) this.controls.set(site, state.control);
      if (state.overrides) this.settings.noteLive(site, state.overrides);
    }
  }

  /** The site's state as stored, without creating one (read-only: for the site status). */
  stateOf(site: string): SiteState | undefined {
    return this.recent.get(site) ?? (this.known.mightHave(site) ? this.store.get(site) : undefined);
  }

  private state(site: string): SiteState {
    const cached = this.recent.get(site);
    if (cached !== undefined) return cached;
    const state = (this.known.mightHave(site) ? this.store.get(site) : undefined) ?? emptySiteState(site);
    this.recent.set(site, state);
    return state;
  }

  /** A site's budget counts per cycle of --recrawl-max: a new cycle starts with nothing admitted. */
  private rollCycle(state: SiteState): void {
    const now = this.now();
    if (state.cycleStartedAt === undefined || state.cycleStartedAt === 0) state.cycleStartedAt = now;
    else if (now - state.cycleStartedAt >= this.config.recrawlMaxMs) {
      state.cycleStartedAt = now;
      state.admitted = 0;
    }
  }

  private put(site: string, state: SiteState): void {
    this.known.note(site);
    this.recent.set(site, state);
    this.store.put(site, state);
  }

  budget(state: SiteState): number {
    const fixed = this.settings.budget(state.site);
    if (fixed !== undefined) return fixed;
    const c = this.config;
    if (state.seeded && c.seedPageBudget === 0) return Infinity;
    const base = state.seeded ? c.seedPageBudget : c.sitePageBudget;
    return Math.min(c.siteBudgetMax, base + c.siteBudgetPerInlink * state.linkingSites.length);
  }

  /** Whether a seed named the site: its URLs are trusted to the hop limit. */
  seeded(site: string): boolean {
    return this.state(site).seeded;
  }

  /** When the site's current budget cycle ends (its budget-deferred URLs are looked at again then). */
  cycleEndsAt(site: string): number {
    const state = this.state(site);
    this.rollCycle(state);
    return state.cycleStartedAt + this.config.recrawlMaxMs;
  }

  /**
   * The site's state, for the refetch planner to read and change its rate fields in place; it
   * calls `ratesChanged` after a change so the state is stored.
   */
  ratesOf(site: string): SiteState {
    return this.state(site);
  }

  /** Stores the site's state after `ratesOf`'s caller changed it. */
  ratesChanged(site: string): void {
    this.put(site, this.state(site));
  }

  /** Distinct other sites seen linking into `site` (up to the tracked maximum). */
  linkingSites(site: string): number {
    return this.state(site).linkingSites.length;
  }

  /**
   * The most hops from a seed a link into `site` may have: maxHops, plus one per distinct other
   * site linking in beyond the first (a page many sites point at is worth going deeper for), at
   * most twice maxHops.
   */
  maxHops(site: string): number {
    const linking = this.state(site).linkingSites.length;
    return this.config.maxHops + Math.min(this.config.maxHops, Math.max(0, linking - 1));
  }

  /**
   * Counts new URLs of templated shapes and decides each: `keys` holds, per URL, the key of its
   * host's counter and of its template's (url-templates.ts), back to back. URLs found on the
   * site's own pages (`internal`) spend their template's allowance; links from another site or a
   * seed earn the template (and the host's templated URLs together) more, and are always admitted.
   * Past half of an allowance URLs go to the lowest band; past all of it they are deferred, and
   * a deferred URL spends nothing until it is released (`retryTemplate`).
   */
  noteTemplates(site: string, keys: readonly number[], internal: boolean): TemplateVerdict[] {
    const state = this.state(site);
    const verdicts: TemplateVerdict[] = [];
    for (let i = 0; i < keys.length; i += 2) {
      const all = templateCounter(state.templates, keys[i]!);
      const one = templateCounter(state.templates, keys[i + 1]!, all);
      if (!internal) {
        one.external++;
        all.external++;
        verdicts.push('admit');
        continue;
      }
      verdicts.push(this.spend(one, all, false));
    }
    if (keys.length > 0) this.put(site, state);
    return verdicts;
  }

  /**
   * Decides a deferred URL of template `templateKey` (host counter `hostKey`) again, as
   * `noteTemplates` would a new one found on the site's own pages now; `trusted` (a seeded site
   * whose other URLs ran out) admits it whatever its allowance. Spends the allowance unless
   * the verdict is `defer` again.
   */
  retryTemplate(site: string, hostKey: number, templateKey: number, trusted: boolean): TemplateVerdict {
    const state = this.state(site);
    // a template whose counter was taken over would inherit a count at least as high: it waits
    // (looking would take over another template's counter and lose what links into it earned)
    if (!trusted && !state.templates.some((t) => t.key === templateKey)) return 'defer';
    const all = templateCounter(state.templates, hostKey);
    const one = templateCounter(state.templates, templateKey, all);
    const verdict = this.spend(one, all, trusted);
    if (verdict !== 'defer') this.put(site, state);
    return verdict;
  }

  /**
   * What a template (or a host's templates together) may admit from the site's own pages: `base`
   * plus the per-inlink allowance for each distinct URL of it other sites link to; once others
   * link to two or more of its URLs it is cited content, not one page of a trap everyone links
   * to, and gets at least what as many inlinks earn a site's budget.
   */
  private allowance(t: TemplateCount, base: number): number {
    const c = this.config;
    const linked = base + c.templateAllowancePerInlink * t.external;
    return t.external >= 2 ? Math.max(linked, c.siteBudgetPerInlink * t.external) : linked;
  }

  /** The verdict on one more URL of `one` (and its host's `all`), counted unless deferred. */
  private spend(one: TemplateCount, all: TemplateCount, trusted: boolean): TemplateVerdict {
    const c = this.config;
    const oneAllowance = this.allowance(one, c.templateAllowance);
    const allAllowance = this.allowance(all, 3 * c.templateAllowance);
    const over = one.internal >= oneAllowance || all.internal >= allAllowance;
    if (over && !trusted) return 'defer';
    one.internal++;
    all.internal++;
    return over || 2 * one.internal > oneAllowance || 2 * all.internal > allAllowance ? 'demote' : 'admit';
  }

  /**
   * Notes that `fromSite` links into `site` (a seed when fromSite is null); true when that is
   * news (a new linking site, or the first seed), which raises the site's budget.
   */
  noteInlink(site: string, fromSite: string | null): boolean {
    if (fromSite === site) return false;
    const state = this.state(site);
    if (fromSite === null) {
      if (state.seeded) return false;
      state.seeded = true;
    } else {
      if (state.linkingSites.length >= SitePolicy.MAX_LINKING_TRACKED || state.linkingSites.includes(fromSite))
        return false;
      state.linkingSites.push(fromSite);
    }
    this.put(site, state);
    return true;
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
    this.rollCycle(state);
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

  /**
   * Applies an operator command; returns the control now in force (undefined after RESUME). A
   * SET changes the site's live overrides instead; one with a bad setting changes nothing and
   * throws InvalidOptionError saying why.
   */
  apply(cmd: ControlCommand): SiteControl | undefined {
    const state = this.state(cmd.site);
    if (cmd.action === 'SET') {
      const outcome = applyLiveSettings(state.overrides, cmd.settings ?? {}, cmd.issuedAt);
      if ('error' in outcome) throw new InvalidOptionError(`${cmd.site}: ${outcome.error}`);
      state.overrides = outcome.next;
      this.put(cmd.site, state);
      this.settings.noteLive(cmd.site, outcome.next);
      return this.controls.get(cmd.site);
    }
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
      default:
        return this.controls.get(cmd.site);
    }
    state.control = next;
    this.put(cmd.site, state);
    if (next) this.controls.set(cmd.site, next);
    else this.controls.delete(cmd.site);
    return next ?? undefined;
  }
}
