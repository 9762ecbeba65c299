import { hostname } from 'node:os';
import { M, type MetricId } from '../core/metric-catalogue.js';
import type { Engine, QueryAnswer } from './engine.js';

/** The query `/status/site/NAME` asks: the crawl topology's frontier answers it (processors/frontier/site-status.ts). */
export interface SiteQuery {
  readonly processor: string;
  readonly query: string;
}

export const DEFAULT_SITE_QUERY: SiteQuery = { processor: 'frontier', query: 'site' };

/** A status answer: HTTP status and JSON body. */
export interface StatusReply {
  readonly status: number;
  readonly body: unknown;
}

/** Gauges `/status` totals, summed over this instance's tasks (each frontier task sets its own). */
const TOTAL_GAUGES: Readonly<Record<string, MetricId>> = {
  queuedUrls: M.frontierQueuedUrls,
  frontQueuedUrls: M.frontierFrontQueuedUrls,
  leases: M.frontierLeases,
  activeHosts: M.frontierActiveHosts,
  hostsWaiting: M.frontierHostsWaiting,
  parkedHosts: M.frontierParkedHosts,
  parkedUrls: M.frontierParkedUrls,
};

/** Counters `/status` totals since this process started. */
const TOTAL_COUNTERS: Readonly<Record<string, MetricId>> = {
  fetches: M.fetches,
  pagesFetched: M.pagesFetched,
  fetchErrors: M.fetchErrors,
  backoffs: M.backoffs,
  hostsParked: M.hostsParked,
  pageRecords: M.pageRecords,
  urlsAdmitted: M.urlsAdmitted,
  recordsProcessed: M.recordsProcessed,
};

/**
 * `/status`: the engine, its health, this instance's tasks with their states, and totals (tasks
 * by state; frontier gauges and crawl counters of this process). Reads counters only.
 */
export function engineStatus(engine: Engine, now = Date.now()): StatusReply {
  const health = engine.health();
  const tasks = engine.taskStatus();
  const byState: Record<string, number> = {};
  for (const t of tasks) byState[t.state] = (byState[t.state] ?? 0) + 1;
  const totals: Record<string, number | Record<string, number>> = { tasks: tasks.length, tasksByState: byState };
  for (const [name, id] of Object.entries(TOTAL_GAUGES)) totals[name] = engine.metrics.gauge(id);
  for (const [name, id] of Object.entries(TOTAL_COUNTERS)) totals[name] = engine.metrics.total(id);
  return {
    status: 200,
    body: {
      engine: engine.name,
      // a pod's name on Kubernetes: which instance answered, next to the partitions it owns
      instance: hostname(),
      now,
      state: health.state,
      live: health.live,
      ready: health.ready,
      tasks,
      totals,
    },
  };
}

/** A registered domain: lower-case labels, at least two (example.com, not example or a URL). */
const SITE = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * `/status/site/NAME`: the site's state from the task that owns its partition. 200 with the view;
 * 421 (Misdirected Request) when another instance owns the partition, saying which partition it
 * is; 503 while the owning task cannot answer (restoring); 400 for a name that is no domain; 404
 * when no processor here answers site queries.
 */
export function siteStatusReply(engine: Engine, rawName: string, query: SiteQuery = DEFAULT_SITE_QUERY): StatusReply {
  let site: string;
  try {
    site = decodeURIComponent(rawName).toLowerCase();
  } catch {
    site = '';
  }
  if (!SITE.test(site))
    return { status: 400, body: { error: `not a site (a registered domain such as example.com): ${rawName}` } };
  const answer: QueryAnswer = engine.query({ ...query, key: site });
  switch (answer.kind) {
    case 'answered':
      return {
        status: 200,
        body: {
          engine: engine.name,
          site,
          owned: true,
          task: answer.task,
          partition: answer.partition,
          status: answer.value,
        },
      };
    case 'not-owned':
      return {
        status: 421,
        body: {
          engine: engine.name,
          site,
          owned: false,
          partition: answer.partition,
          partitions: answer.partitions,
          ownedHere: answer.owned,
          error: `partition ${answer.partition} of ${site} is not owned by this instance; ask the instance that owns it`,
        },
      };
    case 'unavailable':
      return {
        status: 503,
        body: { engine: engine.name, site, partition: answer.partition ?? null, error: answer.reason },
      };
    case 'unknown':
      return { status: 404, body: { engine: engine.name, site, error: answer.reason } };
  }
}
