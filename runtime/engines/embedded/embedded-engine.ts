import { M } from '../../../core/metric-catalogue.js';
import type { Logger } from '../../../core/logger.js';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Engine, EngineHealth, QueryAnswer, QueryRequest, TaskStatus } from '../../engine.js';
import { answerQuery, queryTarget, statusOf } from '../../task-query.js';
import { taskIdString } from '../../../core/ids.js';
import type { StreamRecord } from '../../record.js';
import { StreamTask } from '../../task.js';
import type { Subtopology, Topology } from '../../topology.js';
import { buildSerdes, type SerdeSet } from '../../serdes.js';
import { TaskDirectory } from '../../task-directory.js';
import {
  closeTaskState,
  hasPendingWrites,
  openTaskState,
  restoreTaskState,
  type LocalTaskState,
} from '../../task-state.js';
import { EngineBase } from '../../engine-base.js';
import { OutputCollector, serializeFor } from '../../output-collector.js';
import { FileSchemaRegistry } from './file-schema-registry.js';
import { LogRetention, neverTruncated, RETENTION_INTERVAL_MS, TRUNCATE_INTERVAL_MS } from './log-retention.js';
import { EmbeddedChangelogSource } from './embedded-changelog-source.js';
import { EmbeddedLog } from './log-store.js';
import { PROCESS_MEMORY_KEY, processMemory, RocksClaim } from '../../process-memory.js';
import type { MemoryBudget } from '../../../state/memory-budget.js';
import { TaskRunner, type RunnerHost } from './task-runner.js';
import { TaskLifecycle } from '../../task-lifecycle.js';
import { DeadLetters, deadLetterMaxMessageBytes, deadLetterTopicOf } from '../../dead-letter.js';
import { BATCH_BYTES, BATCH_RECORDS } from '../../batch-bounds.js';
import { describePending } from '../../stall-watch.js';
import { resourceFault } from '../../resource-pause.js';
import { PoisonRecords } from '../../task-rewind.js';
import { TaskRecovery, type OpenTask } from './task-recovery.js';
import { CommitCycle } from './commit-cycle.js';

export interface EmbeddedEngineOptions {
  /** Directory that holds topics, stores and schemas; one running engine per directory. */
  readonly dataDir: string;
  /** How often outputs, state and positions are committed together (ms). */
  readonly commitIntervalMs?: number;
  /** Records read per task per poll (default BATCH_RECORDS). */
  readonly pollBatch?: number;
  /**
   * Bytes of records read per task per poll (default BATCH_BYTES): a task behind on pages holds
   * the ones it has read until it has processed them all.
   */
  readonly pollBytes?: number;
  /** Where the engine's lines go (and, bound to each task, its processors'); default silent. */
  readonly logger?: Logger;
}

/**
 * Runs a Topology in one process with durable, partitioned topics on local disk. Every commit
 * makes all tasks' outputs, changelog records and input positions durable in one atomic write;
 * store contents follow from the changelog, so a crash at any point resumes from the last commit.
 */
export class EmbeddedEngine extends EngineBase implements Engine {
  readonly name = 'embedded' as const;
  private log!: EmbeddedLog;
  private retained!: LogRetention;
  private serdes!: SerdeSet;
  private tasks: OpenTask[] = [];
  /** The built topology, for routing queries (set by start). */
  private subtopologies: readonly Subtopology[] = [];
  /** What `produce` wrote, for the next commit. */
  private readonly produced: OutputCollector;
  private commitTimer: NodeJS.Timeout | undefined;
  private punctuateTimer: NodeJS.Timeout | undefined;
  private retentionTimer: NodeJS.Timeout | undefined;
  private truncateTimer: NodeJS.Timeout | undefined;
  private readonly deadLetters: DeadLetters;
  private readonly directory: TaskDirectory;
  /** Every task of the topology runs here for the engine's life: what their processors share (`coLocated`). */
  private readonly coLocated = new Map<string, unknown>();
  /** The process's memory plan (process-memory.ts). */
  readonly memoryPlan: MemoryBudget;
  /** The embedded log's RocksDB in the plan, while open. */
  private logClaim: RocksClaim | undefined;
  /** The commits of every task and of `produce`, on the commit interval or sooner (commit-cycle.ts). */
  private readonly commits: CommitCycle;
  /** Rewinds, quarantines and reopened stores of tasks that failed while running. */
  private readonly recovery: TaskRecovery;

  constructor(
    private readonly topology: Topology,
    private readonly options: EmbeddedEngineOptions,
  ) {
    super(options.logger);
    // sized as on Kafka, so a dead letter reads the same on both engines
    this.deadLetters = new DeadLetters(
      deadLetterTopicOf(topology.applicationId),
      deadLetterMaxMessageBytes(topology),
      this.metrics,
      (l) => this.say(l),
    );
    // one plan for the process: the tasks' databases and the log's are claimed in it, and processors
    // size their caches by it (`ProcessorContext.memory`)
    this.memoryPlan = processMemory(topology, this.logger);
    this.coLocated.set(PROCESS_MEMORY_KEY, this.memoryPlan);
    this.directory = new TaskDirectory(options.dataDir, { memory: this.memoryPlan });
    this.produced = new OutputCollector(this.deadLetters);
    this.recovery = new TaskRecovery({
      logger: this.logger,
      pauses: this.pauses,
      state: () => this.state,
      say: (l) => this.say(l),
      fail: (err) => void this.fail(err),
      requestCommit: () => this.commits.request(),
      recovering: () => this.commits.pausing,
      logBroken: () => this.commits.logBroken,
      openState: (sub, partition) => this.openState(sub, partition),
      streamTask: (open) => this.streamTask(open),
      runnerOf: (open) => this.runnerOf(open),
    });
    this.commits = new CommitCycle({
      metrics: this.metrics,
      pauses: this.pauses,
      produced: this.produced,
      recovery: this.recovery,
      log: () => this.log,
      tasks: () => this.tasks,
      state: () => this.state,
      fail: (err) => void this.fail(err),
    });
  }

  async start(): Promise<void> {
    this.startOnce();
    const { dataDir } = this.options;
    mkdirSync(dataDir, { recursive: true });
    const subtopologies = this.topology.build();
    this.subtopologies = subtopologies;
    this.log = await this.whenSpace('the embedded log', () => EmbeddedLog.open(join(dataDir, 'log')));
    this.logClaim = new RocksClaim(this.memoryPlan, this.log);
    this.retained = new LogRetention(this.log, this.topology, () => this.tasks, this.metrics);
    this.serdes = await buildSerdes(this.topology, new FileSchemaRegistry(dataDir));
    for (const spec of this.topology.topics.values()) this.log.ensureTopic(spec.name, spec.partitions);
    for (const sub of subtopologies) {
      for (const store of sub.stores)
        if (store.changelog) this.log.ensureTopic(this.topology.changelogTopic(store.name), sub.partitions);
    }
    this.log.ensureTopic(this.deadLetters.topic, 1);
    // tasks tail their source topics: their latest appends are read from memory
    for (const sub of subtopologies) for (const topic of sub.sourceTopics) this.log.cacheTail(topic);
    // what retention never deletes is written once, beside RocksDB, not rewritten by its compactions
    for (const topic of neverTruncated(this.topology, subtopologies)) this.log.storeApart(topic);
    for (const sub of subtopologies) {
      for (let partition = 0; partition < sub.partitions; partition++)
        this.tasks.push(
          await this.whenSpace(`task ${taskIdString({ subtopology: sub.id, partition })}`, () =>
            this.openTask(sub, partition),
          ),
        );
    }
    this.log.onAppend((topic, partition) => {
      for (const t of this.tasks)
        if (t.task.id.partition === partition && t.task.subtopology.sourceTopics.includes(topic)) t.runner.notify();
    });
    this.state = 'running';
    for (const t of this.tasks) {
      try {
        t.task.init();
      } catch (err) {
        this.recovery.stopAlone(t, 'init', err);
      }
    }
    // a task whose init met corrupt state is being repaired: its reopening starts its runner
    for (const t of this.tasks) if (!t.quarantined && !t.rewinding) t.runner.start();
    const interval = this.options.commitIntervalMs ?? 100;
    this.commitTimer = setInterval(() => this.commits.run(), interval);
    this.punctuateTimer = setInterval(() => this.punctuate(), 10);
    this.retained.reportMemory();
    this.retentionTimer = setInterval(() => {
      this.retention();
      this.retained.reportMemory();
    }, RETENTION_INTERVAL_MS);
    this.truncateTimer = setInterval(() => this.truncateConsumed(), TRUNCATE_INTERVAL_MS);
    this.say(
      `embedded engine started: ${this.tasks.length} tasks in ${subtopologies.length} sub-topologies, data in ${dataDir}`,
    );
  }

  /**
   * `open()`, tried again every few seconds while it fails with a full disk, paused meanwhile
   * (`/healthz` live, not ready, saying so), so an instance restarted on a full disk waits for
   * space instead of failing again at once. A stop during the wait rethrows the fault.
   */
  private async whenSpace<T>(what: string, open: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        const opened = await open();
        this.pauses.resume(what);
        return opened;
      } catch (err) {
        const reason = resourceFault(err);
        if (reason === undefined) throw err;
        if (!(await this.pauses.wait(what, reason, err as Error, () => this.state === 'new'))) throw err;
      }
    }
  }

  private async openTask(sub: Subtopology, partition: number): Promise<OpenTask> {
    const lifecycle = new TaskLifecycle(this.directory.task({ subtopology: sub.id, partition }).name);
    lifecycle.to('restoring');
    const state = await this.openState(sub, partition);
    const open = {
      sub,
      state,
      outputs: new OutputCollector(this.deadLetters),
      poison: new PoisonRecords(),
      punctuating: new Set<Promise<void>>(),
      rewinding: undefined,
      quarantined: undefined,
      closing: undefined,
      closed: false,
    } as Omit<OpenTask, 'task' | 'runner'> as OpenTask;
    open.task = this.streamTask(open, lifecycle);
    open.runner = this.runnerOf(open);
    return open;
  }

  /** The stores of a task, opened and restored from the changelogs up to the last commit; nothing is left open on a failure. */
  private async openState(sub: Subtopology, partition: number): Promise<LocalTaskState> {
    const id = { subtopology: sub.id, partition };
    const dir = this.directory.task(id);
    const source = EmbeddedChangelogSource.over(this.log, join(this.options.dataDir, 'log'));
    const state = await openTaskState({
      id,
      sub,
      topology: this.topology,
      dir,
      source,
      logger: this.logger,
      metrics: this.metrics,
    });
    try {
      await restoreTaskState(state, source, { metrics: this.metrics, say: (l) => this.say(l) });
    } catch (err) {
      await closeTaskState(state);
      throw err;
    }
    return state;
  }

  /** A StreamTask for `open`'s partition over its stores, sending to its collector. */
  private streamTask(open: OpenTask, lifecycle?: TaskLifecycle): StreamTask {
    const id = { subtopology: open.sub.id, partition: open.state.id.partition };
    return new StreamTask(
      id,
      open.sub,
      this.topology,
      { send: (t, p, k, v, ts, h) => open.outputs.collect(t, p, k, v, ts, h) },
      open.state.stores,
      this.serdes,
      this.metrics,
      Date.now,
      this.taskLogger(id),
      lifecycle,
      this.coLocated,
      this.coLocated,
    );
  }

  /** A runner of `open`'s task from the positions its group committed. */
  private runnerOf(open: OpenTask): TaskRunner {
    const group = `${this.topology.applicationId}:${open.sub.sourceTopics.join(',')}`;
    const host: RunnerHost = {
      log: this.log,
      nextCommit: () => this.commits.next(),
      requestCommit: () => this.commits.request(),
      deadLetter: (r, e) => open.outputs.deadLetter(r, e),
      rewind: (r, e) => this.recovery.rewind(open, r, e),
      fatal: (e) => void this.fail(e),
      pauses: this.pauses,
    };
    return new TaskRunner(
      open.task,
      group,
      host,
      this.options.pollBatch ?? BATCH_RECORDS,
      this.options.pollBytes ?? BATCH_BYTES,
      open.poison,
    );
  }

  async produce(topic: string, records: readonly StreamRecord<string, unknown>[]): Promise<void> {
    this.checkProduce(topic);
    for (const r of serializeFor(this.topology, this.serdes, topic, records))
      this.produced.collect(r.topic, r.partition, r.key, r.value, r.timestamp, r.headers);
    this.commits.request();
    await this.commits.next();
  }

  private punctuate(): void {
    if (this.state !== 'running') return;
    const now = Date.now();
    for (const t of this.tasks) {
      if (t.rewinding || t.quarantined) continue;
      try {
        for (const p of t.task.punctuate(now)) {
          const tracked: Promise<void> = p
            .catch((err) => this.recovery.stopAlone(t, 'punctuator', err))
            .finally(() => t.punctuating.delete(tracked));
          t.punctuating.add(tracked);
        }
      } catch (err) {
        this.recovery.stopAlone(t, 'punctuator', err);
        continue;
      }
      if (t.task.commitRequested) this.commits.request();
    }
  }

  /** Truncates the log, compacts changelogs and reports memory (log-retention.ts); a failure is said and retried. */
  private retention(): void {
    if (this.commits.held) return;
    try {
      this.retained.truncate();
      this.retained.compact();
    } catch (err) {
      this.say(`retention failed (will retry): ${(err as Error).message}`);
    }
  }

  /** Truncation between two retention passes; a failure is left to the next pass to say. */
  private truncateConsumed(): void {
    if (this.commits.held || this.state !== 'running') return;
    try {
      this.retained.truncate();
    } catch {
      // retention runs it again within RETENTION_INTERVAL_MS and says why it failed
    }
  }

  isIdle(): boolean {
    if (this.state !== 'running') return false;
    // a commit is owed: the last one failed on a full disk
    if (this.commits.held) return false;
    if (this.produced.size > 0) return false;
    for (const t of this.tasks) {
      // a quarantined task takes no more work until a restart: waiting for it would never end
      if (t.quarantined) continue;
      if (t.rewinding || t.outputs.size > 0 || !t.runner.caughtUp()) return false;
      if (!t.task.isIdle() || hasPendingWrites(t.state)) return false;
    }
    return true;
  }

  async stop(graceMs = 5_000): Promise<void> {
    const nothing = this.beginStop();
    if (nothing) return nothing;
    await Promise.all(this.tasks.map((t) => t.runner.stop(graceMs)));
    // a rewind under way reopens its task (not started): the last commit then holds none of its thrown-away work
    await this.recovery.settled(this.tasks);
    // a commit paused by a full disk gives up: its work is redone after a restart
    await this.commits.pausing;
    for (const t of this.tasks) t.task.suspend();
    this.commits.run();
    await this.shutdown();
    this.endStop();
  }

  private async fail(err: unknown): Promise<void> {
    if (!this.beginFail(err)) return;
    for (const t of this.tasks) t.runner.halt();
    // no final commit: whatever was not committed is redone after a restart
    await this.shutdown().catch(() => undefined);
    this.endFail(err);
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.commitTimer);
    clearInterval(this.punctuateTimer);
    clearInterval(this.retentionTimer);
    clearInterval(this.truncateTimer);
    this.commits.cancel();
    await this.recovery.settled(this.tasks);
    await this.commits.pausing;
    for (const t of this.tasks) if (!t.closed) await closeTaskState(t.state, t.task);
    // a log whose write failed reports that failure on its close: nothing is lost by it
    this.logClaim?.release();
    if (this.commits.logBroken) await this.log?.close().catch(() => undefined);
    else await this.log?.close();
  }

  /**
   * Progress is every input position and every record taken for processing; pending is input not
   * yet taken and records in flight (a processor holding work on its own clock, such as URLs
   * waiting for a politeness gap, is not pending). Outputs are not counted: a commit within the
   * commit interval writes them or fails the engine.
   */
  health(): EngineHealth {
    // stores restore inside start(), before the engine reports running
    const running = this.state === 'running';
    let progress = this.metrics.total(M.recordsProcessed);
    let lag = 0;
    let inFlight = 0;
    for (const t of this.tasks) {
      // its input waits for a restart: not pending work, or it would read as a stall
      if (t.quarantined) continue;
      let behind = 0;
      for (const p of t.runner.positions.values()) {
        progress += p.offset;
        behind += Math.max(0, this.log.endOffset(p.topic, p.partition) - p.offset);
      }
      if (!running) continue;
      const busy = t.runner.busy();
      inFlight += busy;
      // an 'after' task's position passes a record only once it is done: its records in flight are still behind it
      lag += Math.max(0, behind - (t.task.commitInputs === 'after' ? busy : 0));
    }
    return this.healthOf({
      ready: running,
      tasks: this.tasks.length,
      restoring: this.tasks.filter((t) => t.task.state === 'created' || t.task.state === 'restoring').length,
      progress,
      pending: describePending({ unread: lag, inFlight }),
      quarantined: this.tasks.flatMap((t) => (t.quarantined ? [t.quarantined] : [])),
    });
  }

  query(request: QueryRequest): QueryAnswer {
    if (this.state === 'new') return { kind: 'unavailable', reason: 'the engine has not started' };
    const target = queryTarget(this.topology, this.subtopologies, request);
    if ('kind' in target) return target;
    if (this.state !== 'running')
      return { kind: 'unavailable', partition: target.partition, reason: `the engine is ${this.state}` };
    // every partition's task runs in this process
    const open = this.tasks.find(
      (t) => t.task.id.subtopology === target.sub.id && t.task.id.partition === target.partition,
    );
    // its stores may be closed (reopened after a full disk): a read of a closed RocksDB crashes the process
    if (open?.rewinding)
      return { kind: 'unavailable', partition: target.partition, reason: `task ${open.task.name} is being rewound` };
    return answerQuery(open?.task, target.partition, request);
  }

  taskStatus(): TaskStatus[] {
    return this.tasks.map((t) => (t.quarantined ? { ...statusOf(t.task), state: 'quarantined' } : statusOf(t.task)));
  }
}
