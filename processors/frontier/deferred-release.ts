import { M } from '../../core/metric-catalogue.js';
import type { Metrics } from '../../core/metrics.js';
import type { FrontEntry } from '../../schemas/types.js';
import type { DeferredSet, DeferredUrl, Evidence } from './deferred-set.js';
import { bandOf, LOWEST_BAND, type Band } from './front-queues.js';
import type { SitePolicy } from './site-policy.js';
import { urlShape } from './url-shape.js';

/** Deferred URLs of one site looked at per release: a long wait list is read a slice at a time. */
export const RELEASE_SCAN = 4_096;

/** A released URL and the band it waits in for a slot. */
export interface Released {
  readonly entry: FrontEntry;
  readonly band: Band;
}

/**
 * Releases what the evidence noted for `site` allows, oldest first, and returns it to be queued:
 * budget-deferred URLs while the site's budget allows; template-deferred ones whose template's
 * allowance now has room (or all of them, while the budget allows, when a host of the site ran
 * out of URLs and its counted pages fetched since the last such release named under half a new
 * counted URL each: a site running out, not a trap, whose yield a trap's never falls to), each
 * spending the template's allowance and the budget as a new URL would. At most RELEASE_SCAN URLs are read per reason. Counts
 * `urls_released{reason}` and `urls_admitted`.
 */
export function releaseDeferred(
  site: string,
  evidence: Evidence,
  deferred: DeferredSet,
  sites: SitePolicy,
  metrics: Metrics,
): Released[] {
  const out: Released[] = [];
  // template-deferred URLs need the budget too: whatever raised it, look at both
  if (deferred.waiting(site, 'site-budget') > 0) {
    const room = sites.admitMany(site, Math.min(deferred.waiting(site, 'site-budget'), RELEASE_SCAN)).admitted;
    const keys: string[] = [];
    for (const [key, url] of deferred.oldest(site, 'site-budget', room)) {
      keys.push(key);
      push(out, site, url, undefined);
    }
    deferred.release(site, 'site-budget', keys);
    if (keys.length > 0) metrics.inc(M.urlsReleased, keys.length, 'site-budget');
    // a budget that is used up is looked at again when the cycle ends
    if (deferred.waiting(site, 'site-budget') > 0) deferred.retryAt(site, sites.cycleEndsAt(site));
  }
  // a budget that grew raises no template's allowance: only template evidence or a run-out host is looked at
  if (deferred.waiting(site, 'url-template') > 0 && (evidence.template || evidence.exhausted)) {
    // a seeded site is trusted to its hop limit: its host running out is enough; another site must
    // also show it is running out of pages (its counted pages stopped naming new URLs), which a
    // trap's never do
    const trusted = evidence.exhausted && (sites.seeded(site) || deferred.yieldFell(site));
    if (trusted) deferred.resetYield(site);
    const keys: string[] = [];
    let toBudget: DeferredUrl | undefined;
    for (const [key, url] of deferred.oldest(site, 'url-template', RELEASE_SCAN)) {
      const verdict = sites.retryTemplate(site, url.hostKey, url.templateKey, trusted);
      if (verdict === 'defer') continue;
      keys.push(key);
      if (sites.admitMany(site, 1).admitted === 0) {
        // the template had room but the budget has none: the URL now waits on the budget alone
        toBudget = { ...url, reason: 'site-budget', hostKey: 0, templateKey: 0 };
        break;
      }
      push(out, site, url, verdict === 'demote' ? LOWEST_BAND : undefined);
    }
    if (toBudget !== undefined) deferred.defer(site, [toBudget], sites.cycleEndsAt(site));
    const released = keys.length - (toBudget === undefined ? 0 : 1);
    if (released > 0) metrics.inc(M.urlsReleased, released, 'url-template');
    deferred.release(site, 'url-template', keys);
  }
  if (out.length > 0) metrics.inc(M.urlsAdmitted, out.length);
  return out;
}

function push(out: Released[], site: string, url: DeferredUrl, band: Band | undefined): void {
  const shape = urlShape(url.url);
  // it parsed when it was deferred; a URL that no longer does is not queued
  if (shape === undefined) return;
  out.push({
    entry: {
      url: url.url,
      host: shape.host,
      origin: shape.origin,
      site,
      depth: url.depth,
      redirectHops: url.redirectHops,
      discoveredAt: url.discoveredAt,
      kind: url.kind === 'SITEMAP' || url.kind === 'FEED' ? url.kind : 'PAGE',
      visit: 0,
    },
    band: band ?? bandOf(url.url, shape, url.depth),
  });
}
