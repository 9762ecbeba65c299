/**
 * Every metric crawlstream exports, declared once: the id call sites pass to `Metrics`, the
 * Prometheus name (`crawlstream_` prefix, base units, `_total` on counters), help, unit and label
 * names. No label ever holds a host, URL or other unbounded value. `Metrics` keeps the values;
 * core/prometheus.ts exports them; deploy/grafana-dashboard.json is built from this list.
 */
import type { CrawlErrorCode } from './errors.js';

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

const counter = (name: string, help: string, labels: string[], panel: MetricDef['panel'], unit?: MetricDef['unit']) =>
  ({ type: 'counter', name, help, labels, panel, ...(unit ? { unit } : {}) }) as const satisfies MetricDef;
const gauge = (name: string, help: string, panel: MetricDef['panel'], unit?: MetricDef['unit']) =>
  ({
    type: 'gauge',
    name,
    help,
    labels: [] as string[],
    panel,
    ...(unit ? { unit } : {}),
  }) as const satisfies MetricDef;
const histogram = (name: string, help: string, labels: string[], buckets: number[], panel: MetricDef['panel']) =>
  ({ type: 'histogram', name, help, labels, buckets, panel, unit: 'seconds' }) as const satisfies MetricDef;

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** DURATION_BUCKETS with bounds at the Kafka engine's default commit interval (0.2 s) and halfway to it, so a p99 can be told from it. */
const COMMIT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The catalogue, keyed by the id call sites use (`metrics.inc(M.urlsDropped, n, reason)`). */
export const METRICS = {
  // crawl
  pages_fetched: counter('crawlstream_pages_fetched', 'Page fetches that ended without an error.', [], 'crawl'),
  feed_urls: counter(
    'crawlstream_feed_urls',
    'URLs read from sitemaps and feeds, by format (SITEMAP, SITEMAP_INDEX, TEXT_SITEMAP, RSS, ATOM).',
    ['format'],
    'parser',
  ),
  feed_errors: counter(
    'crawlstream_feed_errors',
    'Sitemaps and feeds that were malformed or over a protocol limit, by code.',
    ['code'],
    'parser',
  ),
  fetches: counter('crawlstream_fetches', 'Fetches started by the fetcher, by kind (PAGE, ROBOTS).', ['kind'], 'crawl'),
  fetch_results: counter(
    'crawlstream_fetch_results',
    'Fetch results sent to the frontier, by kind.',
    ['kind'],
    'crawl',
  ),
  fetch_outcome_errors: counter(
    'crawlstream_fetch_outcome_errors',
    'Fetches that ended in an error at the fetcher, by code.',
    ['code'],
    'crawl',
  ),
  fetch_outcomes: counter(
    'crawlstream_fetches_completed',
    'Fetches completed, by outcome (ok, error code) and HTTP status class.',
    ['outcome', 'status_class'],
    'crawl',
  ),
  fetch_body_bytes: counter(
    'crawlstream_fetch_body_bytes',
    'Response body bytes received, as sent.',
    [],
    'crawl',
    'bytes',
  ),
  fetch_duration: histogram(
    'crawlstream_fetch_duration_seconds',
    'Time from connect to the end of the body.',
    ['kind'],
    DURATION_BUCKETS,
    'crawl',
  ),
  fetch_errors: counter(
    'crawlstream_fetch_errors',
    'Final fetch failures seen by the frontier, by error code.',
    ['code'],
    'crawl',
  ),
  fetch_retries: counter(
    'crawlstream_fetch_retries',
    'Fetches the frontier will redo, by code or status.',
    ['reason'],
    'crawl',
  ),
  robots_results: counter('crawlstream_robots_fetches', 'robots.txt fetches, by result.', ['result'], 'politeness'),
  robots_redirects_refused: counter(
    'crawlstream_robots_redirects_refused',
    'robots.txt redirects not followed (to another site, too many, a loop), by reason.',
    ['reason'],
    'politeness',
  ),
  urls_admitted: counter('crawlstream_urls_admitted', 'New URLs admitted to the frontier.', [], 'frontier'),
  urls_seen: counter('crawlstream_urls_seen', 'Links to URLs already known.', [], 'frontier'),
  urls_dropped: counter(
    'crawlstream_urls_dropped',
    'URLs not admitted or dropped from a queue, by reason.',
    ['reason'],
    'frontier',
  ),
  urls_refused: counter(
    'crawlstream_urls_refused',
    'Links refused on admission by the scope and filters (never requested, not marked seen), by rule.',
    ['rule'],
    'frontier',
  ),
  urls_deferred: counter(
    'crawlstream_urls_deferred',
    'New URLs a heuristic held back (persisted, released when the evidence changes), by reason.',
    ['reason'],
    'frontier',
  ),
  urls_released: counter(
    'crawlstream_urls_released',
    'Deferred URLs queued after all, by the reason they had waited for.',
    ['reason'],
    'frontier',
  ),
  urls_demoted: counter(
    'crawlstream_urls_demoted',
    'New URLs the template rule sent to the lowest front-queue band, by rule.',
    ['rule'],
    'frontier',
  ),
  link_fingerprints_invalid: counter(
    'crawlstream_link_fingerprints_invalid',
    'Link batches whose carried fingerprints had the wrong length (hashed again).',
    [],
    'frontier',
  ),
  page_records: counter(
    'crawlstream_page_records',
    'Page records published, by kind (original, exact copy, near copy).',
    ['kind'],
    'parser',
  ),
  parser_duplicates: counter(
    'crawlstream_page_records_duplicate',
    'Page records of copies, by kind (exact, near); originals are page_records minus these.',
    ['kind'],
    'parser',
  ),
  links_extracted: counter('crawlstream_links_extracted', 'Outlinks extracted from pages.', [], 'parser'),
  page_content_cut: counter(
    'crawlstream_page_content_cut',
    'page-content records with a part cut: text at --content-text-max, outlinks or headers to fit the topic; by part.',
    ['part'],
    'parser',
  ),
  parser_pages_offloaded: counter(
    'crawlstream_parser_pages_offloaded',
    'HTML pages sent to the parse worker threads (--threads above 1, pages of 8 KiB or more).',
    [],
    'parser',
  ),
  warc_archived: counter('crawlstream_warc_records', 'Fetches archived to WARC, by kind.', ['kind'], 'parser'),
  warc_uploads: counter(
    'crawlstream_warc_uploads',
    'Attempts to upload a closed WARC file (and its index) to --warc-store, by outcome (uploaded, failed).',
    ['outcome'],
    'parser',
  ),
  warc_upload_pending: gauge(
    'crawlstream_warc_upload_pending_files',
    'Closed WARC files on local disk waiting to be uploaded to --warc-store (and recorded).',
    'parser',
  ),
  warc_store_unreachable: gauge(
    'crawlstream_warc_store_unreachable',
    'Parser tasks whose last WARC upload failed (store down or refusing); their files wait on disk.',
    'parser',
  ),
  parser_errors: counter(
    'crawlstream_parser_errors',
    'Pages the parser could not decode, by error code.',
    ['code'],
    'parser',
  ),
  parser_transient_outcomes: counter(
    'crawlstream_parser_transient_outcomes',
    'Fetch outcomes the frontier retries, seen (and not recorded) by the parser.',
    [],
    'parser',
  ),
  parser_repeat_fetches: counter(
    'crawlstream_parser_repeat_fetches',
    'Fetches of URLs already recorded (redone leases).',
    [],
    'parser',
  ),
  parser_copies_forwarded: counter(
    'crawlstream_parser_copies_forwarded',
    'Exact copies forwarded to the partition of their own site.',
    [],
    'parser',
  ),
  // politeness
  backoffs: counter('crawlstream_backoffs', 'Hosts backed off after 429/503, by status.', ['status'], 'politeness'),
  politeness_delay: counter(
    'crawlstream_politeness_delay_seconds',
    'Gap required between fetches to a host, summed over leases issued.',
    [],
    'politeness',
    'seconds',
  ),
  hosts_parked: counter('crawlstream_hosts_parked', 'Hosts parked, by reason.', ['reason'], 'politeness'),
  control_commands: counter(
    'crawlstream_control_commands',
    'Operator commands applied, by action (REFUSED: a set whose settings were not valid, applied not at all).',
    ['action'],
    'politeness',
  ),
  sites_dup_cut: counter(
    'crawlstream_sites_duplicate_cut',
    'Sites cut because their recent pages were mostly copies.',
    [],
    'politeness',
  ),
  // frontier state
  leases_issued: counter('crawlstream_leases_issued', 'Leases handed to fetchers, by kind.', ['kind'], 'frontier'),
  leases_expired: counter('crawlstream_leases_expired', 'Leases that expired without a result.', [], 'frontier'),
  leases_dropped_late: counter(
    'crawlstream_leases_dropped_late',
    'Leases a fetcher dropped past their deadline.',
    [],
    'frontier',
  ),
  leases_dropped_stale: counter(
    'crawlstream_leases_dropped_stale',
    'Leases a fetcher dropped as stale.',
    [],
    'frontier',
  ),
  fetcher_clock_ahead: {
    type: 'gauge',
    name: 'crawlstream_fetcher_clock_ahead_seconds',
    help: "How far this process's wall clock runs ahead of the clock of the frontier whose lease it last took (negative: behind), as its fetchers estimate it: the skew plus the least transit of a lease in the last minute; 0 before it takes one. Leases are started and judged on the frontier's clock whatever it is; seconds say a machine's clock wants NTP.",
    labels: [],
    unit: 'seconds',
    perProcess: true,
    panel: 'politeness',
  },
  results_ignored: counter('crawlstream_results_ignored', 'Fetch results for leases no longer held.', [], 'frontier'),
  frontier_queue_urls_migrated: counter(
    'crawlstream_queue_urls_migrated',
    'Queued URLs moved to the chunked queue format.',
    [],
    'frontier',
  ),
  frontier_queued_urls: gauge(
    'crawlstream_frontier_queued_urls',
    'URLs queued in the frontier (front and back queues).',
    'frontier',
  ),
  frontier_front_queued_urls: gauge(
    'crawlstream_frontier_front_queued_urls',
    'URLs in the front (priority) queues.',
    'frontier',
  ),
  frontier_leases: gauge('crawlstream_frontier_leases', 'Leases in flight.', 'frontier'),
  frontier_active_hosts: gauge('crawlstream_frontier_active_hosts', 'Hosts holding a back queue.', 'frontier'),
  frontier_hosts_waiting: gauge(
    'crawlstream_frontier_hosts_waiting',
    'Hosts waiting in the heap for their next fetch.',
    'frontier',
  ),
  frontier_parked_hosts: gauge(
    'crawlstream_frontier_parked_hosts',
    'Hosts parked now (robots.txt unavailable, errors).',
    'frontier',
  ),
  frontier_parked_urls: gauge('crawlstream_frontier_parked_urls', 'URLs queued on parked hosts.', 'frontier'),
  frontier_deferred_urls: gauge(
    'crawlstream_frontier_deferred_urls',
    'Deferred URLs waiting for evidence (a new inlink, a new cycle, their site run out): not pending work.',
    'frontier',
  ),
  recrawl_scheduled_urls: gauge(
    'crawlstream_recrawl_scheduled_urls',
    'Fetched URLs with a revisit scheduled (the due index).',
    'frontier',
  ),
  revisits: counter(
    'crawlstream_revisits',
    'URLs queued again because they fell due, by kind (PAGE, SITEMAP, FEED).',
    ['kind'],
    'frontier',
  ),
  revisits_early: counter(
    'crawlstream_revisits_early',
    'Known URLs made due at once by a sitemap or feed lastmod newer than their last fetch.',
    [],
    'frontier',
  ),
  revisit_outcomes: counter(
    'crawlstream_revisit_outcomes',
    'Revisits by what they found: changed, unchanged, not-modified (a 304).',
    ['result'],
    'crawl',
  ),
  frontier_oldest_due_age: gauge(
    'crawlstream_frontier_oldest_due_age_seconds',
    'How long the most overdue waiting host has been due.',
    'frontier',
    'seconds',
  ),
  // seen-set
  seen_set_fingerprints: gauge('crawlstream_seen_set_fingerprints', 'URL fingerprints in the seen-set.', 'seen-set'),
  seen_set_bloom_bytes: gauge(
    'crawlstream_seen_set_bloom_bytes',
    'Bytes of the seen-set Bloom filters.',
    'seen-set',
    'bytes',
  ),
  seen_set_bloom_fill: gauge(
    'crawlstream_seen_set_bloom_fill_ratio',
    'Fill of the Bloom filters (sum over tasks).',
    'seen-set',
    'ratio',
  ),
  seen_set_bloom_fp_rate_estimate: gauge(
    'crawlstream_seen_set_bloom_false_positive_ratio',
    'Estimated Bloom false-positive rate (sum over tasks).',
    'seen-set',
    'ratio',
  ),
  seen_set_bloom_warning: gauge(
    'crawlstream_seen_set_bloom_warnings',
    'Tasks whose Bloom filter is over its target.',
    'seen-set',
  ),
  seen_set_bloom_rebuilds: gauge(
    'crawlstream_seen_set_bloom_rebuilds',
    'Bloom filter segments added since the task opened (growth; never a rescan of the store).',
    'seen-set',
  ),
  seen_set_unmerged: gauge('crawlstream_seen_set_unmerged', 'Fingerprints not yet merged into blocks.', 'seen-set'),
  seen_set_runs: gauge('crawlstream_seen_set_runs', 'Runs of unmerged fingerprints in the store.', 'seen-set'),
  seen_set_sweeps: gauge('crawlstream_seen_set_sweeps', 'Sweeps of the exact layer since start.', 'seen-set'),
  seen_set_warming: gauge(
    'crawlstream_seen_set_warming',
    'Tasks whose seen-set filter is still being filled from the store after opening (checks read the exact layer until it is).',
    'seen-set',
  ),
  seen_set_runs_forced: gauge(
    'crawlstream_seen_set_runs_forced',
    'Checks since the task opened that came before the runs were read and read them all at once, holding the task thread.',
    'seen-set',
  ),
  // stream runtime
  records_processed: counter(
    'crawlstream_records_processed',
    'Input records processed, by topic.',
    ['topic'],
    'runtime',
  ),
  commits: counter('crawlstream_commits', 'Commits (outputs, state and positions together).', [], 'runtime'),
  commit_duration: histogram(
    'crawlstream_commit_duration_seconds',
    'Time one commit takes.',
    [],
    COMMIT_BUCKETS,
    'runtime',
  ),
  commits_aborted: counter('crawlstream_commits_aborted', 'Commits that failed and were rolled back.', [], 'runtime'),
  restore_records: counter(
    'crawlstream_restore_records',
    'Changelog records restored, by store.',
    ['store'],
    'runtime',
  ),
  // no store label: a series from the start on every engine, standbys or not (a labelled one would exist only once a standby applied records)
  standby_records: counter('crawlstream_standby_records', 'Changelog records applied to standby tasks.', [], 'runtime'),
  restore_seconds: counter(
    'crawlstream_restore_seconds',
    'Time spent restoring, by store.',
    ['store'],
    'runtime',
    'seconds',
  ),
  dead_letters: counter(
    'crawlstream_dead_letters',
    'Records sent to the dead-letter topic, by code.',
    ['code'],
    'runtime',
  ),
  dead_letters_oversized: counter(
    'crawlstream_dead_letters_oversized',
    'Dead letters whose value did not fit the dead-letter topic, written as a reference (source, size, SHA-256).',
    [],
    'runtime',
  ),
  changelog_records_compacted: counter(
    'crawlstream_changelog_records_compacted',
    'Changelog records compacted away.',
    [],
    'runtime',
  ),
  consumer_lag: {
    type: 'gauge',
    name: 'crawlstream_consumer_lag_records',
    help: 'Records not yet consumed, by topic and partition.',
    labels: ['topic', 'partition'],
    panel: 'runtime',
  },
  cache_bytes: {
    type: 'gauge',
    name: 'crawlstream_cache_bytes',
    help: "Bytes held in memory by each bounded cache and buffer, by cache (RocksDB's memtables, block cache and table readers by its own accounting; the others as counted against their bounds).",
    labels: ['cache'],
    unit: 'bytes',
    panel: 'runtime',
  },
  memory_budget_bytes: {
    type: 'gauge',
    name: 'crawlstream_memory_budget_bytes',
    help: "The process's memory plan (--memory-budget), by part: total (0: none), reserve (kept for what is not counted), claimed (seen-set filters and unmerged fingerprints), wanted and granted (block caches), over (by how much the claims and reserve pass the total).",
    labels: ['part'],
    unit: 'bytes',
    panel: 'runtime',
  },
  state_disk_bytes: gauge('crawlstream_state_disk_bytes', 'Bytes of local state on disk.', 'runtime', 'bytes'),
  tasks_running: gauge('crawlstream_tasks_running', 'Tasks restored and running.', 'runtime'),
  tasks_restoring: gauge('crawlstream_tasks_restoring', 'Tasks restoring their stores.', 'runtime'),
  standby_tasks: gauge(
    'crawlstream_standby_tasks',
    "Standby tasks this instance keeps (--standby-replicas): local copies of other members' tasks that follow their changelogs.",
    'runtime',
  ),
  standby_lag_records: gauge(
    'crawlstream_standby_lag_records',
    'Changelog records the standby tasks of this instance were behind at their last catch-up: what a failover onto them restores.',
    'runtime',
  ),
  tasks_paused: {
    type: 'gauge',
    name: 'crawlstream_tasks_paused',
    help: 'Tasks that stopped taking records until a resource comes back, by reason (disk-full: a WARC or state disk is full); each retries its record every few seconds.',
    labels: ['reason'],
    panel: 'runtime',
  },
  store_wipes: counter(
    'crawlstream_store_wipes',
    'Task RocksDBs wiped and restored from their changelogs, by reason (corrupt-at-open: RocksDB refused to open its files; corrupt-read: a read found a bad block while the task ran; stale-checkpoint: the local state was ahead of its changelog).',
    ['reason'],
    'runtime',
  ),
  tasks_quarantined: gauge(
    'crawlstream_tasks_quarantined',
    'Tasks stopped alone because their init or a punctuator threw: their partitions wait, unprocessed, for a restart.',
    'runtime',
  ),
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
