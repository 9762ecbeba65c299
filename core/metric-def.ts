/** What a metric of the catalogue (metric-catalogue.ts) is, and the helpers its parts declare metrics with. */

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface MetricDef {
  readonly type: MetricType;
  /** The exported name, without `_total` (added for counters). */
  readonly name: string;
  readonly help: string;
  /** Base unit, when the value has one (`seconds`, `bytes`). */
  readonly unit?: 'seconds' | 'bytes' | 'ratio';
  /** Label names; a call site passes their values joined by `,` in this order. */
  readonly labels: readonly string[];
  /** Histogram bucket upper bounds, in the metric's unit. */
  readonly buckets?: readonly number[];
  /**
   * A reading of the process's own (a clock), which may be negative: the dashboard graphs it per
   * instance, never summed over them, and with no floor at 0.
   */
  readonly perProcess?: true;
  /** Where it belongs on the dashboard. */
  readonly panel: 'crawl' | 'politeness' | 'frontier' | 'seen-set' | 'parser' | 'runtime';
}

export const counter = (
  name: string,
  help: string,
  labels: string[],
  panel: MetricDef['panel'],
  unit?: MetricDef['unit'],
) => ({ type: 'counter', name, help, labels, panel, ...(unit ? { unit } : {}) }) as const satisfies MetricDef;
export const gauge = (name: string, help: string, panel: MetricDef['panel'], unit?: MetricDef['unit']) =>
  ({
    type: 'gauge',
    name,
    help,
    labels: [] as string[],
    panel,
    ...(unit ? { unit } : {}),
  }) as const satisfies MetricDef;
export const histogram = (name: string, help: string, labels: string[], buckets: number[], panel: MetricDef['panel']) =>
  ({ type: 'histogram', name, help, labels, buckets, panel, unit: 'seconds' }) as const satisfies MetricDef;

export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** DURATION_BUCKETS with bounds at the Kafka engine's default commit interval (0.2 s) and halfway to it, so a p99 can be told from it. */
export const COMMIT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.5, 1, 2.5, 5, 10, 30];
