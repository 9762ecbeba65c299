import client from 'prom-client';
import { METRICS, ZERO_SERIES, type MetricDef, type MetricId } from './metric-catalogue.js';
import type { Metrics } from './metrics.js';

/** One scrape's answer. */
export interface Exposition {
  readonly contentType: string;
  readonly body: string;
}

type Sample = { value: number; labels: Record<string, string | number>; metricName?: string };

/**
 * The only door to prom-client. Exports one process's `Metrics` (every metric of the catalogue)
 * and prom-client's default process metrics (CPU, heap, event-loop lag, GC) in the Prometheus
 * text format, or OpenMetrics when the scraper asks for it. Values are read at scrape time, so
 * hot paths only touch `Metrics`. One exporter per process.
 */
export class PrometheusExporter {
  private readonly registries = new Map<string, client.Registry>();

  /** `beforeScrape` refreshes gauges that are read, not pushed (task counts, disk bytes). */
  constructor(
    private readonly metrics: Metrics,
    private readonly beforeScrape: () => void = () => undefined,
  ) {}

  /** The exposition for an `Accept` header: OpenMetrics when it names it, else Prometheus text. */
  async scrape(accept: string | undefined): Promise<Exposition> {
    const open = accept !== undefined && accept.includes('application/openmetrics-text');
    this.beforeScrape();
    const registry = this.registry(
      open ? client.Registry.OPENMETRICS_CONTENT_TYPE : client.Registry.PROMETHEUS_CONTENT_TYPE,
    );
    return { contentType: registry.contentType, body: await registry.metrics() };
  }

  private registry(contentType: string): client.Registry {
    let registry = this.registries.get(contentType);
    if (registry) return registry;
    // the typings omit the constructor's content-type argument
    registry = new (client.Registry as unknown as new (contentType: string) => client.Registry)(contentType);
    const openMetrics = contentType === client.Registry.OPENMETRICS_CONTENT_TYPE;
    client.collectDefaultMetrics({ register: registry });
    for (const [id, def] of Object.entries(METRICS) as [MetricId, MetricDef][]) {
      registry.registerMetric(this.catalogueMetric(id, def, openMetrics) as unknown as client.Metric);
    }
    this.registries.set(contentType, registry);
    return registry;
  }

  /** A metric object in prom-client's shape whose values are read from `Metrics` when scraped. */
  private catalogueMetric(id: MetricId, def: MetricDef, openMetrics: boolean): object {
    const metrics = this.metrics;
    // OpenMetrics names a counter family without `_total` and its samples with it (prom-client adds it)
    const name = def.type === 'counter' && !openMetrics ? `${def.name}_total` : def.name;
    const labelsOf = (joined: string): Record<string, string> => {
      if (def.labels.length === 0) return {};
      const values = joined.split(',');
      return Object.fromEntries(def.labels.map((l, i) => [l, values[i] ?? '']));
    };
    return {
      name,
      help: def.help,
      type: def.type,
      aggregator: 'sum',
      reset: () => undefined,
      get: async () => {
        const values: Sample[] = [];
        if (def.type === 'counter') {
          const counted = metrics.countersOf(id);
          for (const [labels, value] of counted) values.push({ value, labels: labelsOf(labels) });
          // a counter without labels exists from the start: 0 until its first increment
          if (values.length === 0 && def.labels.length === 0) values.push({ value: 0, labels: {} });
          // and so do the catalogue's zero series of a labelled one
          const seen = new Set(counted.map(([labels]) => labels));
          for (const labels of ZERO_SERIES[id] ?? [])
            if (!seen.has(labels)) values.push({ value: 0, labels: labelsOf(labels) });
        } else if (def.type === 'gauge') {
          const sums = metrics.gaugesOf(id);
          if (def.labels.length === 0) values.push({ value: metrics.gauge(id), labels: {} });
          else for (const [labels, value] of sums) values.push({ value, labels: labelsOf(labels) });
        } else {
          const bounds = def.buckets ?? [];
          for (const [joined, h] of metrics.histogramsOf(id)) {
            const labels = labelsOf(joined);
            let cumulative = 0;
            for (let i = 0; i <= bounds.length; i++) {
              cumulative += h.counts[i]!;
              const le = i < bounds.length ? bounds[i]! : '+Inf';
              values.push({ value: cumulative, labels: { ...labels, le }, metricName: `${name}_bucket` });
            }
            values.push({ value: h.sum, labels, metricName: `${name}_sum` });
            values.push({ value: h.count, labels, metricName: `${name}_count` });
          }
        }
        return { name, help: def.help, type: def.type, aggregator: 'sum', values };
      },
    };
  }
}
