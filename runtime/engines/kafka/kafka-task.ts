import { M } from '../../../core/metric-catalogue.js';
import { isCrawlError, CrawlError } from '../../../core/errors.js';
import type { Metrics } from '../../../core/metrics.js';
import type { ConsumedRawRecord } from '../../record.js';
import { RecordDriver } from '../../record-driver.js';
import type { StreamTask } from '../../task.js';
import { rangeKey } from '../../changelog-source.js';
import { graceWait } from '../../engine-base.js';
import { OutputCollector, type OutputRecord } from '../../output-collector.js';
import type { DeadLetters } from '../../dead-letter.js';
import { resourceFault, type TaskPauses } from '../../resource-pause.js';
import { PoisonRecords, rewindTask } from '../../task-rewind.js';
import { quarantineOf, quarantines } from '../../task-quarantine.js';
import type { QuarantinedTask } from '../../engine.js';
import {
  applyCommitted,
  closeTaskState,
  discardPending,
  hasPendingWrites,
  prepareCommit,
  type TaskStores,
} from '../../task-state.js';
import type { TopicPartitionOffset, TransactionalProducer } from './kafka-port.js';
import { commitRetryingTransient } from './kafka-transactions.js';
import { InputBuffer } from './input-bounds.js';

export interface KafkaTaskHost {
  readonly groupId: string;
  readonly commitIntervalMs: number;
  readonly deadLetters: DeadLetters;
  readonly metrics: Metrics;
  log(line: string): void;
  /**
   * The task cannot go on (fenced, a commit failed, or CS_DISK_FULL: its stores could not apply a
   * commit that stands): the engine drops it until the next assignment.
   */
  lost(task: KafkaTask, err: CrawlError): void;
  /**
   * The task's init or a punctuator threw `err` (task-quarantine.ts): it has stopped taking work
   * and commits nothing more; the engine closes it without committing and keeps its partition.
   */
  quarantine(task: KafkaTask, err: unknown): void;
  /**
   * Whether `err`, met by a record or a punctuator of `task`, is corrupt state that the task's next
   * opening repairs (store-repair.ts): the task then throws its work since the last commit away and
   * is handed back as a lost one (`lost` with `err`), instead of dead-lettering the record or
   * quarantining the task. Counts as a repair when true. Absent: never.
   */
  repairable?(task: KafkaTask, err: unknown): boolean;
  /** A fault that no retry can fix (a topology bug): the engine stops. */
  fatal(err: unknown): void;
  /** Where a task paused by a resource fault is recorded while its record is retried. */
  readonly pauses?: TaskPauses;
}

/**
 * Runs one StreamTask on Kafka: a loop that processes buffered records, runs punctuators and
 * commits. A commit is one Kafka transaction of the task's producer (transactional id per task):
 * its outputs, its stores' changelog records and its input offsets; local stores apply their
 * writes only after it committed. Stateful work never runs during a commit, so what a commit
 * snapshots is exactly what its changelog records describe. A record that fails once a processor
 * has seen it rewinds the task (task-rewind.ts): the records taken since the last commit are
 * buffered again, ahead of the rest, and run through a new StreamTask over the same stores; the
 * consumer, its fetch position and the group are not touched.
 */
export class KafkaTask {
  private readonly buffer = new InputBuffer();
  /** 'after' records taken since the last commit, in order: what a rewind runs again. */
  private taken: ConsumedRawRecord[] = [];
  private readonly poison = new PoisonRecords();
  private current: StreamTask;
  /** Next offset to process per input partition; records below it are repeats after a rebalance. */
  private readonly positions = new Map<string, TopicPartitionOffset>();
  /** Fetch progress per input partition: next offset fetched and the partition's end. */
  private readonly fetched = new Map<string, { next: number; end: number }>();
  private readonly dirty = new Set<string>();
  /** The StreamTask's RecordCollector: outputs and dead letters for the next commit. */
  readonly outputs: OutputCollector;
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private lastCommit = Date.now();
  private driver: RecordDriver;
  private punctuating: Promise<void>[] = [];
  private committing = false;
  /** Set once a corrupt read is to be repaired (`host.repairable`): the task commits nothing more and is handed back. */
  private repairing: CrawlError | undefined;

  constructor(
    task: StreamTask,
    private readonly producer: TransactionalProducer,
    /** The task's open state; the task owns it from here and closes it in `close`. */
    private readonly state: TaskStores,
    private readonly host: KafkaTaskHost,
    /**
     * A new StreamTask of the same partition over `state`'s stores, sending to `outputs`, not yet
     * initialized: what a rewind runs. Without it a failed record is dead-lettered where it
     * fails, whatever it did before failing kept.
     */
    private readonly rebuild?: () => StreamTask,
  ) {
    this.outputs = new OutputCollector(host.deadLetters);
    this.current = task;
    this.driver = this.driverOf(task);
  }

  /** The running StreamTask (a new one after each rewind). */
  get task(): StreamTask {
    return this.current;
  }

  private driverOf(task: StreamTask): RecordDriver {
    return new RecordDriver(
      task,
      {
        advance: (r) => this.advance(r),
        deadLetter: (r, err) => this.outputs.deadLetter(r, err),
        ...(this.rebuild ? { rewind: (r: ConsumedRawRecord, err: Error) => this.failedAfter(r, err) } : {}),
        fatal: (err) => this.host.fatal(err),
      },
      this.host.pauses,
      this.poison,
    );
  }

  get name(): string {
    return this.task.name;
  }

  /** Set once the task's init or a punctuator threw (task-quarantine.ts). */
  get quarantined(): QuarantinedTask | undefined {
    return this.quarantine;
  }

  private quarantine: QuarantinedTask | undefined;

  /**
   * `during` threw `err`: unless it is a topology bug (fatal), the task takes no more records or
   * punctuation and commits nothing more from now on, and the engine is told.
   */
  stopAlone(during: QuarantinedTask['during'], err: unknown): void {
    if (during === 'punctuator' && this.repairs(err)) {
      // the loop hands the task back once it has stopped (`run`)
      this.running = false;
      this.notify();
      return;
    }
    if (!quarantines(err)) {
      this.host.fatal(err);
      return;
    }
    if (this.quarantine || this.closed) return;
    this.quarantine = quarantineOf(this.task.id, during, err);
    this.running = false;
    this.notify();
    this.host.quarantine(this, err);
  }

  start(): void {
    this.running = true;
    this.loop = this.run().catch((err) => this.host.fatal(err));
  }

  /**
   * Adds fetched records. After a rebalance the consumer fetches again from the committed offset:
   * records this task has already taken or still holds in its buffer are dropped, so none is
   * processed twice.
   */
  enqueue(records: readonly ConsumedRawRecord[]): void {
    // a quarantined task's partition is paused: what was in flight is fetched again by its next owner
    if (this.quarantine || this.closed) return;
    for (const r of records) {
      const key = tp(r.topic, r.partition);
      const pos = this.positions.get(key);
      if (pos !== undefined && r.offset < pos.offset) continue;
      if (r.offset < (this.fetched.get(key)?.next ?? 0)) continue;
      this.buffer.push(r);
      const f = this.fetched.get(key);
      if (!f || f.next < r.offset + 1)
        this.fetched.set(key, { next: r.offset + 1, end: Math.max(f?.end ?? 0, r.offset + 1) });
    }
    this.notify();
  }

  /**
   * Where each input partition starts: the offsets committed when the task opened. Records below
   * are skipped (a previous owner committed them after this member's consumer read its position).
   * Call before the first `enqueue`.
   */
  startAt(offsets: readonly TopicPartitionOffset[]): void {
    for (const o of offsets) this.positions.set(tp(o.topic, o.partition), o);
  }

  progress(topic: string, partition: number, next: number, end: number): void {
    const key = tp(topic, partition);
    const f = this.fetched.get(key);
    this.fetched.set(key, { next: Math.max(f?.next ?? 0, next), end: Math.max(end, f?.end ?? 0) });
    // a partition whose fetched tail is only transaction markers has nothing left to process
    const pos = this.positions.get(key);
    if (this.buffer.length === 0 && this.busy() === 0 && (pos === undefined || pos.offset < next)) {
      this.positions.set(key, { topic, partition, offset: next });
    }
  }

  backlog(): number {
    return this.buffer.length;
  }

  /** Key and value bytes of the records fetched and not yet taken. */
  backlogBytes(): number {
    return this.buffer.bytes;
  }

  busy(): number {
    return this.driver.busy() + this.punctuating.length + (this.committing ? 1 : 0);
  }

  isIdle(): boolean {
    if (this.buffer.length > 0 || this.busy() > 0 || this.outputs.size > 0 || this.dirty.size > 0) return false;
    if (hasPendingWrites(this.state)) return false;
    for (const [key, f] of this.fetched) if ((this.positions.get(key)?.offset ?? 0) < f.end) return false;
    return this.task.isIdle();
  }

  /**
   * The work this task could do now, for the engine's stall check: records fetched (or known to
   * be in its partitions) and not yet taken, records in flight, and whether outputs, positions or
   * store writes wait for a commit (or one is under way). What its processors hold on their own
   * clock (URLs waiting for a politeness gap) is not counted: it is not due.
   */
  pendingWork(): { unread: number; inFlight: number; uncommitted: boolean } {
    let unread = this.buffer.length;
    for (const [key, f] of this.fetched)
      unread += Math.max(0, f.end - Math.max(f.next, this.positions.get(key)?.offset ?? 0));
    const uncommitted = this.committing || this.outputs.size > 0 || this.dirty.size > 0 || hasPendingWrites(this.state);
    return { unread, inFlight: this.driver.busy(), uncommitted };
  }

  notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private async run(): Promise<void> {
    while (this.running) {
      if (this.buffer.length > 0) {
        const records = this.buffer.take();
        if (this.task.commitInputs === 'before') await this.takeBefore(records);
        else await this.processAfter(records);
        if (this.driver.rewinding) {
          if (this.repairing !== undefined) break;
          await this.rewind();
          continue;
        }
      }
      this.punctuate();
      const now = Date.now();
      if (this.task.commitRequested || now - this.lastCommit >= this.host.commitIntervalMs) await this.commit();
      if (!this.running) break;
      if (this.buffer.length === 0) {
        const waitMs = Math.max(
          5,
          Math.min(
            this.host.commitIntervalMs - (Date.now() - this.lastCommit),
            this.task.nextPunctuationIn(Date.now()),
          ),
        );
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          setTimeout(resolve, waitMs).unref();
        });
      } else {
        await new Promise((r) => setImmediate(r));
      }
    }
    if (this.repairing !== undefined && !this.closed) await this.handBack(this.repairing);
  }

  /** Whether `err` is corrupt state to repair (`host.repairable`); if so, from now on the task commits nothing. */
  private repairs(err: unknown): boolean {
    if (this.repairing !== undefined || this.quarantine || this.closed || !this.host.repairable?.(this, err))
      return false;
    this.repairing = err as CrawlError;
    return true;
  }

  /** A record failed once a processor had seen it: repaired (corrupt state) or poison, dead-lettered when it comes round. */
  private failedAfter(r: ConsumedRawRecord, err: Error): void {
    if (!this.repairs(err)) this.poison.mark(r, err);
  }

  /**
   * Corrupt state met while the task ran: once its punctuations have finished, its outputs and
   * pending store writes since the last commit are thrown away and it is handed back like a lost
   * task; its next opening wipes the stores, restores them from the changelogs and runs from the
   * committed offsets, the record that met the corruption included (store-repair.ts).
   */
  private async handBack(err: CrawlError): Promise<void> {
    while (this.punctuating.length > 0) await Promise.allSettled(this.punctuating);
    this.outputs.drain();
    discardPending(this.state);
    this.host.lost(this, err);
  }

  private punctuate(): void {
    try {
      for (const p of this.task.punctuate(Date.now())) {
        const tracked = p
          .catch((err) => this.stopAlone('punctuator', err))
          .finally(() => (this.punctuating = this.punctuating.filter((x) => x !== tracked)));
        this.punctuating.push(tracked);
      }
    } catch (err) {
      this.stopAlone('punctuator', err);
    }
  }

  private async processAfter(records: ConsumedRawRecord[]): Promise<void> {
    const taken = await this.driver.processInOrder(records, () => this.running);
    for (let i = 0; i < taken; i++) this.taken.push(records[i]!);
    // stopped part-way: the rest stays buffered (a graceful close commits only what was processed)
    if (taken < records.length) this.buffer.putBack(records.slice(taken));
  }

  /**
   * A record failed after a processor saw it (now poison): once the punctuations running have
   * finished, the outputs and pending store writes since the last commit are thrown away, the
   * positions go back to the first record taken since, those records are buffered again ahead of
   * the rest, and a new StreamTask over the same stores takes them (task-rewind.ts).
   */
  private async rewind(): Promise<void> {
    while (this.punctuating.length > 0) await Promise.allSettled(this.punctuating);
    this.outputs.drain();
    for (const r of this.taken) {
      const key = tp(r.topic, r.partition);
      const pos = this.positions.get(key);
      if (pos === undefined || pos.offset > r.offset)
        this.positions.set(key, { topic: r.topic, partition: r.partition, offset: r.offset });
    }
    this.buffer.putBack(this.taken);
    this.taken = [];
    try {
      this.current = await rewindTask(this.current, this.state, this.rebuild!);
    } catch (err) {
      this.stopAlone('init', err);
      return;
    }
    this.driver = this.driverOf(this.current);
    this.host.log(`task ${this.name}: a record failed after it was processed in part; rewound to the last commit`);
    // the poison record comes round at once: its dead letter is committed before another failure rewinds again
    this.current.commitRequested = true;
  }

  /** Commits the taken positions before any record is processed: a crash loses work, never repeats it. */
  private async takeBefore(records: ConsumedRawRecord[]): Promise<void> {
    for (const r of records) this.advance(r);
    await this.commit();
    if (!this.running) return;
    await this.driver.startConcurrently(records, () => this.running);
  }

  private advance(r: ConsumedRawRecord): void {
    const key = tp(r.topic, r.partition);
    this.positions.set(key, { topic: r.topic, partition: r.partition, offset: r.offset + 1 });
    this.dirty.add(key);
  }

  /**
   * One transaction: outputs, changelog records and advanced input offsets. Waits for running
   * punctuators first (stateful tasks: their store writes belong to this commit). On failure the
   * task is lost to the engine: pending store writes are dropped and local state stays at the
   * last committed changelog offset. When the committed writes cannot be applied to the stores
   * for a resource fault (CS_DISK_FULL), the commit stands and the task is lost all the same
   * (`host.lost` with that error): its stores catch up from the changelog when it opens again.
   */
  async commit(): Promise<void> {
    if (this.committing || this.quarantine || this.repairing) return;
    this.committing = true;
    try {
      if (this.state.changelogged.length > 0) while (this.punctuating.length > 0) await Promise.all(this.punctuating);
      // a punctuator that failed meanwhile quarantined the task (or met corrupt state): nothing of it is committed
      if (this.quarantine || this.repairing) return;
      const now = Date.now();
      const records: OutputRecord[] = this.outputs.drain();
      this.taken = [];
      const prepared = prepareCommit(this.state, this.task.id.partition, now);
      for (const r of prepared.records) records.push(r);
      const offsets = [...this.dirty].map((k) => this.positions.get(k)!);
      this.dirty.clear();
      this.task.commitRequested = false;
      this.lastCommit = now;
      if (records.length === 0 && offsets.length === 0) return;
      let bases: Map<string, number>;
      const started = process.hrtime.bigint();
      try {
        // a 'before' task's outputs can never be made again (its inputs are committed): retried
        const retry = { task: this.name, stopped: () => this.closed, log: (l: string) => this.host.log(l) };
        bases = await (this.task.commitInputs === 'before'
          ? commitRetryingTransient(this.producer, records, this.host.groupId, offsets, retry)
          : this.producer.commit(records, this.host.groupId, offsets));
      } catch (err) {
        this.host.metrics.inc(M.commitsAborted);
        discardPending(this.state);
        this.running = false;
        this.host.lost(this, isCrawlError(err) ? err : new CrawlError('CS_KAFKA', String(err), { cause: err }));
        return;
      }
      this.host.metrics.inc(M.commits);
      this.host.metrics.observe(M.commitDuration, Number(process.hrtime.bigint() - started) / 1e9);
      try {
        applyCommitted(prepared, bases);
      } catch (err) {
        if (resourceFault(err) === undefined) throw err;
        // the transaction holds everything (outputs, changelog records, offsets): local state only
        // lags the changelog, and a RocksDB that failed a write refuses every later one until it is
        // reopened. So the task stops and is handed back like a lost one; its next opening restores
        // the stores from the changelog (paused meanwhile: the task manager marks it)
        discardPending(this.state);
        this.running = false;
        this.host.lost(this, err as CrawlError);
      }
    } finally {
      this.committing = false;
    }
  }

  /**
   * Stops processing; with `commit`, waits up to `graceMs` for work in flight and commits once
   * more (best effort: a fenced task's last commit fails harmlessly). Then closes processors,
   * stores, the RocksDB and the producer. Idempotent.
   */
  async close(commit: boolean, graceMs = 5_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.running = false;
    this.notify();
    await this.loop;
    this.task.suspend();
    if (commit && !this.quarantine && !this.repairing) {
      await graceWait(() => this.driver.busy(), graceMs);
      await this.commit().catch(() => undefined);
    } else discardPending(this.state);
    await closeTaskState(this.state, this.task);
    await this.producer.close().catch(() => undefined);
  }

  private closed = false;
}

/** The key of a topic partition in this engine's maps (the runtime's `rangeKey`). */
export const tp = rangeKey;
