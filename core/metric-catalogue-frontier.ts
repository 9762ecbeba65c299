import { counter, gauge, type MetricDef } from './metric-def.js';

/** The frontier's metrics: politeness, its state and its seen-set (metric-catalogue.ts joins the parts in this order). */
export const FRONTIER_METRICS = {
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
} as const satisfies Record<string, MetricDef>;
