/**
 * A URL's (or a site's) change rate from what its revisits saw: Cho and Garcia-Molina's
 * estimator for a Poisson process observed only as "changed since the last visit or not"
 * ("Estimating frequency of change", ACM TOIT 2003, the improved estimator
 * r̂ = −ln((n − X + 0.5) / (n + 0.5)) for n visits of which X saw a change, divided by the mean
 * interval). It stays finite when every visit saw a change and is nearly unbiased for small n.
 *
 * Evidence is decayed: each new observation weighs 1 and the older ones EVIDENCE_DECAY times what
 * they weighed, so about the last 1 / (1 − EVIDENCE_DECAY) visits count and a page whose rate
 * changes is followed.
 */

/** Decayed sums of a URL's (or a site's) revisit observations. All ≥ 0; immutable. */
export interface ChangeEvidence {
  /** Observations (revisits with an outcome). */
  readonly visits: number;
  /** Of those, the ones that found a change. */
  readonly changes: number;
  /** Sum of the intervals observed, ms. */
  readonly exposureMs: number;
}

export const NO_EVIDENCE: ChangeEvidence = { visits: 0, changes: 0, exposureMs: 0 };

/** Weight of the older evidence at each new observation: about the last ten revisits of a URL count. */
export const EVIDENCE_DECAY = 0.9;

/** Evidence after one more observation: `intervalMs` since the last visit, which found `changed`. */
export function observe(
  e: ChangeEvidence,
  intervalMs: number,
  changed: boolean,
  decay: number = EVIDENCE_DECAY,
): ChangeEvidence {
  const interval = Math.max(0, intervalMs);
  return {
    visits: e.visits * decay + 1,
    changes: e.changes * decay + (changed ? 1 : 0),
    exposureMs: e.exposureMs * decay + interval,
  };
}

/**
 * `prior` scaled to weigh `weight` observations, added to `e`: how a new URL starts from its
 * site's evidence and a known one is pulled toward it while its own evidence is thin.
 */
export function withPrior(e: ChangeEvidence, prior: ChangeEvidence | undefined, weight = 1): ChangeEvidence {
  if (prior === undefined || prior.visits <= 0 || weight <= 0) return e;
  const k = weight / prior.visits;
  return {
    visits: e.visits + weight,
    changes: e.changes + prior.changes * k,
    exposureMs: e.exposureMs + prior.exposureMs * k,
  };
}

/**
 * Changes per ms the evidence supports; 0 when no observation found a change; undefined when
 * there is no evidence (no observation, or no time observed).
 */
export function changeRate(e: ChangeEvidence): number | undefined {
  if (e.visits <= 0 || e.exposureMs <= 0) return undefined;
  if (e.changes <= 0) return 0;
  const changes = Math.min(e.changes, e.visits);
  const meanInterval = e.exposureMs / e.visits;
  return -Math.log((e.visits - changes + 0.5) / (e.visits + 0.5)) / meanInterval;
}

/**
 * Evidence worth `visits` observations that estimates exactly `ratePerMs` (> 0): what a feed's
 * item dates say directly, put in the form its polls add to.
 */
export function evidenceOfRate(ratePerMs: number, visits = 4): ChangeEvidence {
  // −ln((n − X + 0.5) / (n + 0.5)) = 1 at a mean interval of 1 / rate
  const changes = (visits + 0.5) * (1 - Math.exp(-1));
  return { visits, changes, exposureMs: visits / ratePerMs };
}

/**
 * Items per ms a feed publishes, from its items' dates (epoch ms) as read at `now`: the newest
 * `window` dates at or before `now`, k of them, over the time from the oldest of them to `now`
 * (so a feed gone quiet reads slow); undefined with fewer than two dates.
 */
export function publishingRate(dates: readonly number[], now: number, window = 10): number | undefined {
  const recent = [...new Set(dates.filter((d) => d <= now))].sort((a, b) => b - a).slice(0, window);
  if (recent.length < 2) return undefined;
  const span = now - recent.at(-1)!;
  return span > 0 ? (recent.length - 1) / span : undefined;
}
