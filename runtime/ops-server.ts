import { M } from '../core/metric-catalogue.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PrometheusExporter } from '../core/prometheus.js';
import { DiskUsage } from './disk-usage.js';
import type { Engine, EngineHealth } from './engine.js';
import { DEFAULT_STALL_MS, StallWatch } from './stall-watch.js';
import { engineStatus, siteStatusReply, type StatusReply } from './status-routes.js';

/** Where and what the operations endpoints serve. */
export interface OpsServerOptions {
  readonly engine: Engine;
  /** TCP port; 0 picks a free one (tests). */
  readonly port: number;
  /** Bind address: loopback unless the operator opens it (a pod's scraper needs 0.0.0.0). */
  readonly host: string;
  /** The engine's local state directory, whose size `crawlstream_state_disk_bytes` reports. */
  readonly stateDir?: string;
  /** `--stall-timeout`: work pending this long without progress makes `/healthz` fail; default DEFAULT_STALL_MS. */
  readonly stallMs?: number;
}

export interface OpsServer {
  /** The bound address, e.g. `127.0.0.1:9464`. */
  readonly address: string;
  close(): Promise<void>;
}

/**
 * Serves `/metrics` (Prometheus text, or OpenMetrics when the `Accept` header asks for it),
 * `/healthz`, `/readyz` (200 once every assigned task is restored and running, else 503),
 * `/status` and `/status/site/NAME` (JSON: status-routes.ts). Answers GET and HEAD only.
 *
 * `/healthz` is 200 while the event loop answers, the engine has not failed or lost a consumer
 * (EngineHealth.live) and it has not stalled: work pending (EngineHealth.pending) without progress
 * for `stallMs` (stall-watch.ts). Else 503, with `reason` saying which. The body is the engine's
 * health as JSON, plus `stuckMs`, the time work has been pending without progress, and
 * `warnings`: conditions that need an operator but do not make the probe fail (healthWarnings;
 * quarantined tasks, quarantineWarnings: the rest of the process works).
 *
 * A scrape never blocks the event loop beyond reading counters: the state directory's size is
 * the last figure a background walk measured (disk-usage.ts), never walked during the scrape.
 */
export async function startOpsServer({
  engine,
  port,
  host,
  stateDir,
  stallMs = DEFAULT_STALL_MS,
}: OpsServerOptions): Promise<OpsServer> {
  const disk = stateDir === undefined ? undefined : new DiskUsage(stateDir);
  const stalls = new StallWatch(stallMs);
  let stuckMs = 0;
  const read = (): EngineHealth => {
    const health = engine.health();
    stuckMs = stalls.observe(health);
    return health;
  };
  const exporter = new PrometheusExporter(engine.metrics, () => {
    const health = read();
    const quarantined = health.quarantined?.length ?? 0;
    engine.metrics.setGauge(M.tasksRunning, 'engine', health.tasks - health.restoring - quarantined);
    engine.metrics.setGauge(M.tasksRestoring, 'engine', health.restoring);
    engine.metrics.setGauge(M.tasksQuarantined, 'engine', quarantined);
    const bytes = disk?.bytes();
    if (bytes !== undefined) engine.metrics.setGauge(M.stateDiskBytes, 'engine', bytes);
    // the engine's, not a processor's: a fetcher- or parser-only process has a plan too
    engine.memoryPlan.reportMetrics(engine.metrics);
  });
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      exporter.scrape(req.headers.accept).then(
        ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`),
      );
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      const health = read();
      const stalled = health.live && stalls.stalled(stuckMs);
      const ok = path === '/healthz' ? health.live && !stalled : health.ready;
      const warnings = [...healthWarnings(engine), ...quarantineWarnings(health)];
      const reason = stalled
        ? `stalled: no progress for ${Math.round(stuckMs / 1000)} s with work pending (${health.pending}); --stall-timeout is ${Math.round(stallMs / 1000)} s`
        : health.reason;
      res
        .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
        .end(
          `${JSON.stringify({ status: ok ? 'ok' : 'unavailable', ...health, ...(reason !== undefined ? { reason } : {}), ...(warnings.length > 0 ? { warnings } : {}), stuckMs })}\n`,
        );
      return;
    }
    if (path === '/status' || path?.startsWith('/status/site/')) {
      let reply: StatusReply;
      try {
        reply = path === '/status' ? engineStatus(engine) : siteStatusReply(engine, path.slice(13));
      } catch (err) {
        reply = { status: 500, body: { error: String(err) } };
      }
      res.writeHead(reply.status, { 'content-type': 'application/json' }).end(`${JSON.stringify(reply.body)}\n`);
      return;
    }
    res
      .writeHead(404, { 'content-type': 'text/plain' })
      .end('not found: try /metrics, /healthz, /readyz, /status or /status/site/NAME\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  // readings between probes, so a stall is timed from when it began, not from the first probe after it
  const watch = setInterval(read, Math.min(1_000, Math.max(10, Math.floor(stallMs / 4))));
  watch.unref();
  const bound = server.address() as AddressInfo;
  return {
    address: `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`,
    close: () => {
      clearInterval(watch);
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * What `/healthz` warns of without failing: a WARC object store (--warc-store) that the last
 * upload of some parser task could not reach; its files wait on local disk.
 */
export function healthWarnings(engine: Pick<Engine, 'metrics'>): string[] {
  const warnings: string[] = [];
  const unreachable = engine.metrics.gauge(M.warcStoreUnreachable);
  if (unreachable > 0)
    warnings.push(
      `warc store unreachable from ${unreachable} parser task(s): ${engine.metrics.gauge(M.warcUploadPending)} closed WARC file(s) wait on local disk`,
    );
  return warnings;
}

/** `/healthz`'s warning for each quarantined task (task-quarantine.ts): the rest of the process works, so the probe passes. */
export function quarantineWarnings(health: Pick<EngineHealth, 'quarantined'>): string[] {
  return (health.quarantined ?? []).map(
    (q) =>
      `task ${q.task} quarantined: its ${q.during} threw ${q.code} (${q.error}); partition ${q.partition} waits for a restart`,
  );
}
