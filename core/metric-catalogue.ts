/**
 * Every metric crawlstream exports, declared once: the id call sites pass to `Metrics`, the
 * Prometheus name (`crawlstream_` prefix, base units, `_total` on counters), help, unit and label
 * names. No label ever holds a host, URL or other unbounded value. `Metrics` keeps the values;
 * core/prometheus.ts exports them; deploy/grafana-dashboard.json is built from this list.
 */
import type { CrawlErrorCode } from './errors.js';
import type { MetricDef } from './metric-def.js';
import { CRAWL_METRICS } from './metric-catalogue-crawl.js';
import { FRONTIER_METRICS } from './metric-catalogue-frontier.js';
import { RUNTIME_METRICS } from './metric-catalogue-runtime.js';

export type { MetricDef, MetricType } from './metric-def.js';

/**
 * The catalogue, keyed by the id call sites use (`metrics.inc(M.urlsDropped, n, reason)`), in the
 * dashboard's order: the crawl, the frontier, the stream runtime.
 */
export const METRICS = {
  ...CRAWL_METRICS,
  ...FRONTIER_METRICS,
  ...RUNTIME_METRICS,
} as const satisfies Record<string, MetricDef>;

export type MetricId = keyof typeof METRICS;

/** Network and body failures a fetch can end in (the fetch-outcome group of `CrawlErrorCode`). */
const FETCH_FAILURES: readonly CrawlErrorCode[] = [
  'CS_DNS',
  'CS_CONNECT',
  'CS_TLS',
  'CS_TIMEOUT',
  'CS_RESET',
  'CS_TOO_LARGE',
  'CS_BOMB',
  'CS_REFUSED_ADDRESS',
  'CS_BAD_URL',
];

/**
 * Label values (joined by `,` as call sites pass them) a labelled counter exports at 0 from the
 * start, before its first event: a counter without labels always exists, but one with labels had
 * no series until something incremented it, so a dashboard graph (and an alert on its rate) of a
 * healthy crawl, with no errors or dead letters yet, showed "no data" instead of 0. Each lists the
 * values an operator looks for; a value missing here still appears once it happens.
 */
export const ZERO_SERIES: { readonly [K in MetricId]?: readonly string[] } = {
  fetch_errors: FETCH_FAILURES,
  fetch_outcome_errors: FETCH_FAILURES,
  parser_errors: ['CS_PARSE'] satisfies CrawlErrorCode[],
  page_content_cut: ['text', 'outlinks', 'headers'],
  dead_letters: ['CS_CORRUPT_RECORD', 'CS_SCHEMA', 'CS_INTERNAL'] satisfies CrawlErrorCode[],
  feed_errors: [
    'CS_FEED_UNKNOWN',
    'CS_FEED_MALFORMED',
    'CS_FEED_TOO_LARGE',
    'CS_FEED_TOO_MANY_URLS',
    'CS_FEED_BAD_ENTRY',
  ] satisfies CrawlErrorCode[],
  feed_urls: ['SITEMAP', 'SITEMAP_INDEX', 'TEXT_SITEMAP', 'RSS', 'ATOM'],
  robots_redirects_refused: ['too-many-redirects', 'redirect-loop', 'redirect-bad-url', 'redirect-other-site'],
  hosts_parked: ['connection-errors'],
  control_commands: ['BLOCK', 'SLOW', 'PAUSE', 'RESUME', 'SET', 'REFUSED'],
  urls_demoted: ['url-template'],
  urls_refused: ['scope', 'max-depth', 'extension', 'allow'],
  urls_deferred: ['url-template', 'site-budget'],
  urls_released: ['url-template', 'site-budget'],
  revisits: ['PAGE', 'SITEMAP', 'FEED'],
  revisit_outcomes: ['changed', 'unchanged', 'not-modified'],
};

type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;

/** The ids as values, for call sites: `metrics.inc(M.urlsDropped, n, 'robots-disallowed')`. */
export const M = Object.fromEntries(
  Object.keys(METRICS).map((id) => [id.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()), id]),
) as { readonly [K in MetricId as Camel<K>]: K };
