import { M } from '../../core/metric-catalogue.js';
import type { Metrics } from '../../core/metrics.js';
import type { FrontEntry, LinkBatch } from '../../schemas/types.js';
import type { SeenSet } from '../../state/seen-set.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { bandOf, LOWEST_BAND, type Band } from './front-queues.js';
import { packedFingerprints } from '../common/fingerprint.js';
import { safeSite } from './host-state.js';
import type { DeferredSet, DeferredUrl } from './deferred-set.js';
import type { SitePolicy, TemplateVerdict } from './site-policy.js';
import { trapRules } from './url-rules.js';
import type { LinkScope } from './scope.js';
import { urlShape, type UrlShape } from './url-shape.js';
import { skeletonKeyOf, templateKey, templateKeyOf } from './url-templates.js';

/** The links that passed admission, in batch order: entry i waits in band i if its host has no slot. */
export interface AdmittedLinks {
  readonly entries: FrontEntry[];
  readonly bands: Band[];
  /** How many new links were deferred, and the host of the last (undefined: none). */
  readonly deferred: number;
  readonly deferredHost: string | undefined;
}

/**
 * Which links of a batch enter the frontier, in layers: trap rules and the hop limit first (each
 * URL parsed once; certain junk, refused for good), then the seen-set (one batched check: the
 * Bloom answers "new" alone, every "maybe seen" is confirmed in the store), then the URL-template
 * rule for new URLs of generated shapes (demote or defer), then the site's earned budget (admit
 * or defer). A URL is admitted or deferred at most once, ever: "seen" is either. Deferred URLs
 * wait in `deferred` (deferred-set.ts) and a batch that may have earned its site more (a new
 * linking site, a link into a template) marks the site for another look. Returns the admitted
 * links in batch order; counts the others in `urls_dropped{reason}`, `urls_deferred{reason}` and
 * `urls_seen`. Before all of these, `scope` (when given) notes a seed batch's seeds and refuses
 * links out of scope or refused by a filter (counted in `urls_refused{rule}`): a refused link is
 * not marked seen, so it is admitted when a widened scope lets it in and it is linked again.
 */
export function admitLinks(
  batch: LinkBatch,
  timestamp: number,
  config: CrawlConfig,
  seenSet: SeenSet,
  sites: SitePolicy,
  deferred: DeferredSet,
  metrics: Metrics,
  scope?: LinkScope,
): AdmittedLinks {
  const siteInScope = scope === undefined || scope.openBatch(batch);
  if (!siteInScope) {
    // a site out of scope earns nothing from the batch either: no inlink noted, nothing deferred
    if (batch.links.length > 0) metrics.inc(M.urlsRefused, batch.links.length, 'scope');
    return { entries: [], bands: [], deferred: 0, deferredHost: undefined };
  }
  const fromSite = batch.sourceUrl === null ? null : safeSite(batch.sourceUrl);
  const site = batch.site;
  if (sites.noteInlink(site, fromSite)) deferred.mark(site, { budget: true });
  const maxHops = sites.maxHops(site);
  const links = batch.links;
  const kept: number[] = [];
  const shapes: UrlShape[] = [];
  let drops: Map<string, number> | undefined;
  let refusals: Map<string, number> | undefined;
  for (let i = 0; i < links.length; i++) {
    const link = links[i]!;
    const shape = urlShape(link.url);
    const reason = link.depth > maxHops ? 'too-many-hops' : trapRules(link.url, shape, link.redirectHops, config);
    if (reason === undefined) {
      const refused = scope?.refusal(link.url, shape!, link.depth, link.kind, batch.site);
      if (refused !== undefined) {
        refusals ??= new Map();
        refusals.set(refused, (refusals.get(refused) ?? 0) + 1);
        continue;
      }
      kept.push(i);
      shapes.push(shape!);
    } else {
      drops ??= new Map();
      drops.set(reason, (drops.get(reason) ?? 0) + 1);
    }
  }
  for (const [reason, n] of drops ?? []) metrics.inc(M.urlsDropped, n, reason);
  for (const [rule, n] of refusals ?? []) metrics.inc(M.urlsRefused, n, rule);
  const fresh = seenSet.admitPacked(fingerprintsOfKept(batch, kept, metrics));
  let freshCount = 0;
  for (const f of fresh) if (f) freshCount++;
  if (kept.length > freshCount) metrics.inc(M.urlsSeen, kept.length - freshCount);
  // a batch holds one target site's links (LinkBatch contract): one budget decision for all
  const internal = fromSite === site;
  const templates = templateVerdicts(kept, shapes, fresh, site, internal, sites);
  // links into a template from elsewhere may have raised an allowance that deferred URLs wait on
  if (!internal && templates.verdicts.size > 0) deferred.mark(site, { template: true });
  // the yield of a counted page: how many new counted URLs of its own site it names
  if (internal && deferred.waiting(site, 'url-template') > 0 && batch.sourceUrl !== null) {
    const source = urlShape(batch.sourceUrl);
    if (source !== undefined && shapeKeyOf(source) !== undefined) deferred.noteYield(site, templates.verdict.length);
  }
  let templated = 0;
  let demoted = 0;
  for (const v of templates.verdicts.values()) {
    if (templates.verdict[v] === 'defer') templated++;
    else if (templates.verdict[v] === 'demote') demoted++;
  }
  // demoted URLs may still be deferred by the budget below; this counts the rule's decisions
  if (demoted > 0) metrics.inc(M.urlsDemoted, demoted, 'url-template');
  const candidates = freshCount - templated;
  const { admitted, refused } = sites.admitMany(site, candidates);
  if (admitted > 0) metrics.inc(M.urlsAdmitted, admitted);
  // a budget is a guess (it grows with inlinks and cycles): what it refuses waits; a block or a
  // site of copies is refused for good
  const deferBudget = refused === 'site-budget';
  if (candidates > admitted && !deferBudget) metrics.inc(M.urlsDropped, candidates - admitted, refused);
  const entries: FrontEntry[] = [];
  const bands: Band[] = [];
  let waiting: DeferredUrl[] | undefined;
  let deferredHost: string | undefined;
  // a batch's links mostly share a host: entries of one host share its strings, so the lookups
  // downstream hash each once and compare them by reference
  let host = '';
  let origin = '';
  for (let k = 0; k < kept.length; k++) {
    if (!fresh[k]) continue;
    const at = templates.verdicts.get(k);
    const verdict = at === undefined ? undefined : templates.verdict[at];
    const link = links[kept[k]!]!;
    const kind = link.kind === 'SITEMAP' || link.kind === 'FEED' ? link.kind : 'PAGE';
    if (verdict === 'defer' || entries.length >= admitted) {
      if (verdict !== 'defer' && !deferBudget) continue;
      waiting ??= [];
      deferredHost = shapes[k]!.host;
      waiting.push({
        url: link.url,
        depth: link.depth,
        redirectHops: link.redirectHops,
        kind,
        discoveredAt: timestamp,
        reason: verdict === 'defer' ? 'url-template' : 'site-budget',
        hostKey: verdict === 'defer' ? templates.keys[2 * at!]! : 0,
        templateKey: verdict === 'defer' ? templates.keys[2 * at! + 1]! : 0,
      });
      continue;
    }
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
      kind,
      visit: 0,
    });
    bands.push(verdict === 'demote' ? LOWEST_BAND : bandOf(link.url, shape, link.depth));
  }
  if (waiting !== undefined) {
    if (templated > 0) metrics.inc(M.urlsDeferred, templated, 'url-template');
    if (waiting.length > templated) metrics.inc(M.urlsDeferred, waiting.length - templated, 'site-budget');
    deferred.defer(site, waiting, waiting.length > templated ? sites.cycleEndsAt(site) : 0);
  }
  return { entries, bands, deferred: waiting?.length ?? 0, deferredHost };
}

/** The template rule's verdicts on a batch: by index into `kept`, the index of its verdict and keys. */
interface TemplateVerdicts {
  readonly verdicts: Map<number, number>;
  /** Per verdict, the keys of its host's counter and of its template's, back to back. */
  readonly keys: readonly number[];
  readonly verdict: readonly TemplateVerdict[];
}

const NO_TEMPLATES: TemplateVerdicts = { verdicts: new Map(), keys: [], verdict: [] };

/** The key a URL is counted under by the template rule: its template's, else its skeleton's (the root has none). */
function shapeKeyOf(shape: UrlShape): number | undefined {
  return templateKeyOf(shape.host, shape) ?? skeletonKeyOf(shape.host, shape);
}

/**
 * The template rule's verdicts on the new links of a batch, each counted under its template
 * (a generated part) or, for a hand-named URL, its skeleton (url-templates.ts); the host's root
 * is not counted and has no verdict. Only new URLs count, from another site (or a seed) too: a
 * link into a template earns it allowance once per URL, so a trap's one page linked from
 * hundreds of sites earns what one link does.
 */
function templateVerdicts(
  kept: readonly number[],
  shapes: readonly UrlShape[],
  fresh: readonly boolean[],
  site: string,
  internal: boolean,
  sites: SitePolicy,
): TemplateVerdicts {
  const keys: number[] = [];
  const at: number[] = [];
  let host = '';
  let hostKey = 0;
  for (let k = 0; k < kept.length; k++) {
    if (!fresh[k]) continue;
    const shape = shapes[k]!;
    const key = shapeKeyOf(shape);
    if (key === undefined) continue;
    if (shape.host !== host) {
      host = shape.host;
      hostKey = templateKey(host, '*');
    }
    keys.push(hostKey, key);
    at.push(k);
  }
  if (at.length === 0) return NO_TEMPLATES;
  const verdict = sites.noteTemplates(site, keys, internal);
  const verdicts = new Map<number, number>();
  for (let i = 0; i < at.length; i++) verdicts.set(at[i]!, i);
  return { verdicts, keys, verdict };
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
