import { M, type MetricId } from '../core/metric-catalogue.js';
import { join } from 'node:path';
import { EmbeddedEngine } from '../runtime/engines/embedded/embedded-engine.js';
import type { Engine } from '../runtime/engine.js';
import { startOpsServer } from '../runtime/ops-server.js';
import { TaskDirectory } from '../runtime/task-directory.js';
import { createLogger } from '../core/logger.js';
import type { Metrics } from '../core/metrics.js';
import { crawlTopology, TOPICS } from '../topology/crawl-topology.js';
import type { CrawlCommand } from './options.js';
import { drainControlInbox } from './control.js';
import { drainSeedInbox, seedBatches } from './seed-inbox.js';

export { seedBatches } from './seed-inbox.js';

export interface CrawlRun {
  readonly exitCode: number;
  readonly pages: number;
  readonly elapsedMs: number;
}

/**
 * Runs the whole topology on the embedded engine until idle, a page or time limit, a signal, or a
 * fatal error. Resumes whatever the data dir holds; seeds already seen are ignored.
 */
export async function runCrawl(
  cmd: CrawlCommand,
  out: (line: string) => void = (l) => process.stdout.write(`${l}\n`),
  err: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
): Promise<CrawlRun> {
  const topology = crawlTopology({
    config: cmd.config,
    partitions: cmd.partitions,
    warcDir: join(cmd.dataDir, 'warc'),
  });
  const logger = createLogger({ ...cmd.log, name: 'engine', write: err });
  const engine: Engine = new EmbeddedEngine(topology, { dataDir: cmd.dataDir, logger });
  // served before the stores restore, so /readyz says "not ready" while they do
  const ops = cmd.ops
    ? await startOpsServer({ engine, ...cmd.ops, stateDir: new TaskDirectory(cmd.dataDir).root })
    : undefined;
  if (ops) logger.info(`/metrics, /healthz and /readyz on http://${ops.address}`, { address: ops.address });
  const started = Date.now();
  try {
    await engine.start();
  } catch (e) {
    // as `run` does: a refused start leaves no endpoint open behind it, so the process exits with the error
    await ops?.close();
    throw e;
  }
  let stopping: string | undefined;
  const stop = (why: string) => {
    if (stopping) return;
    stopping = why;
    void engine.stop();
  };
  const onSignal = (sig: NodeJS.Signals) => stop(`signal ${sig}`);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const batches = seedBatches(cmd.seeds, started, err);
  if (batches.length > 0)
    await engine.produce(
      TOPICS.links,
      batches.map((b) => ({ key: b.site, value: b, timestamp: started })),
    );

  // operator commands (crawlstream control …) and seeds (crawlstream inject --data) arrive through the data dir's inboxes
  let draining = false;
  const drain = async () => {
    if (draining || stopping) return;
    draining = true;
    try {
      const n = await drainControlInbox(cmd.dataDir, engine, err);
      if (n > 0) out(`applied ${n} control command(s)`);
      const seeds = await drainSeedInbox(cmd.dataDir, engine, err);
      if (seeds > 0) out(`injected ${seeds} seed(s)`);
    } catch (e) {
      err(`control inbox: ${(e as Error).message}`);
    } finally {
      draining = false;
    }
  };
  await drain();
  const inboxTimer = setInterval(() => void drain(), 1_000);

  let idleChecks = 0;
  let lastPages = 0;
  let lastProgress = started;
  const watcher = setInterval(() => {
    const now = Date.now();
    const pages = engine.metrics.counter(M.pagesFetched);
    if (cmd.maxPages !== undefined && pages >= cmd.maxPages) stop(`reached --max-pages ${cmd.maxPages}`);
    if (cmd.durationMs !== undefined && now - started >= cmd.durationMs) stop('reached --duration');
    if (cmd.untilIdle) {
      idleChecks = engine.isIdle() ? idleChecks + 1 : 0;
      if (idleChecks >= 2) stop('idle');
    }
    if (!cmd.quiet && now - lastProgress >= 10_000) {
      out(progressLine(engine.metrics, now - started, (pages - lastPages) / ((now - lastProgress) / 1000)));
      lastPages = pages;
      lastProgress = now;
    }
  }, 500);

  let exitCode = 0;
  try {
    await engine.done;
  } catch (e) {
    err(`crawl failed: ${(e as Error).message}`);
    exitCode = 1;
  } finally {
    clearInterval(watcher);
    clearInterval(inboxTimer);
    await ops?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const elapsedMs = Date.now() - started;
  if (!cmd.quiet) for (const line of summary(engine.metrics, elapsedMs, stopping)) out(line);
  return { exitCode, pages: engine.metrics.counter(M.pagesFetched), elapsedMs };
}

function progressLine(m: Metrics, elapsedMs: number, rate: number): string {
  return [
    `[${clock(elapsedMs)}]`,
    `pages ${m.counter(M.pagesFetched)}`,
    `(${rate.toFixed(1)}/s)`,
    `hosts waiting ${m.gauge(M.frontierHostsWaiting)}`,
    `queued ${m.gauge(M.frontierQueuedUrls)}`,
    `in flight ${m.gauge(M.frontierLeases)}`,
    `errors ${m.total(M.fetchErrors)}`,
  ].join('  ');
}

function summary(m: Metrics, elapsedMs: number, why: string | undefined): string[] {
  const lines = [
    `crawl stopped (${why ?? 'engine stopped'}) after ${clock(elapsedMs)}`,
    `  pages fetched      ${m.counter(M.pagesFetched)}`,
    `  page records       ${m.total(M.pageRecords)}`,
    `  robots.txt fetches ${m.counter(M.fetches, 'ROBOTS')}`,
    `  urls admitted      ${m.counter(M.urlsAdmitted)}  (already seen: ${m.counter(M.urlsSeen)})`,
    `  queued now         ${m.gauge(M.frontierQueuedUrls)}`,
    `  revisits           ${m.total(M.revisits)}  (changed ${m.counter(M.revisitOutcomes, 'changed')}, unchanged ${m.counter(M.revisitOutcomes, 'unchanged')}, 304 not modified ${m.counter(M.revisitOutcomes, 'not-modified')})`,
    `  scheduled          ${m.gauge(M.recrawlScheduledUrls)} URLs  (made due early by a sitemap or feed: ${m.counter(M.revisitsEarly)})`,
    `  sitemap/feed urls  ${m.total(M.feedUrls)}  (malformed or over a limit: ${m.total(M.feedErrors)})`,
  ];
  const parked = m.gauge(M.frontierParkedUrls);
  if (parked > 0)
    lines.push(
      `  parked             ${parked} URLs on ${m.gauge(M.frontierParkedHosts)} hosts whose robots.txt is unavailable (retried later; resume with the same --data)`,
    );
  const byLabel = (id: MetricId, title: string) => {
    for (const [label, v] of m.countersOf(id).sort(([a], [b]) => a.localeCompare(b)))
      lines.push(`  ${title} {${label}}  ${v}`);
  };
  byLabel(M.urlsRefused, 'refused');
  byLabel(M.urlsDropped, 'dropped');
  byLabel(M.urlsDeferred, 'deferred');
  byLabel(M.urlsReleased, 'released');
  const deferred = m.gauge(M.frontierDeferredUrls);
  if (deferred > 0)
    lines.push(
      `  deferred now       ${deferred} URLs held back by a template or budget (queued when another site links in, a cycle ends or a budget is raised; resume with the same --data)`,
    );
  byLabel(M.fetchErrors, 'fetch error');
  byLabel(M.backoffs, 'back-offs');
  byLabel(M.deadLetters, 'dead letters');
  return lines;
}

function clock(ms: number): string {
  const s = Math.floor(ms / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}
