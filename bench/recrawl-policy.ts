import { validateCrawlConfig, type CrawlConfig } from '../processors/common/crawl-config.js';
import { importance } from '../processors/frontier/recrawl-interval.js';
import { RefetchPlanner } from '../processors/frontier/refetch-planner.js';
import { emptySiteState } from '../processors/frontier/site-policy.js';
import {
  bucketRate,
  optimalInterval,
  rateBucket,
  RATE_BUCKETS,
  solvePrice,
} from '../processors/frontier/refetch-policy.js';
import type { PageRecord, SiteState, UrlHistory } from '../schemas/types.js';
import { figure, machineLine } from './machine.js';
import {
  CLASSES,
  CLASS_NAMES,
  DAY,
  HOUR,
  makePopulation,
  meanRate,
  NEVER,
  simulate,
  type Chooser,
  type Population,
  type SimOptions,
  type SimResult,
} from './recrawl-policy-sim.js';

// A month of a 1 M-URL recrawl under the two --recrawl-policy values, against a fixed interval
// at the same number of fetches (issue #33). Every revisit interval comes from the shipped
// RefetchPlanner (processors/frontier/refetch-planner.ts); only the web and the host slots are
// simulated (bench/recrawl-policy-sim.ts).
//
// - URLs: RECRAWL_POLICY_URLS (default 1,000,000) over sites of 100 pages each (uniform sizes:
//   10,000 sites at 1 M). Each site is static (40 % of sites), mixed (45 %) or news (15 %), and its
//   pages draw their change class from its type's mix; overall about 60 % of pages never change,
//   21 % change every 2–30 d (slow), 9.5 % every 1 h–1 d, 2 % every 2–30 min (very fast: faster
//   than --recrawl-min) and 7 % are bursty: a two-state Markov-modulated Poisson process, bursts
//   of ~1 d (exponential) with a change every 15 min–3 h, then ~10 d of quiet (one change per
//   60 d). Periods are log-uniform in their range; every class is a Poisson process given its
//   state.
// - Changes are not events: at a visit the first change after the previous visit is drawn from
//   the process (memoryless; a burst switch in between draws it again at the new rate), so a
//   visit sees `changed` iff at least one change happened since the last visit, and the copy was
//   stale from that change until the visit.
// - RECRAWL_POLICY_DAYS (default 30) simulated days, --recrawl-min 1 h, --recrawl-max 30 d,
//   --recrawl-share 0.5 (the defaults). First visits at uniform times over the first 2 days, on
//   the new-URL half of each host's picks (not in the revisit slots); then every revisit is due
//   at its last fetch + the planner's interval.
// - Budget: each site's host keeps a gap of RECRAWL_POLICY_GAP_S (default 1,440 s) between
//   fetches, so revisits get recrawlShare / gap = one fetch per 48 min, 30 a day for 100 pages
//   (what matters is pages per unit of capacity: this is a 100,000-page site at a 1.44 s gap).
//   The planner is passed budgetPerMs = recrawlShare / gap as revisits.ts onPageRecord does, and
//   the capacity is enforced: a due revisit takes its site's next free slot (slots 48 min apart,
//   first come first served by due time), so a policy that asks for more waits.
// - Staleness: the time-averaged share of URLs whose copy is out of date, over days 8–30 (a week
//   of warm-up; RECRAWL_POLICY_WARMUP_DAYS); mean age: the time-averaged time since a copy's first
//   missed change (0 while fresh).
// - Fixed interval: every URL every I = N × 22 d / F, where F is a policy run's revisits in days
//   8–30 (so about the same F there), phases random (the first visit uniform over [0, I)). Its
//   per-site rate is printed as a share of the capacity; with uniform site sizes it fits whenever
//   the policy run's own fetches did, so it runs without slots.
// - Equal budget: the optimal policy is run again with its budgetPerMs scaled until its revisits
//   in days 8–30 are within 2 % of the adaptive run's (the slots stay as they were).
// - Oracle: the shipped allocation rule (optimalInterval at each site's solvePrice) fed the true
//   rates instead of estimates, in the same slots: how much of the gap is estimation. For the
//   optimal runs the planner's estimates at the end (the rate bucket of each URL) are printed as
//   median periods by class beside the true ones.
const N = Number(process.env['RECRAWL_POLICY_URLS'] ?? 1_000_000);
const DAYS = Number(process.env['RECRAWL_POLICY_DAYS'] ?? 30);
const GAP_MS = Number(process.env['RECRAWL_POLICY_GAP_S'] ?? 1_440) * 1000;
const PAGES_PER_SITE = 100;
const WARMUP_DAYS = Number(process.env['RECRAWL_POLICY_WARMUP_DAYS'] ?? 8);
const SEED = 33;

const base = validateCrawlConfig({ recrawlMinMs: HOUR, recrawlMaxMs: 30 * DAY });
const budgetPerMs = base.recrawlShare / Math.max(1, GAP_MS);
const slotGapMs = GAP_MS / base.recrawlShare;
const windowMs = (DAYS - WARMUP_DAYS) * DAY;
const options: SimOptions = {
  days: DAYS,
  warmupDays: WARMUP_DAYS,
  firstSpreadDays: 2,
  slotGapMs,
  minIntervalMs: base.recrawlMinMs,
  seed: SEED + 1,
};

/** The shipped planner as a chooser: a PageRecord and a UrlHistory reused, filled from the arrays. */
function plannerChooser(pop: Population, config: CrawlConfig, budget: number) {
  const siteNames = Array.from({ length: pop.sites }, (_, s) => `site${s}.example`);
  const states = new Map<string, SiteState>();
  const planner = new RefetchPlanner(config, {
    ratesOf: (site) => {
      let s = states.get(site);
      if (s === undefined) states.set(site, (s = emptySiteState(site)));
      return s;
    },
    ratesChanged: () => undefined,
  });
  // the planner reads the page's site, kind and fetch time, and these fields of the history
  const page: PageRecord = {
    url: 'https://site0.example/',
    canonicalUrl: null,
    site: 'site0.example',
    host: 'site0.example',
    fetchTime: 0,
    status: 200,
    contentType: 'text/html',
    contentLength: 20_000,
    payloadDigest: null,
    simhash: null,
    duplicateOf: null,
    warcFile: null,
    warcOffset: null,
    warcLength: null,
    outlinkCount: 20,
    depth: 3,
    errorCode: null,
    redirectTarget: null,
    charset: 'UTF-8',
    language: null,
    noindex: false,
    kind: 'PAGE',
    visit: 0,
    changed: false,
    notModified: false,
    previousFetchTime: null,
    etag: null,
    lastModified: null,
    parserVersion: 1,
    reparsed: false,
    warcUri: null,
  };
  const previous: UrlHistory = {
    url: page.url,
    kind: 'PAGE',
    depth: 3,
    lastFetch: 0,
    status: 200,
    etag: null,
    lastModified: null,
    digest: null,
    simhash: null,
    intervalMs: 0,
    nextDue: 0,
    visits: 1,
    changes: 0,
    queuedAt: 0,
    rateVisits: 0,
    rateChanges: 0,
    rateExposureMs: 0,
    rateBucket: -1,
  };
  // first visits sent straight to --recrawl-max
  const counts = { firstAtMax: 0 };
  // depth 3, a site few others link to: importance 1 (no page is favoured)
  const weight = importance(page.depth, 0);
  const choose: Chooser = (u, t, changed, first, h) => {
    const site = siteNames[pop.site[u]!]!;
    page.site = site;
    page.host = site;
    page.fetchTime = t;
    page.visit = first ? 0 : 1;
    let prev: UrlHistory | undefined;
    if (!first) {
      previous.lastFetch = h.lastFetch[u]!;
      previous.intervalMs = h.intervalMs[u]!;
      previous.nextDue = previous.lastFetch + previous.intervalMs;
      previous.rateVisits = h.rateVisits[u]!;
      previous.rateChanges = h.rateChanges[u]!;
      previous.rateExposureMs = h.rateExposureMs[u]!;
      previous.rateBucket = h.rateBucket[u]!;
      prev = previous;
    }
    const c = planner.plan(page, prev, changed, weight, budget);
    if (first && c.intervalMs >= config.recrawlMaxMs) counts.firstAtMax++;
    h.rateVisits[u] = c.evidence.visits;
    h.rateChanges[u] = c.evidence.changes;
    h.rateExposureMs[u] = c.evidence.exposureMs;
    h.rateBucket[u] = c.bucket;
    return c.intervalMs;
  };
  return { choose, states, counts };
}
type Kind = 'planner' | 'oracle' | 'fixed';

interface Run {
  readonly label: string;
  readonly kind: Kind;
  readonly result: SimResult;
  readonly wallS: number;
  readonly cpuS: number;
  /** Sites' prices (ms) at the end, solved over their histograms at their budget; empty for fixed. */
  readonly prices: readonly number[];
  /** Whether the URLs' rate buckets hold the planner's estimates. */
  readonly estimated: boolean;
  /** Planner runs: first visits whose interval was --recrawl-max. */
  readonly firstAtMax?: number;
}

const bounds = { min: base.recrawlMinMs, max: base.recrawlMaxMs };

function runPlanner(label: string, pop: Population, policy: 'adaptive' | 'optimal', budget: number): Run {
  const config = validateCrawlConfig({ ...base, recrawlPolicy: policy });
  const { choose, states, counts } = plannerChooser(pop, config, budget);
  const run = timed(() => simulate(pop, choose, options));
  const prices =
    policy === 'optimal'
      ? [...states.values()].flatMap((s) => (s.hostRates ?? []).map((h) => solvePrice(h.counts, budget, bounds)))
      : [];
  return { label, kind: 'planner', ...run, prices, estimated: policy === 'optimal', firstAtMax: counts.firstAtMax };
}

/**
 * The shipped allocation rule with the rates known: each URL at optimalInterval of its true rate
 * (a bursty one's long-run mean) at its site's solvePrice over a histogram of the true rates, in
 * the same slots. What the optimal policy would reach if its estimates were exact.
 */
function runOracle(label: string, pop: Population, budget: number): Run {
  const counts = Array.from({ length: pop.sites }, () => new Array<number>(RATE_BUCKETS).fill(0));
  for (let u = 0; u < pop.n; u++) counts[pop.site[u]!]![rateBucket(meanRate(pop, u))]!++;
  const prices = counts.map((c) => solvePrice(c, budget, bounds));
  const run = timed(() =>
    simulate(pop, (u) => optimalInterval(meanRate(pop, u), prices[pop.site[u]!]!, bounds), options),
  );
  return { label, kind: 'oracle', ...run, prices, estimated: false };
}

/**
 * Every URL every N × window / `windowRevisits`, its first visit (its phase) uniform over one
 * interval, without slots (see the top of the file).
 */
function runFixed(label: string, pop: Population, windowRevisits: number): Run & { intervalMs: number } {
  const intervalMs = (pop.n * windowMs) / windowRevisits;
  const run = timed(() =>
    simulate(pop, () => intervalMs, { ...options, slotGapMs: 0, firstSpreadDays: intervalMs / DAY }),
  );
  return { label, kind: 'fixed', ...run, prices: [], estimated: false, intervalMs };
}

function timed(f: () => SimResult): { result: SimResult; wallS: number; cpuS: number } {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = f();
  const cpu = process.cpuUsage(cpu0);
  return { result, wallS: (performance.now() - t0) / 1000, cpuS: (cpu.user + cpu.system) / 1e6 };
}

/**
 * How the planner's estimates compare with the true rates at the end: the rate bucket each URL
 * was last put in (its own evidence with its site's as the prior) as a period, by class, against
 * the true long-run period.
 */
function estimates(label: string, pop: Population, r: SimResult): void {
  const buckets = r.histories.rateBucket;
  const estimated: number[][] = Array.from({ length: CLASSES }, () => []);
  const truth: number[][] = Array.from({ length: CLASSES }, () => []);
  let neverAtZero = 0;
  for (let u = 0; u < pop.n; u++) {
    const b = buckets[u]!;
    if (b < 0) continue;
    const c = pop.cls[u]!;
    if (c === NEVER && b === 0) neverAtZero++;
    estimated[c]!.push(b === 0 ? Infinity : 1 / bucketRate(b));
    if (c !== NEVER) truth[c]!.push(1 / meanRate(pop, u));
  }
  const L = `${label}: estimate at the end`;
  figure(`${L}: never-changing pages estimated never to change`, (100 * neverAtZero) / pop.classCount[NEVER]!, '%');
  for (let c = 0; c < CLASSES; c++) {
    if (estimated[c]!.length === 0) continue;
    const t = c === NEVER ? 'never' : `${(median(truth[c]!) / HOUR).toFixed(2)} h`;
    figure(`${L}: ${CLASS_NAMES[c]}: median period estimated (true: ${t})`, median(estimated[c]!) / HOUR, 'h');
  }
}

function median(xs: number[]): number {
  xs.sort((a, b) => a - b);
  return xs[xs.length >> 1]!;
}

const capacityPerWindow = (pop: Population) => (pop.sites * windowMs) / slotGapMs;
const perDay = (fetches: number, urls: number) => fetches / urls / (windowMs / DAY);
const W = `days ${WARMUP_DAYS}–${DAYS}`;

function report(pop: Population, run: Run): void {
  const r = run.result;
  const L = run.label;
  figure(`${L}: revisits in ${DAYS} days`, r.revisits, 'fetches');
  figure(`${L}: revisits in ${W}`, r.windowRevisits, 'fetches');
  figure(`${L}: revisits per URL per day, ${W}`, perDay(r.windowRevisits, pop.n), '');
  figure(
    `${L}: share of the sites' revisit capacity used, ${W}`,
    (100 * r.windowRevisits) / capacityPerWindow(pop),
    '%',
  );
  figure(`${L}: staleness (time-averaged share of URLs stale), ${W}`, 100 * r.staleness, '%');
  figure(`${L}: mean age of a copy`, r.meanAgeMs / HOUR, 'h');
  if (run.kind !== 'fixed') {
    figure(`${L}: mean wait of a due revisit for its site's slot`, r.meanWaitMs / 60_000, 'min');
    figure(`${L}: longest wait for a slot`, r.maxWaitMs / HOUR, 'h');
  }
  if (run.prices.length > 0) {
    const binding = run.prices.filter((p) => p > 0).length;
    figure(`${L}: sites whose budget binds at the end (price > 0)`, (100 * binding) / run.prices.length, '%');
    figure(`${L}: median site price at the end`, median([...run.prices]) / HOUR, 'h');
  }
  if (run.firstAtMax !== undefined)
    figure(`${L}: URLs sent to --recrawl-max on their first visit`, (100 * run.firstAtMax) / pop.n, '%');
  if (run.estimated) estimates(L, pop, r);
  for (let c = 0; c < CLASSES; c++) {
    const count = pop.classCount[c]!;
    if (count === 0) continue;
    const name = `${L}: ${CLASS_NAMES[c]} (${((100 * count) / pop.n).toFixed(1)} % of URLs)`;
    figure(`${name}: staleness`, 100 * r.stalenessByClass[c]!, '%');
    if (run.kind === 'fixed') continue;
    figure(`${name}: revisits per URL per day`, perDay(r.windowRevisitsByClass[c]!, count), '');
    figure(`${name}: share of the revisits`, (100 * r.windowRevisitsByClass[c]!) / r.windowRevisits, '%');
    figure(`${name}: mean interval at the last visit`, r.finalIntervalByClass[c]! / HOUR, 'h');
  }
  if (run.kind === 'fixed') {
    const f = run as Run & { intervalMs: number };
    figure(`${L}: interval`, f.intervalMs / HOUR, 'h');
    figure(
      `${L}: per-site rate as a share of a site's revisit capacity`,
      (100 * PAGES_PER_SITE * slotGapMs) / f.intervalMs,
      '%',
    );
  }
  figure(`${L}: wall time`, run.wallS, 's');
  figure(`${L}: CPU time`, run.cpuS, 's');
}

console.log(machineLine());
console.log(
  `${N.toLocaleString('en-US')} URLs, ${Math.ceil(N / PAGES_PER_SITE).toLocaleString('en-US')} sites of ${PAGES_PER_SITE}, ` +
    `${DAYS} days (staleness over ${W}), recrawl min 1 h, max 30 d, share ${base.recrawlShare}, ` +
    `host gap ${GAP_MS / 1000} s: ${(DAY / slotGapMs).toFixed(1)} revisits per site per day`,
);
const wall0 = performance.now();
const cpu0 = process.cpuUsage();
const pop = makePopulation(N, PAGES_PER_SITE, SEED);

const adaptive = runPlanner('adaptive', pop, 'adaptive', budgetPerMs);
report(pop, adaptive);
const fixedA = runFixed('fixed at adaptive fetches', pop, adaptive.result.windowRevisits);
report(pop, fixedA);
const optimal = runPlanner('optimal', pop, 'optimal', budgetPerMs);
report(pop, optimal);
const fixedO = runFixed('fixed at optimal fetches', pop, optimal.result.windowRevisits);
report(pop, fixedO);
const oracle = runOracle('oracle (optimal rule, true rates)', pop, budgetPerMs);
report(pop, oracle);
const fixedX = runFixed('fixed at oracle fetches', pop, oracle.result.windowRevisits);
figure(`fixed at oracle fetches: staleness, ${W}`, 100 * fixedX.result.staleness, '%');

// optimal at adaptive's fetch count: its budget scaled, by the secant in log-log (the revisits
// grow slower than the budget: the slots and the never-changing pages do not follow it), to
// within 2 % or for at most 3 more runs
const target = adaptive.result.windowRevisits;
let equal: Run = optimal;
let equalScale = 1;
let prev = { scale: 1, fetches: optimal.result.windowRevisits };
for (let i = 0; i < 3 && Math.abs(prev.fetches - target) > 0.02 * target; i++) {
  const slope =
    i === 0 ? 0.5 : Math.log(equal.result.windowRevisits / prev.fetches) / Math.log(equalScale / prev.scale);
  if (i > 0) prev = { scale: equalScale, fetches: equal.result.windowRevisits };
  equalScale = prev.scale * (target / prev.fetches) ** (1 / Math.max(0.1, slope));
  equal = runPlanner('optimal at adaptive fetches', pop, 'optimal', budgetPerMs * equalScale);
  figure(
    `optimal at adaptive fetches: try ${i + 1}, budget ×${equalScale.toFixed(3)}: revisits in ${W}`,
    equal.result.windowRevisits,
    'fetches',
  );
  if (Math.abs(equal.result.windowRevisits - target) <= 0.02 * target) break;
}
if (equal !== optimal) report(pop, equal);

const ratio = (a: Run, b: Run) => a.result.staleness / b.result.staleness;
figure('adaptive / fixed at its fetches: staleness ratio', ratio(adaptive, fixedA), '');
figure('optimal / fixed at its fetches: staleness ratio', ratio(optimal, fixedO), '');
figure('oracle / fixed at its fetches: staleness ratio', ratio(oracle, fixedX), '');
figure('optimal / adaptive, each at its own fetches: staleness ratio', ratio(optimal, adaptive), '');
figure(`optimal / adaptive: revisits in ${W}`, optimal.result.windowRevisits / target, '');
figure(
  `optimal at adaptive fetches (budget ×${equalScale.toFixed(3)}, revisits ${((100 * equal.result.windowRevisits) / target).toFixed(1)} %) / adaptive: staleness ratio`,
  ratio(equal, adaptive),
  '',
);
figure('optimal at adaptive fetches / fixed at adaptive fetches: staleness ratio', ratio(equal, fixedA), '');
figure('optimal / oracle: staleness ratio', ratio(optimal, oracle), '');
figure(`optimal / oracle: revisits in ${W}`, optimal.result.windowRevisits / oracle.result.windowRevisits, '');
const cpu = process.cpuUsage(cpu0);
figure('total wall time', (performance.now() - wall0) / 1000, 's');
figure('total CPU time', (cpu.user + cpu.system) / 1e6, 's');
figure('RSS at the end', process.memoryUsage().rss / 2 ** 20, 'MiB');
