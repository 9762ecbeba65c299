/**
 * In-process counters and gauges, labelled. Shared by all tasks of an engine; the CLI reads them
 * for progress lines. Counters only grow within a process lifetime.
 */
export class Metrics {
  private readonly counters = new Map<string, number>();
  private readonly gauges = new Map<string, Map<string, number>>();

  inc(name: string, by = 1, label?: string): void {
    const key = label === undefined ? name : `${name}{${label}}`;
    this.counters.set(key, (this.counters.get(key) ?? 0) + by);
  }

  counter(name: string, label?: string): number {
    return this.counters.get(label === undefined ? name : `${name}{${label}}`) ?? 0;
  }

  /** Sets a gauge owned by `owner` (a task id); the gauge's value is the sum over owners. */
  setGauge(name: string, owner: string, value: number): void {
    let byOwner = this.gauges.get(name);
    if (!byOwner) this.gauges.set(name, (byOwner = new Map()));
    byOwner.set(owner, value);
  }

  gauge(name: string): number {
    let sum = 0;
    for (const v of this.gauges.get(name)?.values() ?? []) sum += v;
    return sum;
  }

  /** Counters whose name starts with `prefix`, with their labels. */
  countersWithPrefix(prefix: string): [string, number][] {
    return [...this.counters].filter(([k]) => k.startsWith(prefix)).sort();
  }
}
