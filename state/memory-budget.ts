import { InvalidOptionError } from '../core/errors.js';
import { M } from '../core/metric-catalogue.js';
import type { Metrics } from '../core/metrics.js';

/**
 * The share of a budget kept for what no claim counts: the JavaScript heap, records and pages in
 * flight, queued URLs, each task's RocksDB memtables and block cache, other roles in the same
 * process, the allocator's own overhead. An assumption, not a measurement: bench/frontier.ts's
 * one partition holding 10–17 M queued URLs had ~1 GiB outside the claims and its cache both at
 * 10 M and at 400 M fingerprints (docs/BENCHMARKS.md, "A memory plan a process"), half of a 2 GiB
 * budget; a budget for such a partition must be sized for it, not left to this share.
 */
export const MEMORY_RESERVE_SHARE = 0.25;

/** A part of the plan, as `MemoryBudget.report` gives it. */
export interface MemoryPart {
  readonly what: string;
  readonly bytes: number;
}

/** What a budget holds now, in bytes. */
export interface MemoryReport {
  /** The budget; 0: none (every cache gets what it wants). */
  readonly total: number;
  /** Kept for what no claim counts (`MEMORY_RESERVE_SHARE` of the total). */
  readonly reserve: number;
  /** Fixed claims, summed by `what`. */
  readonly claims: readonly MemoryPart[];
  readonly claimed: number;
  /** Caches: what they asked for and what they were granted, summed by `what`. */
  readonly wanted: readonly MemoryPart[];
  readonly granted: readonly MemoryPart[];
  /** Bytes by which the claims and the reserve pass the total (0: within it). */
  readonly over: number;
}

/** RAM a part of the process must hold whatever the budget (a Bloom filter, unmerged fingerprints). */
export interface MemoryClaim {
  /** The claim is now `bytes`; the caches' grants follow. */
  update(bytes: number): void;
  /** Gives the claim back (its owner closed). Idempotent. */
  release(): void;
}

/** A cache's place in the budget: `apply` is called with its grant whenever that changes. */
export interface MemoryShare {
  readonly granted: number;
  /** Leaves the budget (the cache closed); the others' grants grow back. Idempotent. */
  release(): void;
}

interface Claim {
  readonly what: string;
  bytes: number;
}

interface Share {
  readonly what: string;
  readonly wanted: number;
  granted: number;
  readonly apply: (granted: number) => void;
}

/**
 * One process's plan for its RAM, shared by every task it runs (`ProcessorContext.inProcess`), so a
 * process that takes over a second set of tasks (a failover) plans them inside the same total
 * instead of adding their caches to it.
 *
 * Two kinds of parts: **claims**, state that must stay in RAM whatever the budget (a seen-set's
 * Bloom filter and unmerged fingerprints), counted as they are; and **shares**, caches that work at
 * any size (0 included) and ask for a size (`--seen-block-cache`). The caches are granted what the
 * total leaves after the claims and the reserve: all they ask when it suffices, else each the same
 * fraction of what it asked. A budget the claims alone pass grants the caches nothing and says so
 * (`onOver`, once each time it passes); it never refuses a claim: the state it counts is the crawl's.
 * With no budget (total 0) every cache gets what it asks and the parts are only counted.
 *
 * Not thread-safe; `apply` and `onOver` run inside the call that changed the plan.
 */
export class MemoryBudget {
  private readonly claims = new Set<Claim>();
  private readonly shares = new Set<Share>();
  private wasOver = false;

  /**
   * `total`: whole bytes, 0 for none. `onOver` is told, with the report, when the claims and the
   * reserve come to pass the total (again after they had fallen back within it).
   */
  constructor(
    readonly total: number,
    private readonly onOver?: (report: MemoryReport) => void,
  ) {
    if (!Number.isSafeInteger(total) || total < 0)
      throw new InvalidOptionError(`memory budget must be whole bytes (0: none), got ${total}`);
  }

  /** Kept for what no claim counts. */
  get reserve(): number {
    return Math.floor(this.total * MEMORY_RESERVE_SHARE);
  }

  /** Counts `bytes` (updated by the returned claim) of RAM that `what` must hold. */
  claim(what: string, bytes = 0): MemoryClaim {
    const c: Claim = { what, bytes: checked(what, bytes) };
    this.claims.add(c);
    this.plan();
    return {
      update: (b) => {
        const next = checked(what, b);
        if (next === c.bytes || !this.claims.has(c)) return;
        c.bytes = next;
        this.plan();
      },
      release: () => {
        if (this.claims.delete(c)) this.plan();
      },
    };
  }

  /**
   * Plans a cache of `wanted` bytes at most; `apply(granted)` is called now and whenever its grant
   * changes (a claim grew, another cache came or went).
   */
  share(what: string, wanted: number, apply: (granted: number) => void): MemoryShare {
    const s: Share = { what, wanted: checked(what, wanted), granted: -1, apply };
    this.shares.add(s);
    this.plan();
    return {
      get granted() {
        return Math.max(0, s.granted);
      },
      release: () => {
        if (this.shares.delete(s)) this.plan();
      },
    };
  }

  report(): MemoryReport {
    const claimed = sum(this.claims);
    return {
      total: this.total,
      reserve: this.reserve,
      claims: bySum([...this.claims].map((c) => ({ what: c.what, bytes: c.bytes }))),
      claimed,
      wanted: bySum([...this.shares].map((s) => ({ what: s.what, bytes: s.wanted }))),
      granted: bySum([...this.shares].map((s) => ({ what: s.what, bytes: Math.max(0, s.granted) }))),
      over: this.overBytes(claimed),
    };
  }

  /** Publishes the report as `memory_budget_bytes{part}`: total, reserve, claimed, wanted, granted, over. */
  reportMetrics(metrics: Metrics): void {
    const r = this.report();
    const total = (parts: readonly MemoryPart[]) => parts.reduce((n, p) => n + p.bytes, 0);
    const g = (part: string, v: number) => metrics.setGauge(M.memoryBudgetBytes, 'process', v, part);
    g('total', r.total);
    g('reserve', r.reserve);
    g('claimed', r.claimed);
    g('wanted', total(r.wanted));
    g('granted', total(r.granted));
    g('over', r.over);
  }

  private plan(): void {
    const wanted = [...this.shares].reduce((n, s) => n + s.wanted, 0);
    const left = this.total === 0 ? wanted : Math.max(0, this.total - this.reserve - sum(this.claims));
    const fraction = wanted <= left ? 1 : left / wanted;
    for (const s of this.shares) {
      const granted = Math.floor(s.wanted * fraction);
      if (granted === s.granted) continue;
      s.granted = granted;
      s.apply(granted);
    }
    const over = this.overBytes(sum(this.claims)) > 0;
    if (over && !this.wasOver) this.onOver?.(this.report());
    this.wasOver = over;
  }

  /** Bytes by which `claimed` and the reserve pass the total (0 with no budget). */
  private overBytes(claimed: number): number {
    return this.total === 0 ? 0 : Math.max(0, claimed + this.reserve - this.total);
  }
}

/** One line for an operator: the budget, what passes it and by how much, each claim. */
export function describeOver(r: MemoryReport): string {
  const mib = (b: number) => `${Math.round(b / 2 ** 20)} MiB`;
  const claims = r.claims.map((c) => `${c.what} ${mib(c.bytes)}`).join(', ');
  return (
    `memory budget ${mib(r.total)} is passed by ${mib(r.over)}: its fixed parts (${claims}) and the ` +
    `${mib(r.reserve)} kept for the rest leave the caches nothing; raise --memory-budget (or the memory ` +
    `limit) or hold fewer partitions here`
  );
}

function checked(what: string, bytes: number): number {
  if (!Number.isSafeInteger(bytes) || bytes < 0)
    throw new InvalidOptionError(`memory for ${what} must be whole bytes, got ${bytes}`);
  return bytes;
}

function sum(claims: Iterable<Claim>): number {
  let n = 0;
  for (const c of claims) n += c.bytes;
  return n;
}

/** Parts summed by `what`, in first-seen order. */
function bySum(parts: readonly MemoryPart[]): MemoryPart[] {
  const out = new Map<string, number>();
  for (const p of parts) out.set(p.what, (out.get(p.what) ?? 0) + p.bytes);
  return [...out].map(([what, bytes]) => ({ what, bytes }));
}
