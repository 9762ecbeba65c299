import { M } from '../../core/metric-catalogue.js';
import type { Metrics } from '../../core/metrics.js';
import type { FrontEntry, LinkBatch } from '../../schemas/types.js';
import type { SeenSet } from '../../state/seen-set.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { bandOf, LOWEST_BAND, type Band } from './front-queues.js';
import { packedFingerprints } from '../common/fingerprint.js';
import { safeSite } from './host-state.js';
import type { SitePolicy, TemplateVerdict } from './site-policy.js';
import { trapRules } from './url-rules.js';
import { urlShape, type UrlShape } from './url-shape.js';
import { templateKey, templateKeyOf } from './url-templates.js';

/** The links that passed admission, in batch order: entry i waits in band i if its host has no slot. */
export interface AdmittedLinks {
  readonly entries: FrontEntry[];
  readonly bands: Band[];
}

/**
 * Which links of a batch enter the frontier, in layers: trap rules and the hop limit first (each
 * URL parsed once), then the seen-set (one batched check: the Bloom answers "new" alone, every
 * "maybe seen" is confirmed in the store), then the URL-template rule for new URLs of generated
 * shapes (demote or drop), then the site's earned budget. A URL is admitted at most once, ever.
 * Returns the admitted links in batch order; counts the others in `urls_dropped{reason}` and
 * `urls_seen`.
 */
export function admitLinks(
  batch: LinkBatch,
  timestamp: number,
  config: CrawlConfig,
  seenSet: SeenSet,
  sites: SitePolicy,
  metrics: Metrics,
): AdmittedLinks {
  const fromSite = batch.sourceUrl === null ? null : safeSite(batch.sourceUrl);
  sites.noteInlink(batch.site, fromSite);
  const maxHops = sites.maxHops(batch.site);
  const links = batch.links;
  const kept: number[] = [];
  const shapes: UrlShape[] = [];
  let drops: Map<string, number> | undefined;
  for (let i = 0; i < links.length; i++) {
    const link = links[i]!;
    const shape = urlShape(link.url);
    const reason = link.depth > maxHops ? 'too-many-hops' : trapRules(link.url, shape, link.redirectHops, config);
    if (reason === undefined) {
      kept.push(i);
      shapes.push(shape!);
    } else {
      drops ??= new Map();
      drops.set(reason, (drops.get(reason) ?? 0) + 1);
    }
  }
  for (const [reason, n] of drops ?? []) metrics.inc(M.urlsDropped, n, reason);
  const fresh = seenSet.admitPacked(fingerprintsOfKept(batch, kept, metrics));
  let freshCount = 0;
  for (const f of fresh) if (f) freshCount++;
  if (kept.length > freshCount) metrics.inc(M.urlsSeen, kept.length - freshCount);
  // a batch holds one target site's links (LinkBatch contract): one budget decision for all
  const site = batch.site;
  const verdicts = templateVerdicts(kept, shapes, fresh, site, fromSite === site, sites);
  let templated = 0;
  let demoted = 0;
  for (const v of verdicts.values()) {
    if (v === 'drop') templated++;
    else if (v === 'demote') demoted++;
  }
  if (templated > 0) metrics.inc(M.urlsDropped, templated, 'url-template');
  // demoted URLs may still be cut by the budget below; this counts the rule's decisions
  if (demoted > 0) metrics.inc(M.urlsDemoted, demoted, 'url-template');
  const candidates = freshCount - templated;
  const { admitted, refused } = sites.admitMany(site, candidates);
  if (candidates > admitted) metrics.inc(M.urlsDropped, candidates - admitted, refused);
  if (admitted > 0) metrics.inc(M.urlsAdmitted, admitted);
  const entries: FrontEntry[] = [];
  const bands: Band[] = [];
  // a batch's links mostly share a host: entries of one host share its strings, so the lookups
  // downstream hash each once and compare them by reference
  let host = '';
  let origin = '';
  for (let k = 0; k < kept.length && entries.length < admitted; k++) {
    if (!fresh[k]) continue;
    const verdict = verdicts.get(k);
    if (verdict === 'drop') continue;
    const link = links[kept[k]!]!;
    const shape = shapes[k]!;
    if (shape.host !== host || shape.origin !== origin) {
      host = shape.host;
      origin = shape.origin;
    }
    entries.push({
      url: link.url,
      host,
      origin,
      site,
      depth: link.depth,
      redirectHops: link.redirectHops,
      discoveredAt: timestamp,
      kind: link.kind === 'SITEMAP' || link.kind === 'FEED' ? link.kind : 'PAGE',
      visit: 0,
    });
    bands.push(verdict === 'demote' ? LOWEST_BAND : bandOf(link.url, shape, link.depth));
  }
  return { entries, bands };
}

/**
 * The template rule's verdicts on the new links of a batch whose path or query has a generated
 * part, by index into `kept`; links of hand-named shapes are not counted and have no verdict.
 * A batch from another site (or of seeds) counts its links already seen too: a link into a
 * template earns it allowance whether or not the URL is new.
 */
function templateVerdicts(
  kept: readonly number[],
  shapes: readonly UrlShape[],
  fresh: readonly boolean[],
  site: string,
  internal: boolean,
  sites: SitePolicy,
): Map<number, TemplateVerdict> {
  const out = new Map<number, TemplateVerdict>();
  const keys: number[] = [];
  const at: number[] = [];
  let host = '';
  let hostKey = 0;
  for (let k = 0; k < kept.length; k++) {
    if (internal && !fresh[k]) continue;
    const shape = shapes[k]!;
    const key = templateKeyOf(shape.host, shape);
    if (key === undefined) continue;
    if (shape.host !== host) {
      host = shape.host;
      hostKey = templateKey(host, '*');
    }
    keys.push(hostKey, key);
    at.push(k);
  }
  if (at.length === 0) return out;
  const verdicts = sites.noteTemplates(site, keys, internal);
  for (let i = 0; i < at.length; i++) out.set(at[i]!, verdicts[i]!);
  return out;
}

/**
 * The packed fingerprints of the kept links: the batch's own when it carries one per link (the
 * parser computes them), otherwise computed here; a carried block of the wrong length is ignored
 * and counted in `link_fingerprints_invalid`.
 */
function fingerprintsOfKept(batch: LinkBatch, kept: readonly number[], metrics: Metrics): Buffer {
  const carried = batch.fingerprints;
  if (carried != null && carried.length !== 8 * batch.links.length) metrics.inc(M.linkFingerprintsInvalid);
  else if (carried != null) {
    if (kept.length === batch.links.length) return carried;
    const out = Buffer.allocUnsafe(8 * kept.length);
    for (let k = 0; k < kept.length; k++) carried.copy(out, 8 * k, 8 * kept[k]!, 8 * kept[k]! + 8);
    return out;
  }
  return packedFingerprints(kept.map((i) => batch.links[i]!.url));
}
