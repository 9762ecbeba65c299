import { M } from '../core/metric-catalogue.js';
import { join } from 'node:path';
import { InvalidOptionError } from '../core/errors.js';
import { KafkaEngine } from '../runtime/engines/kafka/kafka-engine.js';
import { startOpsServer } from '../runtime/ops-server.js';
import { TaskDirectory } from '../runtime/task-directory.js';
import { createLogger } from '../core/logger.js';
import type { Subtopology } from '../runtime/topology.js';
import { crawlTopology } from '../topology/crawl-topology.js';
import type { RunCommand } from './run-options.js';

/** The sub-topologies of a role: the one holding the processor named like the role, or all. */
export function roleFilter(role: RunCommand['role']): (sub: Subtopology) => boolean {
  if (role === 'all') return () => true;
  return (sub) => sub.nodes.some((n) => n.kind === 'processor' && n.name === role);
}

/**
 * Runs one instance of a role on Kafka until SIGTERM/SIGINT (graceful: last commits, then it
 * leaves its groups), a fatal error, or with --until-idle a quiet spell. Prints `[status] idle`
 * and `[status] busy` whenever that changes, so a supervisor or test can tell when work is done.
 */
export async function runRole(
  cmd: RunCommand,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  if (!cmd.registryUrl) throw new InvalidOptionError('--registry URL is required');
  const topology = crawlTopology({
    config: cmd.crawl.config,
    partitions: cmd.crawl.partitions,
    warcDir: join(cmd.crawl.dataDir, 'warc'),
    applicationId: cmd.applicationId,
  });
  const logger = createLogger({ ...cmd.crawl.log, name: 'kafka', write: err });
  const engine = new KafkaEngine(topology, {
    brokers: cmd.brokers,
    registryUrl: cmd.registryUrl,
    dataDir: cmd.crawl.dataDir,
    runs: roleFilter(cmd.role),
    ...(cmd.commitIntervalMs !== undefined ? { commitIntervalMs: cmd.commitIntervalMs } : {}),
    ...(cmd.sessionTimeoutMs !== undefined ? { sessionTimeoutMs: cmd.sessionTimeoutMs } : {}),
    ...(cmd.stateCleanupDelayMs !== undefined ? { stateCleanupDelayMs: cmd.stateCleanupDelayMs } : {}),
    ...(cmd.standbyReplicas !== undefined ? { standbyReplicas: cmd.standbyReplicas } : {}),
    security: cmd.security,
    compression: cmd.compression,
    logger,
  });
  const started = Date.now();
  let stopping: string | undefined;
  const stop = (why: string): void => {
    if (stopping) return;
    stopping = why;
    void engine.stop();
  };
  const onSignal = (sig: NodeJS.Signals): void => stop(`signal ${sig}`);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // served before tasks restore, so /readyz says "not ready" while they do
  const ops = cmd.crawl.ops
    ? await startOpsServer({ engine, ...cmd.crawl.ops, stateDir: new TaskDirectory(cmd.crawl.dataDir).root })
    : undefined;
  if (ops) logger.info(`/metrics, /healthz and /readyz on http://${ops.address}`, { address: ops.address });
  try {
    await engine.start();
  } catch (e) {
    // a refused start leaves nothing open behind it, so the process exits with the error
    await ops?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    throw e;
  }
  out(`[status] started role ${cmd.role}`);
  let idleChecks = 0;
  let reported: 'idle' | 'busy' | undefined;
  let lastProgress = started;
  const watcher = setInterval(() => {
    idleChecks = engine.isIdle() ? idleChecks + 1 : 0;
    const now: 'idle' | 'busy' = idleChecks >= 3 ? 'idle' : 'busy';
    if (now !== reported) out(`[status] ${(reported = now)}`);
    if (cmd.crawl.untilIdle && idleChecks >= 10) stop('idle');
    if (!cmd.crawl.quiet && Date.now() - lastProgress >= 10_000) {
      lastProgress = Date.now();
      const m = engine.metrics;
      out(
        `[${Math.round((Date.now() - started) / 1000)}s] pages ${m.counter(M.pagesFetched)}  records ${m.total(M.pageRecords)}  queued ${m.gauge(M.frontierQueuedUrls)}  in flight ${m.gauge(M.frontierLeases)}  commits ${m.counter(M.commits)}`,
      );
    }
  }, 500);
  let exitCode = 0;
  try {
    await engine.done;
  } catch (e) {
    err(`run failed: ${(e as Error).message}`);
    exitCode = 1;
  } finally {
    clearInterval(watcher);
    await ops?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  // everything the engine opened is closed by now; a client connection kafkajs still holds (seen
  // after a broker outage: a connection made while its client was being disconnected) must not keep
  // the stopped instance alive: it exits on its own once nothing is left, or after this grace
  setTimeout(() => process.exit(exitCode), 5_000).unref();
  out(
    `[status] stopped (${stopping ?? 'engine stopped'}) after ${Math.round((Date.now() - started) / 1000)} s; pages fetched ${engine.metrics.counter(M.pagesFetched)}, page records ${engine.metrics.total(M.pageRecords)}`,
  );
  return exitCode;
}
