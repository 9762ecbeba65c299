import { InvalidOptionError } from '../core/errors.js';
import { METRICS, type MetricDef, type MetricId } from '../core/metric-catalogue.js';

export const DASHBOARD_USAGE = `usage: crawlstream dashboard

  prints the Grafana dashboard built from the metric catalogue (core/metric-catalogue.ts):
  an overview row (throughput, errors, politeness, lag, commit latency, restore), then one row
  per catalogue panel with one graph per metric. Its data source is the import input
  \${DS_PROMETHEUS}. Regenerate the committed copy with
  'crawlstream dashboard > deploy/grafana-dashboard.json'`;

/** The rows of the dashboard, in order; a new catalogue panel fails to compile until it has a title here. */
const ROWS: Record<MetricDef['panel'], string> = {
  crawl: 'Crawl',
  politeness: 'Politeness',
  frontier: 'Frontier',
  'seen-set': 'Seen-set',
  parser: 'Parser',
  runtime: 'Stream runtime',
};

const DATASOURCE = { type: 'prometheus', uid: '${DS_PROMETHEUS}' } as const;
const RATE_WINDOW = '5m';
const WIDTH = 8; // three graphs a line on Grafana's 24-column grid
const HEIGHT = 8;

interface Target {
  readonly expr: string;
  readonly legend: string;
}

interface Graph {
  readonly title: string;
  readonly description: string;
  readonly unit: string;
  readonly targets: readonly Target[];
  /** May be below 0: no floor on the axis. */
  readonly signed?: boolean;
}

/** The ids of the catalogue's metrics of one type. */
type IdOf<T extends MetricDef['type']> = {
  [K in MetricId]: (typeof METRICS)[K]['type'] extends T ? K : never;
}[MetricId];

/**
 * A counter's per-second rate, by its labels unless told otherwise:
 * `sum by (labels) (rate(name_total[5m]))`, or `sum(rate(name_total[5m]))` by none.
 */
export function counterRate(id: IdOf<'counter'>, by: readonly string[] = METRICS[id].labels): string {
  const rate = `rate(${METRICS[id].name}_total[${RATE_WINDOW}])`;
  return by.length > 0 ? `sum by (${by.join(', ')}) (${rate})` : `sum(${rate})`;
}

/** `sum(name)`: a gauge summed over tasks and instances. */
export function gaugeSum(id: IdOf<'gauge'>): string {
  return `sum(${METRICS[id].name})`;
}

/** The q-quantile of a histogram over all instances and labels. */
export function histogramQuantile(id: IdOf<'histogram'>, q: number): string {
  return `histogram_quantile(${q}, sum by (le) (rate(${METRICS[id].name}_bucket[${RATE_WINDOW}])))`;
}

/** Grafana's unit for what the panel plots: a counter's rate, a gauge's value, a histogram's quantiles. */
function unitOf(m: MetricDef): string {
  if (m.type === 'histogram') return 's';
  if (m.type === 'counter') {
    if (m.unit === 'bytes') return 'Bps';
    if (m.unit === 'seconds') return 'suffix:s/s';
    return 'ops';
  }
  if (m.unit === 'bytes') return 'bytes';
  if (m.unit === 'seconds') return 's';
  if (m.unit === 'ratio') return 'percentunit';
  return 'short';
}

/** One graph for one catalogue metric, titled with its help text. */
function metricGraph(id: MetricId): Graph {
  const m: MetricDef = METRICS[id];
  const legend = m.labels.length > 0 ? m.labels.map((l) => `{{${l}}}`).join(' ') : id;
  const targets: Target[] =
    m.type === 'counter'
      ? [{ expr: counterRate(id as IdOf<'counter'>), legend }]
      : m.perProcess
        ? [{ expr: m.name, legend: '{{instance}}' }]
        : m.type === 'gauge'
          ? [{ expr: gaugeSum(id as IdOf<'gauge'>), legend: id }]
          : [
              { expr: histogramQuantile(id as IdOf<'histogram'>, 0.5), legend: 'p50' },
              { expr: histogramQuantile(id as IdOf<'histogram'>, 0.99), legend: 'p99' },
            ];
  const exported = m.type === 'counter' ? `${m.name}_total` : m.name;
  const labels = m.labels.length > 0 ? ` by ${m.labels.join(', ')}` : '';
  const graph = { title: m.help, description: `${exported} (${m.type}${labels})`, unit: unitOf(m), targets };
  return m.perProcess ? { ...graph, signed: true } : graph;
}

/** The first row: what an operator looks at first, each graph built from catalogue ids. */
function overview(): Graph[] {
  return [
    {
      title: 'Throughput',
      description: 'Pages fetched, page records published and new URLs admitted, per second.',
      unit: 'ops',
      targets: [
        { expr: counterRate('pages_fetched'), legend: 'pages fetched' },
        { expr: counterRate('page_records'), legend: 'page records' },
        { expr: counterRate('urls_admitted'), legend: 'URLs admitted' },
      ],
    },
    {
      title: 'Errors',
      description: 'Final fetch failures, undecodable pages, dead letters and aborted commits, per second.',
      unit: 'ops',
      targets: [
        { expr: counterRate('fetch_errors', []), legend: 'fetch failures' },
        { expr: counterRate('parser_errors', []), legend: 'parser errors' },
        { expr: counterRate('dead_letters', []), legend: 'dead letters' },
        { expr: counterRate('commits_aborted'), legend: 'commits aborted' },
      ],
    },
    {
      title: 'Politeness',
      description:
        'Mean gap required between fetches to a host, per lease issued; how long the most overdue waiting host has been due (fetch capacity short of the polite rate).',
      unit: 's',
      targets: [
        {
          expr: `${counterRate('politeness_delay')} / ${counterRate('leases_issued', [])}`,
          legend: 'mean gap per lease',
        },
        { expr: `max(${METRICS.frontier_oldest_due_age.name})`, legend: 'most overdue host' },
      ],
    },
    {
      title: 'Consumer lag',
      description: 'Records not yet consumed over the assigned partitions, by role.',
      unit: 'short',
      targets: [{ expr: `sum by (component) (${METRICS.consumer_lag.name})`, legend: '{{component}}' }],
    },
    {
      title: 'Commit latency',
      description: 'Time one commit (outputs, state and positions together) takes.',
      unit: 's',
      targets: [
        { expr: histogramQuantile('commit_duration', 0.5), legend: 'p50' },
        { expr: histogramQuantile('commit_duration', 0.99), legend: 'p99' },
      ],
    },
    {
      title: 'Restore',
      description: 'Tasks restoring their stores, by role, and changelog records restored per second.',
      unit: 'short',
      targets: [
        { expr: `sum by (component) (${METRICS.tasks_restoring.name})`, legend: 'tasks restoring: {{component}}' },
        { expr: counterRate('restore_records', []), legend: 'records restored/s' },
      ],
    },
  ];
}

/** The dashboard as Grafana's JSON model (importable: the data source is the input DS_PROMETHEUS). */
export function grafanaDashboard(): Record<string, unknown> {
  const sections: { title: string; graphs: Graph[] }[] = [{ title: 'Overview', graphs: overview() }];
  for (const [panel, title] of Object.entries(ROWS)) {
    const ids = (Object.keys(METRICS) as MetricId[]).filter((id) => METRICS[id].panel === panel);
    sections.push({ title, graphs: ids.map(metricGraph) });
  }
  const panels: Record<string, unknown>[] = [];
  let id = 1;
  let y = 0;
  for (const section of sections) {
    panels.push({
      type: 'row',
      id: id++,
      title: section.title,
      collapsed: false,
      gridPos: { h: 1, w: 24, x: 0, y },
      panels: [],
    });
    y += 1;
    section.graphs.forEach((g, i) => {
      panels.push({
        type: 'timeseries',
        id: id++,
        title: g.title,
        description: g.description,
        datasource: DATASOURCE,
        gridPos: { h: HEIGHT, w: WIDTH, x: (i % 3) * WIDTH, y: y + Math.floor(i / 3) * HEIGHT },
        fieldConfig: { defaults: { unit: g.unit, ...(g.signed ? {} : { min: 0 }) }, overrides: [] },
        options: {
          legend: { displayMode: 'list', placement: 'bottom', showLegend: true },
          tooltip: { mode: 'multi', sort: 'desc' },
        },
        targets: g.targets.map((t, k) => ({
          datasource: DATASOURCE,
          expr: t.expr,
          legendFormat: t.legend,
          refId: String.fromCharCode(65 + k),
        })),
      });
    });
    y += Math.ceil(section.graphs.length / 3) * HEIGHT;
  }
  return {
    __inputs: [
      {
        name: 'DS_PROMETHEUS',
        label: 'Prometheus',
        description: 'The Prometheus that scrapes the crawlstream PodMonitor',
        type: 'datasource',
        pluginId: 'prometheus',
        pluginName: 'Prometheus',
      },
    ],
    __requires: [
      { type: 'grafana', id: 'grafana', name: 'Grafana', version: '10.0.0' },
      { type: 'datasource', id: 'prometheus', name: 'Prometheus', version: '1.0.0' },
      { type: 'panel', id: 'timeseries', name: 'Time series', version: '' },
    ],
    title: 'crawlstream',
    uid: 'crawlstream',
    description: 'Generated by `crawlstream dashboard` from core/metric-catalogue.ts; do not edit by hand.',
    tags: ['crawlstream'],
    editable: true,
    graphTooltip: 1,
    refresh: '30s',
    schemaVersion: 39,
    version: 1,
    time: { from: 'now-6h', to: 'now' },
    timepicker: {},
    timezone: 'utc',
    annotations: { list: [] },
    templating: {
      // provisioned without an import (a ConfigMap sidecar), ${DS_PROMETHEUS} resolves to this variable
      list: [
        {
          name: 'DS_PROMETHEUS',
          label: 'Data source',
          type: 'datasource',
          query: 'prometheus',
          current: {},
          hide: 0,
          refresh: 1,
          regex: '',
          options: [],
        },
      ],
    },
    panels,
  };
}

/** The dashboard JSON exactly as committed in deploy/grafana-dashboard.json (less the final newline). */
export function dashboardJson(): string {
  return JSON.stringify(grafanaDashboard(), null, 2);
}

/** `crawlstream dashboard`: prints the dashboard JSON. */
export function runDashboard(args: readonly string[], out: (line: string) => void): number {
  if (args.length > 0)
    throw new InvalidOptionError(`dashboard takes no arguments, got ${JSON.stringify(args[0])}\n${DASHBOARD_USAGE}`);
  out(dashboardJson());
  return 0;
}
