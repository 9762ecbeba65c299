import type { Logger } from '../../../core/logger.js';
import type { QuarantinedTask } from '../../engine.js';
import type { EngineState } from '../../engine-base.js';
import type { OutputCollector } from '../../output-collector.js';
import type { ConsumedRawRecord } from '../../record.js';
import { resourceFault, type TaskPauses } from '../../resource-pause.js';
import { StoreRepairs } from '../../store-repair.js';
import { describeQuarantine, quarantineOf, quarantines } from '../../task-quarantine.js';
import { initialized, rewindTask, type PoisonRecords } from '../../task-rewind.js';
import { closeTaskState, discardPending, type LocalTaskState } from '../../task-state.js';
import type { StreamTask } from '../../task.js';
import type { Subtopology } from '../../topology.js';
import type { TaskRunner } from './task-runner.js';

/** Written (a delete of a key no store uses, fsynced) to probe a reopened task database for space. */
const PROBE_KEY = Buffer.from('\u0000probe');

/** Why a task's stores are closed and opened again while the engine runs. */
export type ReopenCause = 'disk-full' | 'corrupt';

/**
 * A task of the embedded engine: its collector for its life, its state until its RocksDB refuses
 * writes (a full disk, a corrupt block: it is then opened again), its StreamTask and runner until
 * it is rewound.
 */
export interface OpenTask {
  readonly sub: Subtopology;
  state: LocalTaskState;
  /** The task's outputs and dead letters since the last commit: a rewind throws them away. */
  readonly outputs: OutputCollector;
  readonly poison: PoisonRecords;
  /** Its punctuations still running: a rewind waits for them. */
  readonly punctuating: Set<Promise<void>>;
  task: StreamTask;
  runner: TaskRunner;
  /** Set while the task is rewound (task-rewind.ts) or its stores reopened: commits, punctuation and retention pass it by. */
  rewinding: Promise<void> | undefined;
  /** Set once its init or a punctuator threw (task-quarantine.ts): it takes no more work and commits nothing. */
  quarantined: QuarantinedTask | undefined;
  /** The closing of a quarantined task while it runs; then whether its stores are closed. */
  closing: Promise<void> | undefined;
  closed: boolean;
}

/** What task recovery needs of the embedded engine. */
export interface RecoveryHost {
  readonly logger: Logger;
  readonly pauses: TaskPauses;
  state(): EngineState;
  say(line: string): void;
  /** Fails the engine (a topology bug, a recovery that itself failed). */
  fail(err: unknown): void;
  requestCommit(): void;
  /** The engine's commits paused by a full disk, while they are: a runner reads the log only after. */
  recovering(): Promise<void> | undefined;
  /** Whether the log's last write failed (it is reopened before anything reads it again). */
  logBroken(): boolean;
  /** Opens (restoring) the stores of `sub`'s task on `partition`. */
  openState(sub: Subtopology, partition: number): Promise<LocalTaskState>;
  /** A new StreamTask of `open` over its current stores. */
  streamTask(open: OpenTask): StreamTask;
  /** A new runner of `open`'s current task, from its group's committed positions. */
  runnerOf(open: OpenTask): TaskRunner;
}

/**
 * The embedded engine's task-level state machine for what goes wrong while a task runs: a record
 * that fails part-way (rewind), an init or punctuator that throws (quarantine), stores that cannot
 * apply a commit for a full disk or were found corrupt (closed and opened again). Each stops the
 * task at once, waits for its work in flight, throws away what it did since the last commit, and
 * either runs it again from its committed positions or keeps it stopped; the other tasks go on.
 * At most one of these runs per task at a time (`OpenTask.rewinding` / `closing`). Not
 * thread-safe; one per engine.
 */
export class TaskRecovery {
  /** Corrupt state met by a running task, repaired by opening its stores again (store-repair.ts). */
  private readonly repairs: StoreRepairs;

  constructor(private readonly host: RecoveryHost) {
    this.repairs = new StoreRepairs(host.logger);
  }

  /**
   * `record` failed after a processor saw it: the task stops taking records at once and, once
   * its records and punctuations in flight have finished, throws away its outputs and pending
   * writes, runs again as a new task over its stores from its committed positions, and
   * dead-letters the record when it comes round (task-rewind.ts). Commits pass the task by
   * meanwhile, so nothing of what is thrown away becomes durable.
   */
  rewind(open: OpenTask, record: ConsumedRawRecord, error: Error): void {
    if (open.quarantined) return;
    if (this.repaired(open, error)) return;
    open.poison.mark(record, error);
    open.runner.halt();
    open.rewinding ??= this.rewound(open)
      .catch((err: unknown) => this.host.fail(err))
      .finally(() => (open.rewinding = undefined));
  }

  private async rewound(open: OpenTask): Promise<void> {
    const { host } = this;
    await open.runner.quiesce();
    while (open.punctuating.size > 0) await Promise.allSettled([...open.punctuating]);
    // failing: the shutdown closes the task as it is, and nothing more is committed
    if (host.state() === 'stopped' || open.quarantined) return;
    open.outputs.drain();
    try {
      open.task = await rewindTask(open.task, open.state, () => host.streamTask(open));
    } catch (err) {
      // the new task's init threw: the task is quarantined (its old one is closed already)
      this.stopAlone(open, 'init', err);
      return;
    }
    // its runner reads positions from the log: not while a full disk has it closed
    await host.recovering();
    open.runner = host.runnerOf(open);
    host.say(`task ${open.task.name}: a record failed after it was processed in part; rewound to the last commit`);
    if (host.recovering()) open.runner.hold();
    if (host.state() === 'running') open.runner.start();
    // the poison record comes round soon: its dead letter is committed before any other failure rewinds again
    host.requestCommit();
  }

  /** Resolves once no task of `tasks` is being rewound, reopened or closed by a quarantine. */
  async settled(tasks: readonly OpenTask[]): Promise<void> {
    for (;;) {
      const pending = tasks.flatMap((t) => [t.rewinding, t.closing].filter((p) => p !== undefined));
      if (pending.length === 0) return;
      await Promise.allSettled(pending);
    }
  }

  /**
   * The task's `init` or a punctuator threw `err`: corrupt state is repaired by opening the task's
   * stores again (`repaired`); otherwise, unless it is a topology bug (fatal), the task is
   * quarantined (task-quarantine.ts). At once it takes no more records or punctuation and
   * commits nothing more; once its work in flight has finished, its outputs and pending writes
   * are thrown away and its processors and stores closed. Its committed input positions stay, so
   * retention keeps its input for a restart. The other tasks go on.
   */
  stopAlone(open: OpenTask, during: QuarantinedTask['during'], err: unknown): void {
    const { host } = this;
    if (this.repaired(open, err)) return;
    if (!quarantines(err)) {
      host.fail(err);
      return;
    }
    if (open.quarantined || host.state() === 'stopped') return;
    open.quarantined = quarantineOf(open.task.id, during, err);
    host.logger.error(describeQuarantine(open.quarantined, err));
    open.runner.halt();
    open.closing = this.closeQuarantined(open)
      .catch((e: unknown) => host.say(`closing quarantined task ${open.task.name}: ${(e as Error).message}`))
      .finally(() => (open.closing = undefined));
  }

  private async closeQuarantined(open: OpenTask): Promise<void> {
    if (open.rewinding) await open.rewinding;
    await open.runner.quiesce();
    while (open.punctuating.size > 0) await Promise.allSettled([...open.punctuating]);
    open.outputs.drain();
    discardPending(open.state);
    // a processor whose init threw may fail to close too: its stores close all the same
    await open.task.close().catch(() => undefined);
    await closeTaskState(open.state);
    open.closed = true;
  }

  /**
   * `open`'s stores failed to apply a durable commit with a full disk: its RocksDB refuses every
   * write now. The task stops taking records; once those in flight have finished, its work since
   * the commit is thrown away, its processors and stores are closed, and every PAUSE_RETRY_MS its
   * stores are opened again, restored from the changelogs up to the last commit (which holds what
   * the failed write lacked) and probed with an fsynced write; then the task runs again from its
   * committed positions, as after a rewind (task-rewind.ts). Paused meanwhile, the others go on.
   * With `cause` 'corrupt' (a read found the RocksDB corrupt: store-repair.ts) the stores are
   * opened again at once, the opening wiping and restoring them, with no pause.
   */
  storesFailed(open: OpenTask, err: Error, cause: ReopenCause = 'disk-full'): void {
    if (open.quarantined || open.rewinding) return;
    open.runner.halt();
    open.rewinding = this.reopenStores(open, err, cause)
      .catch((e: unknown) => this.host.fail(e))
      .finally(() => (open.rewinding = undefined));
  }

  /**
   * Whether `err`, met by a record, a punctuator or the init of `open`, is corrupt state that opening its
   * stores again repairs (store-repair.ts); if so that is under way: as after a full disk, without
   * the wait for space, and the record is processed again rather than dead-lettered.
   */
  private repaired(open: OpenTask, err: unknown): boolean {
    if (open.rewinding || open.quarantined || this.host.state() !== 'running') return false;
    if (!this.repairs.claim(open.task.name, err, open.state.dir, open.sub.stores)) return false;
    this.storesFailed(open, err as Error, 'corrupt');
    return true;
  }

  private async reopenStores(open: OpenTask, err: Error, cause: ReopenCause): Promise<void> {
    const { host } = this;
    await open.runner.quiesce();
    while (open.punctuating.size > 0) await Promise.allSettled([...open.punctuating]);
    if (host.state() === 'stopped' || open.quarantined) return;
    open.outputs.drain();
    discardPending(open.state);
    await open.task.close().catch(() => undefined);
    const partition = open.state.id.partition;
    const what = `task ${open.task.name}`;
    // the close reports the write error that broke the database; its files are released all the same
    await closeTaskState(open.state).catch(() => undefined);
    let fault = err;
    // a corrupt store is opened again at once (the opening repairs it); a full disk waits for space first
    let wait = cause === 'disk-full';
    for (;;) {
      const going = wait
        ? await host.pauses.wait(what, 'disk-full', fault, () => host.state() === 'running')
        : host.state() === 'running';
      wait = true;
      if (!going) {
        open.closed = true;
        return;
      }
      // the restore reads the log: not while it is being reopened
      if (host.logBroken()) continue;
      let state: LocalTaskState | undefined;
      try {
        state = await host.openState(open.sub, partition);
        state.db.write([{ key: PROBE_KEY, value: null }], { sync: true });
        open.state = state;
        break;
      } catch (e) {
        if (state !== undefined) await closeTaskState(state).catch(() => undefined);
        if (resourceFault(e) === undefined) throw e;
        fault = e as Error;
      }
    }
    try {
      open.task = await initialized(() => host.streamTask(open));
    } catch (e) {
      // as after a rewind: the new task's init threw, and the task is quarantined
      host.pauses.clear(what);
      this.stopAlone(open, 'init', e);
      return;
    }
    open.runner = host.runnerOf(open);
    host.pauses.resume(what);
    host.say(
      `${what}: its stores reopened ${cause === 'disk-full' ? 'after a full disk' : 'and restored after a corrupt read'}; it runs again from the last commit`,
    );
    if (host.recovering()) open.runner.hold();
    if (host.state() === 'running') open.runner.start();
    host.requestCommit();
  }
}
