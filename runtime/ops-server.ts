import { M } from '../core/metric-catalogue.js';
import { readdirSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { PrometheusExporter } from '../core/prometheus.js';
import type { Engine } from './engine.js';
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
}

export interface OpsServer {
  /** The bound address, e.g. `127.0.0.1:9464`. */
  readonly address: string;
  close(): Promise<void>;
}

/**
 * Serves `/metrics` (Prometheus text, or OpenMetrics when the `Accept` header asks for it),
 * `/healthz` (200 while the event loop answers and the engine has not failed, else 503) and
 * `/readyz` (200 once every assigned task is restored and running, else 503), `/status` and
 * `/status/site/NAME` (JSON: status-routes.ts). Answers GET and
 * HEAD only; a scrape never blocks the engine beyond reading its counters.
 */
export async function startOpsServer({ engine, port, host, stateDir }: OpsServerOptions): Promise<OpsServer> {
  const exporter = new PrometheusExporter(engine.metrics, () => {
    const health = engine.health();
    engine.metrics.setGauge(M.tasksRunning, 'engine', health.tasks - health.restoring);
    engine.metrics.setGauge(M.tasksRestoring, 'engine', health.restoring);
    if (stateDir !== undefined) engine.metrics.setGauge(M.stateDiskBytes, 'engine', diskBytes(stateDir));
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
      const health = engine.health();
      const ok = path === '/healthz' ? health.live : health.ready;
      res
        .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
        .end(`${JSON.stringify({ status: ok ? 'ok' : 'unavailable', ...health })}\n`);
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
  const bound = server.address() as AddressInfo;
  return {
    address: `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Bytes of the files under `dir` (0 when it does not exist yet); a state dir holds hundreds of files at most. */
function diskBytes(dir: string): number {
  let total = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) total += diskBytes(path);
    else if (e.isFile()) {
      try {
        total += statSync(path).size;
      } catch {
        // deleted between listing and stat (a compaction): not there to count
      }
    }
  }
  return total;
}
