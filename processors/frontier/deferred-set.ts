import type { FetchKind } from '../../schemas/types.js';
import type { KeyValueStore } from '../../state/state-store.js';

/**
 * Why a URL waits instead of being queued: a guess held it back, not a certainty
 * (`urls_deferred{reason}`).
 */
export type DeferReason = 'url-template' | 'site-budget';

/** One URL held back: what queueing it later needs, and what the rule that held it back looks at again. */
export interface DeferredUrl {
  readonly url: string;
  readonly depth: number;
  readonly redirectHops: number;
  readonly kind: FetchKind;
  readonly discoveredAt: number;
  readonly reason: DeferReason;
  /** For `url-template`: the counter keys of its host's templated URLs and of its template (url-templates.ts); else 0. */
  readonly hostKey: number;
  readonly templateKey: number;
}

/** What may release a site's deferred URLs (several may be marked before the site is looked at). */
export interface Evidence {
  /** The site's budget may have grown: a new linking site, a new cycle, a restart with other options. */
  budget: boolean;
  /** A template's allowance may have grown: a link into a template from another site, or a restart. */
  template: boolean;
  /** A host of the site ran out of queued URLs (a seeded site's template-deferred URLs then go). */
  exhausted: boolean;
}

/** Per site, in RAM and in the store: the next sequence number and how many URLs wait, by reason. */
interface SiteDeferred {
  next: number;
  budget: number;
  template: number;
  /** When the site's budget cycle ends (budget-deferred URLs are looked at again then); 0: none wait. */
  retryAt: number;
}

/** Meta keys start with \x01, which no site name does; entry keys are `site \0 group seq`. */
const META = '\u0001';
const GROUP: Record<DeferReason, string> = { 'site-budget': 'b', 'url-template': 't' };
const KINDS: readonly FetchKind[] = ['PAGE', 'ROBOTS', 'SITEMAP', 'FEED'];
const REASONS: readonly DeferReason[] = ['site-budget', 'url-template'];

/** Fixed width, so that key order is sequence order. */
const seqKey = (seq: number) => seq.toString(16).padStart(13, '0');
const entryKey = (site: string, reason: DeferReason, seq: number) => `${site}\u0000${GROUP[reason]}${seqKey(seq)}`;

const HEADER = 1 + 1 + 2 + 1 + 4 + 4 + 8;

/** `reason u8 ‖ kind u8 ‖ depth u16 ‖ redirectHops u8 ‖ hostKey u32 ‖ templateKey u32 ‖ discoveredAt f64 ‖ url (UTF-8)`, big-endian. */
export function encodeDeferred(d: DeferredUrl): Buffer {
  const b = Buffer.allocUnsafe(HEADER + Buffer.byteLength(d.url));
  b.writeUInt8(REASONS.indexOf(d.reason), 0);
  b.writeUInt8(Math.max(0, KINDS.indexOf(d.kind)), 1);
  b.writeUInt16BE(Math.min(0xffff, d.depth), 2);
  b.writeUInt8(Math.min(0xff, d.redirectHops), 4);
  b.writeUInt32BE(d.hostKey >>> 0, 5);
  b.writeUInt32BE(d.templateKey >>> 0, 9);
  b.writeDoubleBE(d.discoveredAt, 13);
  b.write(d.url, HEADER);
  return b;
}

export function decodeDeferred(b: Buffer): DeferredUrl {
  return {
    reason: REASONS[b.readUInt8(0)] ?? 'site-budget',
    kind: KINDS[b.readUInt8(1)] ?? 'PAGE',
    depth: b.readUInt16BE(2),
    redirectHops: b.readUInt8(4),
    hostKey: b.readUInt32BE(5),
    templateKey: b.readUInt32BE(9),
    discoveredAt: b.readDoubleBE(13),
    url: b.toString('utf8', HEADER),
  };
}

export type DeferredStore = KeyValueStore<string, Buffer>;

/**
 * URLs a heuristic held back (template allowance, site budget), in store `frontier-deferred`:
 * per site and reason one FIFO, oldest first. Their fingerprints are in the seen-set like those
 * of admitted URLs ("seen" is admitted or deferred), so a URL is deferred at most once and
 * queued at most once. RAM holds per site that has deferred URLs its counts and next sequence
 * (one small record per such site, also stored under a meta key, so a restart reads only those);
 * the URLs themselves are read only when their site is looked at again. Evidence noted for a
 * site (`mark`) waits in `pending` until the frontier releases what it can, at the end of the
 * call that noted it.
 */
/** How many of the last pages the yield is averaged over (deferred-set.ts, `yieldFell`). */
const YIELD_SPAN = 8;

export class DeferredSet {
  private readonly perSite = new Map<string, SiteDeferred>();
  private readonly pending = new Map<string, Evidence>();
  /**
   * Per site with template-deferred URLs, since its last release on run-out: pages of a counted
   * shape fetched (each brings one batch of the site's own links) and the new counted URLs they
   * named, on average over the last YIELD_SPAN or so (an exponential moving average: what the
   * pages fetched just before the host ran out named, not what the site named while it was
   * being discovered). RAM only (a restart starts counting again, releasing nothing until pages
   * are seen).
   */
  private readonly yields = new Map<string, { pages: number; recent: number }>();
  private total = 0;

  constructor(private readonly store: DeferredStore) {
    for (const [key, value] of store.range(META, '\u0002')) {
      const s = JSON.parse(value.toString('utf8')) as SiteDeferred;
      if (s.budget + s.template === 0) continue;
      this.perSite.set(key.slice(1), s);
      this.total += s.budget + s.template;
    }
  }

  /** URLs waiting in this partition. */
  get size(): number {
    return this.total;
  }

  /** Whether any URL of `site` waits. */
  has(site: string): boolean {
    return this.perSite.has(site);
  }

  /** How many URLs of `site` wait for `reason`. */
  waiting(site: string, reason: DeferReason): number {
    const s = this.perSite.get(site);
    return s === undefined ? 0 : reason === 'site-budget' ? s.budget : s.template;
  }

  /** Sites with URLs waiting, with when their budget-deferred URLs are due a look (0: none wait). */
  *sites(): IterableIterator<[site: string, retryAt: number]> {
    for (const [site, s] of this.perSite) yield [site, s.budget > 0 ? s.retryAt : 0];
  }

  /**
   * Holds `urls` of `site` back, after those already waiting. `retryAt`: when the site's budget
   * cycle ends, for budget-deferred URLs.
   */
  defer(site: string, urls: readonly DeferredUrl[], retryAt: number): void {
    if (urls.length === 0) return;
    const s = this.perSite.get(site) ?? { next: 0, budget: 0, template: 0, retryAt: 0 };
    for (const u of urls) {
      this.store.put(entryKey(site, u.reason, s.next++), encodeDeferred(u));
      if (u.reason === 'site-budget') {
        s.budget++;
        s.retryAt = retryAt;
      } else s.template++;
    }
    this.total += urls.length;
    this.perSite.set(site, s);
    this.writeMeta(site, s);
  }

  /** When `site`'s budget-deferred URLs are next due a look (its budget cycle's end). */
  retryAt(site: string, at: number): void {
    const s = this.perSite.get(site);
    if (s === undefined || s.retryAt === at) return;
    s.retryAt = at;
    this.writeMeta(site, s);
  }

  /** The oldest URLs of `site` waiting for `reason`, at most `limit`, with the keys `release` takes. */
  *oldest(site: string, reason: DeferReason, limit: number): IterableIterator<[key: string, url: DeferredUrl]> {
    if (limit <= 0 || this.waiting(site, reason) === 0) return;
    const prefix = `${site}\u0000${GROUP[reason]}`;
    let n = 0;
    for (const [key, value] of this.store.range(prefix, `${prefix}\uffff`, Math.min(limit, 1_024))) {
      if (n++ >= limit) return;
      yield [key, decodeDeferred(value)];
    }
  }

  /** Takes the URLs under `keys` (from `oldest`) out of the set: they were queued. */
  release(site: string, reason: DeferReason, keys: readonly string[]): void {
    const s = this.perSite.get(site);
    if (s === undefined || keys.length === 0) return;
    for (const k of keys) this.store.delete(k);
    if (reason === 'site-budget') s.budget -= keys.length;
    else s.template -= keys.length;
    this.total -= keys.length;
    if (s.template <= 0) this.yields.delete(site);
    if (s.budget + s.template <= 0) {
      this.perSite.delete(site);
      this.store.delete(META + site);
    } else this.writeMeta(site, s);
  }

  /**
   * Notes that a page of `site` of a templated shape named `fresh` new templated URLs of its site;
   * counted only while the site has template-deferred URLs.
   */
  noteYield(site: string, fresh: number): void {
    if (this.waiting(site, 'url-template') === 0) return;
    const y = this.yields.get(site);
    if (y === undefined) this.yields.set(site, { pages: 1, recent: fresh });
    else {
      y.pages++;
      y.recent += (fresh - y.recent) / Math.min(y.pages, YIELD_SPAN);
    }
  }

  /**
   * Whether the counted pages of `site` fetched last (since its last release) named new counted
   * URLs at under half a URL a page: a site running out of pages, not a trap (a calendar, a
   * session id, endless paging name at least one new URL a page, to the last).
   */
  yieldFell(site: string): boolean {
    const y = this.yields.get(site);
    return y !== undefined && y.pages > 0 && 2 * y.recent < 1;
  }

  /** Starts counting `site`'s yield again (after a release, whose pages are measured next). */
  resetYield(site: string): void {
    this.yields.delete(site);
  }

  /** Notes evidence that may release URLs of `site`; nothing is noted for a site with none waiting. */
  mark(site: string, evidence: Partial<Evidence>): void {
    if (!this.perSite.has(site)) return;
    const e = this.pending.get(site) ?? { budget: false, template: false, exhausted: false };
    if (evidence.budget) e.budget = true;
    if (evidence.template) e.template = true;
    if (evidence.exhausted) e.exhausted = true;
    this.pending.set(site, e);
  }

  /** Evidence noted since the last call, by site; the list is emptied. */
  takePending(): [string, Evidence][] {
    if (this.pending.size === 0) return [];
    const out = [...this.pending];
    this.pending.clear();
    return out;
  }

  private writeMeta(site: string, s: SiteDeferred): void {
    this.store.put(META + site, Buffer.from(JSON.stringify(s)));
  }
}
