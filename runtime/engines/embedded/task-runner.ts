import type { ConsumedRawRecord } from '../../record.js';
import { RecordDriver } from '../../record-driver.js';
import type { PoisonRecords } from '../../task-rewind.js';
import type { StreamTask } from '../../task.js';
import { graceWait } from '../../engine-base.js';
import type { EmbeddedLog } from './log-store.js';
import type { TaskPauses } from '../../resource-pause.js';

/** What a runner needs from its engine. */
export interface RunnerHost {
  readonly log: EmbeddedLog;
  /** Resolves once a commit that started after this call has completed. */
  nextCommit(): Promise<void>;
  requestCommit(): void;
  deadLetter(record: ConsumedRawRecord, error: unknown): void;
  /** An 'after' record failed after a processor saw it: the task is to be rewound (RecordDriverHost.rewind). */
  rewind(record: ConsumedRawRecord, error: Error): void;
  fatal(error: unknown): void;
  /** Where a task paused by a resource fault is recorded while its record is retried. */
  readonly pauses?: TaskPauses;
}

/**
 * Feeds one task from its input partitions: reads committed records in offset order, processes
 * them, and tracks the positions the next commit will record. For 'before' tasks it waits for the
 * positions of taken records to be committed before processing starts.
 */
export class TaskRunner {
  /** Next offset to read per input topic-partition. */
  readonly positions = new Map<string, { topic: string; partition: number; offset: number }>();
  private readonly driver: RecordDriver;
  private wake: (() => void) | undefined;
  private running = false;
  private loop: Promise<void> | undefined;
  /** Set while the engine holds the runner (`hold`): it takes no records until `release`. */
  private held = false;
  /** Resolves once the runner is halted or stopped: a wait for a commit ends there too. */
  private readonly halted: Promise<void>;
  private onHalt!: () => void;

  constructor(
    readonly task: StreamTask,
    readonly group: string,
    private readonly host: RunnerHost,
    private readonly pollBatch: number,
    /** Bytes of records read per poll (their frames), over all inputs; at least one record each. */
    private readonly pollBytes: number,
    /** The task's poison records, kept by the engine across rewinds. */
    poison: PoisonRecords,
  ) {
    this.driver = new RecordDriver(
      task,
      {
        advance: (r) => this.advance(r),
        deadLetter: (r, err) => host.deadLetter(r, err),
        rewind: (r, err) => host.rewind(r, err),
        fatal: (err) => host.fatal(err),
      },
      host.pauses,
      poison,
    );
    this.halted = new Promise((resolve) => (this.onHalt = resolve));
    for (const topic of task.subtopology.sourceTopics) {
      const partition = task.id.partition;
      const committed = host.log.committedPosition(group, topic, partition);
      // records below the start were removed by retention after being consumed
      const offset = Math.max(committed, host.log.startOffset(topic, partition));
      this.positions.set(`${topic}\u0000${partition}`, { topic, partition, offset });
    }
  }

  start(): void {
    this.running = true;
    this.loop = this.run().catch((err) => this.host.fatal(err));
  }

  /** Stops at once, without waiting: the engine is failing and nothing more may be processed. */
  halt(): void {
    this.running = false;
    this.onHalt();
    this.notify();
  }

  /**
   * Takes no more records until `release`: the engine cannot commit (its log's disk is full), so
   * work would only pile up in memory. Records started go on to their end; an 'after' batch stops
   * between records, the rest read again after the release. Positions stay as they are.
   */
  hold(): void {
    this.held = true;
  }

  /** Ends a `hold`: the runner reads from its positions again. */
  release(): void {
    this.held = false;
    this.notify();
  }

  /** Called by the engine when one of its partitions got new records. */
  notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Stops reading; resolves once the loop has ended and every record in flight has finished, however long that takes. */
  async quiesce(): Promise<void> {
    this.halt();
    await this.loop;
    await this.driver.whenIdle();
  }

  /** Stops reading; resolves when the loop has ended and work in flight has finished (or `graceMs` passed). */
  async stop(graceMs: number): Promise<void> {
    this.running = false;
    this.onHalt();
    this.notify();
    await this.loop;
    await graceWait(() => this.busy(), graceMs);
  }

  caughtUp(): boolean {
    if (this.busy() > 0) return false;
    for (const p of this.positions.values()) if (p.offset < this.host.log.endOffset(p.topic, p.partition)) return false;
    return true;
  }

  private poll(): ConsumedRawRecord[] {
    const out: ConsumedRawRecord[] = [];
    const share = Math.max(1, Math.floor(this.pollBatch / this.positions.size));
    const bytes = this.pollBytes / this.positions.size;
    for (const p of this.positions.values()) {
      out.push(...this.host.log.read(p.topic, p.partition, p.offset, share, bytes));
    }
    return out;
  }

  private async run(): Promise<void> {
    const taking = () => this.running && !this.held;
    while (this.running) {
      if (this.held) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      const records = this.poll();
      if (records.length === 0) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          // a safety net: never sleep for ever if a notification was missed
          setTimeout(resolve, 500).unref();
        });
        continue;
      }
      if (this.task.commitInputs === 'before') await this.runBefore(records);
      else await this.driver.processInOrder(records, taking);
      // let commits, punctuators and I/O run between batches
      await new Promise((r) => setImmediate(r));
    }
  }

  private async runBefore(records: ConsumedRawRecord[]): Promise<void> {
    for (const r of records) this.advance(r);
    this.waiting += records.length;
    this.host.requestCommit();
    // positions must be durable before any fetch starts, so a crash can never repeat one; a
    // halt ends the wait (a stop while the engine cannot commit), and then none is started
    await Promise.race([this.host.nextCommit(), this.halted]);
    this.waiting -= records.length;
    await this.driver.startConcurrently(records, () => this.running);
  }

  private waiting = 0;

  /** Records taken but not finished: awaiting their commit, or being processed. */
  busy(): number {
    return this.waiting + this.driver.busy();
  }

  private advance(r: ConsumedRawRecord): void {
    const p = this.positions.get(`${r.topic}\u0000${r.partition}`)!;
    p.offset = r.offset + 1;
  }
}
