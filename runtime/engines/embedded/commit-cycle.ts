import { M } from '../../../core/metric-catalogue.js';
import type { Metrics } from '../../../core/metrics.js';
import type { EngineState } from '../../engine-base.js';
import type { OutputCollector, OutputRecord } from '../../output-collector.js';
import { resourceFault, type TaskPauses } from '../../resource-pause.js';
import { applyCommitted, prepareCommit, type PreparedCommit } from '../../task-state.js';
import type { RawRecord } from '../../record.js';
import { rangeKey } from '../../changelog-source.js';
import type { Append, EmbeddedLog, Position } from './log-store.js';
import type { OpenTask, TaskRecovery } from './task-recovery.js';

/** What the commit cycle reads of its engine; it owns none of it. */
export interface CommitHost {
  readonly metrics: Metrics;
  readonly pauses: TaskPauses;
  /** Records produced from outside the topology (`Engine.produce`), committed with the tasks'. */
  readonly produced: OutputCollector;
  readonly recovery: TaskRecovery;
  log(): EmbeddedLog;
  tasks(): readonly OpenTask[];
  state(): EngineState;
  /** Fails the engine: no final commit. */
  fail(err: unknown): void;
}

/**
 * The embedded engine's commits: every task's outputs, changelog records and input positions, and
 * what was produced from outside, in one fsynced batch of the log, on the commit interval or
 * sooner when asked. A full disk pauses the cycle (every task held) until a retried commit goes
 * through; any other failure fails the engine.
 */
export class CommitCycle {
  private waiters: (() => void)[] = [];
  private soon: NodeJS.Immediate | undefined;
  /** Set while commits are paused by a full disk (`pause`): they are retried there, nowhere else. */
  private recovering: Promise<void> | undefined;
  /** The log's last write failed: it is reopened before the next commit. */
  private broken = false;

  constructor(private readonly host: CommitHost) {}

  /** Whether commits are paused by a full disk, or the log must be reopened first. */
  get held(): boolean {
    return this.recovering !== undefined || this.broken;
  }

  /** The pause under way, if any (TaskRecovery waits for it). */
  get pausing(): Promise<void> | undefined {
    return this.recovering;
  }

  /** Whether the log's last write failed (it reports that failure again on its close). */
  get logBroken(): boolean {
    return this.broken;
  }

  /** Resolves after the next commit that goes through (or at shutdown). */
  next(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** A commit on the next turn of the loop; asking again before it runs changes nothing. */
  request(): void {
    this.soon ??= setImmediate(() => {
      this.soon = undefined;
      this.run();
    });
  }

  /** Commits now, while running or stopping and not paused; a failure pauses the cycle or fails the engine. */
  run(): void {
    const { host } = this;
    if (host.state() !== 'running' && host.state() !== 'stopping') return;
    // paused by a full disk: the pause retries the commit, and a stop leaves it to the restart
    if (this.held) return;
    const started = process.hrtime.bigint();
    try {
      this.commit();
    } catch (err) {
      host.metrics.inc(M.commitsAborted);
      const reason = resourceFault(err);
      if (reason !== undefined && host.state() === 'running') this.pause(err as Error);
      else host.fail(err);
      return;
    }
    host.metrics.observe(M.commitDuration, Number(process.hrtime.bigint() - started) / 1e9);
  }

  /** At shutdown: a requested commit is cancelled and every waiter released (a pause under way goes on: `pausing`). */
  cancel(): void {
    if (this.soon) clearImmediate(this.soon);
    this.soon = undefined;
    for (const w of this.waiters) w();
    this.waiters = [];
  }

  /**
   * One atomic commit of every task: outputs, changelog records and input positions in one fsynced
   * batch; then local stores apply their writes. Synchronous, so no record is half-way through it.
   *
   * When the batch fails nothing of it is durable: what it took (outputs, commit waiters) is given
   * back and the stores keep their pending writes, so the next commit holds it all again, with
   * what was done since; a write failure marks the log broken. When a task's stores fail to apply
   * a durable commit with a full disk, the commit stands (its changelog records are in the log)
   * and the task's stores are opened again and restored (`TaskRecovery.storesFailed`, task-recovery.ts).
   */
  private commit(): void {
    const { host } = this;
    const log = host.log();
    const waiters = this.waiters;
    this.waiters = [];
    const produced = host.produced.drain();
    const out: OutputRecord[] = [...produced];
    const taken: [OpenTask, OutputRecord[]][] = [];
    const positions: Position[] = [];
    const prepared: [OpenTask, PreparedCommit][] = [];
    const now = Date.now();
    let bases: Map<string, number>;
    let writing = false;
    try {
      for (const t of host.tasks()) {
        // a task being rewound, quarantined or closed (its stores' reopening given up) has nothing to
        // commit: what it did since the last commit is thrown away
        if (t.rewinding || t.quarantined || t.closed) continue;
        const outputs = t.outputs.drain();
        taken.push([t, outputs]);
        for (const r of outputs) out.push(r);
        const commit = prepareCommit(t.state, t.task.id.partition, now);
        for (const r of commit.records) out.push(r);
        prepared.push([t, commit]);
        for (const p of t.runner.positions.values()) positions.push({ group: t.runner.group, ...p });
      }
      writing = true;
      bases = log.commit(appendsOf(out), positions);
    } catch (err) {
      host.produced.requeue(produced);
      for (const [t, outputs] of taken) t.outputs.requeue(outputs);
      this.waiters = [...waiters, ...this.waiters];
      if (writing && resourceFault(err) !== undefined) this.broken = true;
      throw err;
    }
    for (const [t] of prepared) t.task.commitRequested = false;
    // what each group has yet to read, as the Kafka engine reports from its fetches
    for (const p of positions) {
      const lag = Math.max(0, log.endOffset(p.topic, p.partition) - p.offset);
      host.metrics.setGauge(M.consumerLag, p.group, lag, `${p.topic},${p.partition}`);
    }
    const failed: [OpenTask, Error][] = [];
    for (const [t, commit] of prepared) {
      try {
        applyCommitted(commit, bases);
      } catch (err) {
        if (resourceFault(err) === undefined) throw err;
        failed.push([t, err as Error]);
      }
    }
    host.metrics.inc(M.commits);
    for (const w of waiters) w();
    for (const [t, err] of failed) host.recovery.storesFailed(t, err);
  }

  /**
   * A commit failed with a full disk (the log's write, or a WARC flush): every task is held (it
   * takes no more records, as nothing can be committed) and the commit is retried every
   * PAUSE_RETRY_MS, the log reopened first when its write failed. Paused meanwhile: `/healthz` live
   * and not ready, `crawlstream_tasks_paused{reason="disk-full"}`, one line each way.
   */
  private pause(err: Error): void {
    if (this.recovering) return;
    for (const t of this.host.tasks()) t.runner.hold();
    this.recovering = this.recover(err)
      .catch((e: unknown) => this.host.fail(e))
      .finally(() => (this.recovering = undefined));
  }

  private async recover(err: Error): Promise<void> {
    const { host } = this;
    const what = "the engine's commits";
    let fault = err;
    for (;;) {
      if (!(await host.pauses.wait(what, 'disk-full', fault, () => host.state() === 'running'))) return;
      try {
        if (this.broken) {
          await host.log().reopen();
          this.broken = false;
        }
        // the retried commit is also the probe: it writes (fsynced) to the reopened log
        this.commit();
        break;
      } catch (e) {
        if (resourceFault(e) === undefined) throw e;
        host.metrics.inc(M.commitsAborted);
        fault = e as Error;
      }
    }
    host.pauses.resume(what);
    for (const t of host.tasks()) t.runner.release();
  }
}

/** The outputs and changelog records of a commit, grouped by topic partition (order kept) as the log appends them. */
function appendsOf(records: readonly OutputRecord[]): Append[] {
  const byPartition = new Map<string, { topic: string; partition: number; records: RawRecord[] }>();
  for (const r of records) {
    const k = rangeKey(r.topic, r.partition);
    let entry = byPartition.get(k);
    if (!entry) byPartition.set(k, (entry = { topic: r.topic, partition: r.partition, records: [] }));
    entry.records.push(
      r.headers
        ? { key: r.key, value: r.value, timestamp: r.timestamp, headers: r.headers }
        : { key: r.key, value: r.value, timestamp: r.timestamp },
    );
  }
  return [...byPartition.values()];
}
