import { counter, gauge, histogram, COMMIT_BUCKETS, type MetricDef } from './metric-def.js';

/** The stream runtime's metrics: records, commits, stores, tasks (metric-catalogue.ts joins the parts in this order). */
export const RUNTIME_METRICS = {
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
