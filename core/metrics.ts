import { METRICS, type MetricId } from './metric-catalogue.js';

/** A histogram's state: counts per bucket of its catalogue bounds (the last is +Inf), sum and count. */
export interface HistogramState {
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * In-process counters, gauges and histograms of the metrics in the catalogue
 * (core/metric-catalogue.ts), labelled. Shared by all tasks of an engine; the CLI reads them for
 * progress lines and core/prometheus.ts exports them. Counters only grow within a process
 * lifetime. `label` is the catalogue's label values joined by `,`; a metric without labels takes none.
 * Cheap enough for hot paths: one map update per call.
 */
export class Metrics {
  private readonly counters = new Map<string, number>();
  private readonly gauges = new Map<MetricId, Map<string, number>>();
  private readonly histograms = new Map<string, HistogramState>();

  inc(name: MetricId, by = 1, label?: string): void {
    const key = label === undefined ? name : `${name}{${label}}`;
    this.counters.set(key, (this.counters.get(key) ?? 0) + by);
  }

  counter(name: MetricId, label?: string): number {
    return this.counters.get(label === undefined ? name : `${name}{${label}}`) ?? 0;
  }

  /**
   * Sets a gauge owned by `owner` (a task id); the gauge's value is the sum over owners, per
   * label values when the catalogue gives it labels.
   */
  setGauge(name: MetricId, owner: string, value: number, label?: string): void {
    let byOwner = this.gauges.get(name);
    if (!byOwner) this.gauges.set(name, (byOwner = new Map()));
    byOwner.set(label === undefined ? owner : `${label}\u0001${owner}`, value);
  }

  /** A gauge's sums by label values (`''` for a gauge without labels). */
  gaugesOf(name: MetricId): [string, number][] {
    const sums = new Map<string, number>();
    for (const [key, v] of this.gauges.get(name) ?? []) {
      const cut = key.indexOf('\u0001');
      const label = cut < 0 ? '' : key.slice(0, cut);
      sums.set(label, (sums.get(label) ?? 0) + v);
    }
    return [...sums];
  }

  /** Forgets an owner's gauges (its task closed). */
  dropGauges(owner: string): void {
    for (const byOwner of this.gauges.values()) byOwner.delete(owner);
  }

  gauge(name: MetricId): number {
    let sum = 0;
    for (const v of this.gauges.get(name)?.values() ?? []) sum += v;
    return sum;
  }

  /** Records one observation of a histogram in the catalogue (in its unit: seconds). */
  observe(name: MetricId, value: number, label?: string): void {
    const key = label === undefined ? name : `${name}{${label}}`;
    const buckets = (METRICS[name] as { buckets?: readonly number[] }).buckets ?? [];
    let h = this.histograms.get(key);
    if (!h) this.histograms.set(key, (h = { counts: new Array<number>(buckets.length + 1).fill(0), sum: 0, count: 0 }));
    let i = 0;
    while (i < buckets.length && value > buckets[i]!) i++;
    h.counts[i]!++;
    h.sum += value;
    h.count++;
  }

  /** A counter summed over all its label values. */
  total(name: MetricId): number {
    let sum = 0;
    for (const [, v] of this.countersOf(name)) sum += v;
    return sum;
  }

  /** Every counter of `name`, by label values (`''` when it has none). */
  countersOf(name: MetricId): [string, number][] {
    const out: [string, number][] = [];
    for (const [k, v] of this.counters) {
      if (k === name) out.push(['', v]);
      else if (k.startsWith(name) && k[name.length] === '{') out.push([k.slice(name.length + 1, -1), v]);
    }
    return out;
  }

  /** Every histogram of `name`, by label values. */
  histogramsOf(name: MetricId): [string, HistogramState][] {
    const out: [string, HistogramState][] = [];
    for (const [k, h] of this.histograms) {
      if (k === name) out.push(['', h]);
      else if (k.startsWith(name) && k[name.length] === '{') out.push([k.slice(name.length + 1, -1), h]);
    }
    return out;
  }
}
