/**
 * The simulation engine of bench/recrawl-policy.ts (the design is described there): a population
 * of URLs with their own change processes, a min-heap of due visits over typed arrays, per-site
 * revisit slots, and the staleness bookkeeping. The interval after each visit comes from a
 * `Chooser`: the shipped RefetchPlanner (bench/recrawl-policy.ts wraps it) or a fixed interval.
 */

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** Change classes of the population. */
export const NEVER = 0;
export const SLOW = 1;
export const DAILY = 2;
export const FAST = 3;
export const BURSTY = 4;
export const CLASSES = 5;
export const CLASS_NAMES = [
  'never changes',
  'slow (every 2–30 d)',
  'hourly–daily (every 1 h–1 d)',
  'very fast (every 2–30 min)',
  'bursty (bursts ~1 d, every 15 min–3 h; quiet ~10 d)',
];

/**
 * Site types: the share of sites of each type, and each type's class mix (never, slow, daily,
 * fast, bursty). Overall about 60 % never, 21 % slow, 9.5 % hourly–daily, 2 % very fast, 7 % bursty.
 */
const SITE_TYPES: readonly { share: number; mix: readonly number[] }[] = [
  { share: 0.4, mix: [0.8, 0.15, 0.03, 0.005, 0.015] }, // static
  { share: 0.45, mix: [0.55, 0.25, 0.1, 0.02, 0.08] }, // mixed
  { share: 0.15, mix: [0.25, 0.25, 0.25, 0.07, 0.18] }, // news
];

/** xoshiro128**: a small, fast, seeded generator (doubles in [0, 1)). */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    // splitmix32 to fill the state
    let s = seed >>> 0;
    const next = () => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
  }

  next(): number {
    const result = Math.imul(rotl(Math.imul(this.b, 5), 7), 9) >>> 0;
    const t = this.b << 9;
    this.c ^= this.a;
    this.d ^= this.b;
    this.b ^= this.c;
    this.a ^= this.d;
    this.c ^= t;
    this.d = rotl(this.d, 11);
    return result / 4294967296;
  }

  /** An exponential variate of `rate` per ms; Infinity for rate 0. */
  exp(rate: number): number {
    return rate > 0 ? -Math.log1p(-this.next()) / rate : Infinity;
  }

  /** Log-uniform in [lo, hi]. */
  logUniform(lo: number, hi: number): number {
    return lo * Math.pow(hi / lo, this.next());
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** The URLs and their change processes: a two-state Markov-modulated Poisson process each. */
export interface Population {
  readonly n: number;
  readonly sites: number;
  readonly site: Int32Array;
  readonly cls: Uint8Array;
  /** Change rate (per ms) in state 0 (the only state of a non-bursty URL) and state 1 (a burst). */
  readonly rate0: Float64Array;
  readonly rate1: Float64Array;
  /** Mean stay (ms) in state 0 and 1; 0: the URL never leaves state 0. */
  readonly stay0: Float64Array;
  readonly stay1: Float64Array;
  readonly classCount: Float64Array;
}

/** `n` URLs over `n / pagesPerSite` sites (uniform sizes; a site's pages are contiguous). */
export function makePopulation(n: number, pagesPerSite: number, seed: number): Population {
  const rng = new Rng(seed);
  const sites = Math.ceil(n / pagesPerSite);
  const p: Population = {
    n,
    sites,
    site: new Int32Array(n),
    cls: new Uint8Array(n),
    rate0: new Float64Array(n),
    rate1: new Float64Array(n),
    stay0: new Float64Array(n),
    stay1: new Float64Array(n),
    classCount: new Float64Array(CLASSES),
  };
  let mix = SITE_TYPES[0]!.mix;
  for (let u = 0; u < n; u++) {
    const s = Math.floor(u / pagesPerSite);
    if (u % pagesPerSite === 0) mix = pick(SITE_TYPES, rng.next()).mix;
    p.site[u] = s;
    let x = rng.next();
    let c = 0;
    while (c < CLASSES - 1 && x >= mix[c]!) x -= mix[c++]!;
    p.cls[u] = c;
    p.classCount[c]!++;
    switch (c) {
      case SLOW:
        p.rate0[u] = 1 / rng.logUniform(2 * DAY, 30 * DAY);
        break;
      case DAILY:
        p.rate0[u] = 1 / rng.logUniform(HOUR, DAY);
        break;
      case FAST:
        p.rate0[u] = 1 / rng.logUniform(2 * 60_000, 30 * 60_000);
        break;
      case BURSTY:
        p.rate0[u] = 1 / (60 * DAY);
        p.rate1[u] = 1 / rng.logUniform(15 * 60_000, 3 * HOUR);
        p.stay0[u] = 10 * DAY;
        p.stay1[u] = DAY;
        break;
    }
  }
  return p;
}

/** A URL's long-run change rate (per ms): a bursty URL's rate averaged over its two states. */
export function meanRate(pop: Population, u: number): number {
  const s0 = pop.stay0[u]!;
  if (!(s0 > 0)) return pop.rate0[u]!;
  const s1 = pop.stay1[u]!;
  return (pop.rate0[u]! * s0 + pop.rate1[u]! * s1) / (s0 + s1);
}

function pick<T extends { share: number }>(xs: readonly T[], x: number): T {
  for (const t of xs) {
    if (x < t.share) return t;
    x -= t.share;
  }
  return xs[xs.length - 1]!;
}

/** Min-heap of (time, URL) over typed arrays; each URL is in it at most once. */
class DueHeap {
  private readonly keys: Float64Array;
  private readonly vals: Int32Array;
  size = 0;

  constructor(capacity: number) {
    this.keys = new Float64Array(capacity);
    this.vals = new Int32Array(capacity);
  }

  get topKey(): number {
    return this.keys[0]!;
  }

  get topVal(): number {
    return this.vals[0]!;
  }

  push(key: number, val: number): void {
    const keys = this.keys;
    const vals = this.vals;
    let i = this.size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pk = keys[parent]!;
      if (pk <= key) break;
      keys[i] = pk;
      vals[i] = vals[parent]!;
      i = parent;
    }
    keys[i] = key;
    vals[i] = val;
  }

  pop(): void {
    const keys = this.keys;
    const vals = this.vals;
    const n = --this.size;
    if (n === 0) return;
    const key = keys[n]!;
    const val = vals[n]!;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && keys[child + 1]! < keys[child]!) child++;
      if (keys[child]! >= key) break;
      keys[i] = keys[child]!;
      vals[i] = vals[child]!;
      i = child;
    }
    keys[i] = key;
    vals[i] = val;
  }
}

/** What a chooser reads and writes of a URL's history (the fields of UrlHistory the planner uses). */
export interface Histories {
  readonly lastFetch: Float64Array;
  readonly intervalMs: Float64Array;
  readonly rateVisits: Float64Array;
  readonly rateChanges: Float64Array;
  readonly rateExposureMs: Float64Array;
  readonly rateBucket: Int32Array;
}

/**
 * The next interval (ms) of URL `u` after a visit at `t` that found `changed` (`first`: its first
 * visit). May update the URL's rate fields in `h` (not lastFetch or intervalMs: the engine does).
 */
export type Chooser = (u: number, t: number, changed: boolean, first: boolean, h: Histories) => number;

export interface SimOptions {
  readonly days: number;
  /** Staleness is measured over [warmupDays, days]. */
  readonly warmupDays: number;
  /** First visits at uniform times in [0, firstSpreadDays), outside the revisit slots. */
  readonly firstSpreadDays: number;
  /** A site's revisit slots are this far apart (ms); 0: no slots (visits happen when due). */
  readonly slotGapMs: number;
  readonly minIntervalMs: number;
  readonly seed: number;
}

export interface SimResult {
  /** Revisits over the whole run and inside the measurement window. */
  readonly revisits: number;
  readonly windowRevisits: number;
  readonly windowRevisitsByClass: Float64Array;
  /** Time-averaged share of URLs stale over the window, overall and by class. */
  readonly staleness: number;
  readonly stalenessByClass: Float64Array;
  /** Time-averaged age (ms) of a URL's copy (0 while fresh; time since its first missed change). */
  readonly meanAgeMs: number;
  /** Mean and largest wait (ms) of a due revisit for its site's slot, over the window. */
  readonly meanWaitMs: number;
  readonly maxWaitMs: number;
  /** Mean interval (ms) each class was given at its last visit. */
  readonly finalIntervalByClass: Float64Array;
  readonly events: number;
  /** The URLs' histories at the end. */
  readonly histories: Histories;
}

/** Runs a population through `options.days` of visits, the interval of each chosen by `choose`. */
export function simulate(pop: Population, choose: Chooser, o: SimOptions): SimResult {
  const n = pop.n;
  const rng = new Rng(o.seed);
  const end = o.days * DAY;
  const w0 = o.warmupDays * DAY;
  const w1 = end;
  const h: Histories = {
    lastFetch: new Float64Array(n).fill(-1),
    intervalMs: new Float64Array(n),
    rateVisits: new Float64Array(n),
    rateChanges: new Float64Array(n),
    rateExposureMs: new Float64Array(n),
    rateBucket: new Int32Array(n).fill(-1),
  };
  // the change process: its state, its next switch, and the first change after the last visit
  const state = new Uint8Array(n);
  const nextSwitch = new Float64Array(n).fill(Infinity);
  const firstChange = new Float64Array(n).fill(Infinity);
  // a revisit that waits for its site's slot: reserved, and when it fell due
  const reserved = new Uint8Array(n);
  const dueAt = new Float64Array(n);
  const nextFree = new Float64Array(pop.sites);
  const heap = new DueHeap(n);
  for (let u = 0; u < n; u++) {
    const s0 = pop.stay0[u]!;
    if (s0 > 0) {
      const s1 = pop.stay1[u]!;
      state[u] = rng.next() < s1 / (s0 + s1) ? 1 : 0;
      nextSwitch[u] = rng.exp(1 / (state[u] === 1 ? s1 : s0));
    }
    heap.push(rng.next() * o.firstSpreadDays * DAY, u);
  }
  const rateOf = (u: number) => (state[u] === 1 ? pop.rate1[u]! : pop.rate0[u]!);
  // the switches of u's process up to t: a switch before the first change after the last visit
  // draws that change again at the new rate (the process is memoryless)
  const advance = (u: number, t: number) => {
    while (nextSwitch[u]! <= t) {
      const ts = nextSwitch[u]!;
      state[u] = state[u] === 1 ? 0 : 1;
      if (firstChange[u]! > ts) firstChange[u] = ts + rng.exp(rateOf(u));
      nextSwitch[u] = ts + rng.exp(1 / (state[u] === 1 ? pop.stay1[u]! : pop.stay0[u]!));
    }
  };
  const staleByClass = new Float64Array(CLASSES);
  let ageSum = 0;
  // the stale time and age of u's copy from its first missed change `tc` to `t`, inside the window
  const noteStale = (u: number, tc: number, t: number) => {
    const a = Math.max(tc, w0);
    const b = Math.min(t, w1);
    if (b <= a) return;
    staleByClass[pop.cls[u]!]! += b - a;
    ageSum += ((b - tc) ** 2 - (a - tc) ** 2) / 2;
  };
  let revisits = 0;
  let windowRevisits = 0;
  const windowRevisitsByClass = new Float64Array(CLASSES);
  let waitSum = 0;
  let waits = 0;
  let maxWait = 0;
  let events = 0;
  while (heap.size > 0) {
    const t = heap.topKey;
    if (t > end) break;
    const u = heap.topVal;
    heap.pop();
    events++;
    const first = h.lastFetch[u]! < 0;
    if (!first && o.slotGapMs > 0 && reserved[u] === 0) {
      // a due revisit takes its site's next free slot (FIFO by due time)
      const s = pop.site[u]!;
      const slot = Math.max(t, nextFree[s]!);
      nextFree[s] = slot + o.slotGapMs;
      if (slot > t) {
        reserved[u] = 1;
        dueAt[u] = t;
        heap.push(slot, u);
        continue;
      }
    }
    const wait = reserved[u] === 1 ? t - dueAt[u]! : 0;
    reserved[u] = 0;
    if (!first && t >= w0) {
      waitSum += wait;
      waits++;
      if (wait > maxWait) maxWait = wait;
    }
    advance(u, t);
    let changed = false;
    if (!first) {
      revisits++;
      if (t >= w0) {
        windowRevisits++;
        windowRevisitsByClass[pop.cls[u]!]!++;
      }
      const tc = firstChange[u]!;
      if (tc <= t) {
        changed = true;
        noteStale(u, tc, t);
      }
    }
    const interval = Math.round(choose(u, t, changed, first, h));
    h.lastFetch[u] = t;
    h.intervalMs[u] = interval;
    firstChange[u] = t + rng.exp(rateOf(u));
    heap.push(t + Math.max(o.minIntervalMs, interval), u);
  }
  // the copies stale at the end
  for (let u = 0; u < n; u++) {
    advance(u, end);
    if (h.lastFetch[u]! >= 0 && firstChange[u]! <= end) noteStale(u, firstChange[u]!, end);
  }
  const window = w1 - w0;
  const stalenessByClass = new Float64Array(CLASSES);
  let staleSum = 0;
  const finalIntervalByClass = new Float64Array(CLASSES);
  for (let c = 0; c < CLASSES; c++) {
    staleSum += staleByClass[c]!;
    stalenessByClass[c] = pop.classCount[c]! > 0 ? staleByClass[c]! / (pop.classCount[c]! * window) : 0;
  }
  for (let u = 0; u < n; u++) finalIntervalByClass[pop.cls[u]!]! += h.intervalMs[u]!;
  for (let c = 0; c < CLASSES; c++) finalIntervalByClass[c]! /= Math.max(1, pop.classCount[c]!);
  return {
    revisits,
    windowRevisits,
    windowRevisitsByClass,
    staleness: staleSum / (n * window),
    stalenessByClass,
    meanAgeMs: ageSum / (n * window),
    meanWaitMs: waits > 0 ? waitSum / waits : 0,
    maxWaitMs: maxWait,
    finalIntervalByClass,
    events,
    histories: h,
  };
}
