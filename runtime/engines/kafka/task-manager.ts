import type { Logger } from '../../../core/logger.js';
import type { Metrics } from '../../../core/metrics.js';
import { taskIdString } from '../../../core/ids.js';
import type { ChangelogSource } from '../../changelog-source.js';
import type { DeadLetters } from '../../dead-letter.js';
import type { QuarantinedTask, TaskStatus } from '../../engine.js';
import { describeQuarantine, quarantineOf, quarantines } from '../../task-quarantine.js';
import { TaskDirectory } from '../../task-directory.js';
import { StoreRepairs } from '../../store-repair.js';
import { TaskLifecycle } from '../../task-lifecycle.js';
import { closeTaskState, openTaskState, restoreTaskState, type LocalTaskState } from '../../task-state.js';
import { StreamTask } from '../../task.js';
import type { SerdeSet } from '../../serdes.js';
import type { Subtopology, Topology } from '../../topology.js';
import type { GroupConsumer, TopicPartitionOffset, TransactionalProducer } from './kafka-port.js';
import { KafkaTask, type KafkaTaskHost } from './kafka-task.js';
import { RejoinSchedule } from './rejoin-schedule.js';
import { OrphanWatch } from './orphan-watch.js';
import { brokerFault, TaskSlot } from './task-slot.js';
import { PAUSE_RETRY_MS, resourceFault, type PauseReason, type TaskPauses } from '../../resource-pause.js';
import { PROCESS_MEMORY_KEY } from '../../process-memory.js';
import type { MemoryBudget } from '../../../state/memory-budget.js';

/**
 * How long a member waits before it fences the producer of a partition it did not hold: the
 * partition's previous owner, if alive, got the same rebalance and closes its task with a commit
 * of the work in flight (kafkajs' eager protocol has no revocation callback that would make it
 * commit before the join; KAFKA.md, "Fencing"). A commit later than this is fenced and its work
 * done again. The cost: a moved partition starts this much later, unless the group's description
 * shows no other member that owned it before the rebalance (a start, a dead member's partitions):
 * then there is no closing commit to wait for.
 */
export const HANDOVER_GRACE_MS = 1_500;

/** What the task manager needs of the cluster: the Kafka engine's port, or a scripted one in tests. */
export interface TaskPort {
  /** A producer with the task's transactional id: creating it fences every earlier owner. */
  transactionalProducer(transactionalId: string): Promise<TransactionalProducer>;
  /** The input offsets committed for the task's group (read after the fence: see topics.ts `committedInputs`). */
  committedInputs(sub: Subtopology, partition: number): Promise<TopicPartitionOffset[]>;
  /** The changelogs: ends read at each opening, and the restore. */
  readonly changelogs: ChangelogSource;
  /**
   * The partitions of `sub` that members other than `memberId` owned before the group's current
   * generation, as they said when they joined it. Without it every moved partition waits the
   * handover grace.
   */
  claimedByOthers?(sub: Subtopology, memberId: string): Promise<Set<number>>;
}

export interface TaskManagerOptions {
  readonly topology: Topology;
  readonly dataDir: string;
  /** The process's memory plan (`ProcessorContext.memory`): its RocksDB databases are claimed in it. */
  readonly memory?: MemoryBudget;
  readonly commitIntervalMs: number;
  /** Default HANDOVER_GRACE_MS. */
  readonly handoverGraceMs?: number;
  /** Default ORPHAN_CHECK_MS (orphan-watch.ts). */
  readonly orphanCheckMs?: number;
  /** The engine's dead letters, shared by its tasks (one rate limit for the log). */
  readonly deadLetters: DeadLetters;
  readonly serdes: SerdeSet;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly port: TaskPort;
  /** The consumer group of a sub-topology. */
  groupIdOf(sub: Subtopology): string;
  /** The transactional id of a task. */
  transactionalIdOf(sub: Subtopology, partition: number): string;
  /** The member's consumer of `sub`'s group, once it has joined. */
  consumerOf(sub: Subtopology): GroupConsumer | undefined;
  /** The engine's state: tasks open and commit only while it runs. */
  engineState(): 'new' | 'running' | 'stopping' | 'stopped';
  /** A fault no retry fixes: the engine stops. */
  fail(err: unknown): void;
  /** Called with each batch of changelog records restored: progress while a long restore runs. */
  onRestored(records: number): void;
  /**
   * `--state-cleanup-delay`: how long a task directory no task of this member uses stays on disk
   * (`TaskDirectory.removeUnused`); checked every delay (at least every second). Undefined: kept.
   */
  readonly stateCleanupDelayMs?: number;
  /** The engine's record of tasks paused by a resource fault (resource-pause.ts). */
  readonly pauses?: TaskPauses;
}

/**
 * The tasks of this member, like Kafka Streams' TaskManager: one slot per assigned partition,
 * opened (fence → committed offsets → open state → restore → run) when assigned, closed when
 * revoked; a task lost to a failed commit or a broker fault pauses its partition and makes the
 * member join its group again.
 */
export class TaskManager {
  /** The task of each `sub_partition` this member owns: opening, running or being closed. */
  private readonly slots = new Map<string, TaskSlot>();
  /** What this member's tasks share while they run here (`ProcessorContext.inProcess`). */
  private readonly inProcess = new Map<string, unknown>();
  /** The partitions of each sub-topology in this member's latest assignment. */
  readonly assigned = new Map<number, Set<number>>();
  /** Tasks (`sub_partition`) paused by a resource fault (`pause`), by name: their sub-topology id. */
  private readonly paused = new Map<string, number>();
  /** Per sub-topology id: when its group joins again after a lost task. */
  private readonly rejoins = new Map<number, RejoinSchedule>();
  /** The member's task directories (its standbys keep their copies there too). */
  readonly directory: TaskDirectory;
  /** Corrupt state met by this member's tasks, repaired by handing the task back (store-repair.ts). */
  private readonly repairs: StoreRepairs;
  /** Tasks opened: with the commit counter, part of the engine's progress. */
  opened = 0;
  private readonly cleaner: NodeJS.Timeout | undefined;
  private readonly orphans: OrphanWatch;
  /** The sub-topologies assigned so far, by id. */
  private readonly subs = new Map<number, Subtopology>();

  constructor(private readonly o: TaskManagerOptions) {
    this.repairs = new StoreRepairs(o.logger);
    if (o.memory) this.inProcess.set(PROCESS_MEMORY_KEY, o.memory);
    this.directory = new TaskDirectory(o.dataDir, {
      ...(o.memory ? { memory: o.memory } : {}),
      // a partition revoked and assigned back at once: its previous task may still be committing or restoring
      onWait: (dir) => this.say(`task ${dir.name} waits for its previous opening or closing on this member to let go`),
      onStale: (dir, unusedMs, staleAfterMs) =>
        this.o.logger.warn(
          `task ${dir.name}: its local state was last used ${Math.round(unusedMs / 1000)} s ago, longer than its changelogs keep a delete ` +
            `(delete.retention.ms ${staleAfterMs}): a delete may have been compacted away, so it is wiped and restored from the changelogs`,
        ),
    });
    const delay = o.stateCleanupDelayMs;
    // first after a whole delay, as Kafka Streams' cleaner: a restarted member's directories wait for its assignment
    if (delay !== undefined) this.cleaner = setInterval(() => this.cleanUpOrSay(delay), Math.max(delay, 1_000)).unref();
    this.orphans = new OrphanWatch(
      {
        assigned: this.assigned,
        slots: this.slots,
        subs: this.subs,
        running: () => this.o.engineState() === 'running',
        say: (l) => this.say(l),
        warn: (l) => this.o.logger.warn(l),
        rejoin: (sub) => this.scheduleRejoin(sub),
      },
      o.orphanCheckMs,
    );
  }

  private cleanUpOrSay(delayMs: number): void {
    try {
      this.cleanUp(delayMs);
    } catch (err) {
      // a directory that cannot be removed now (permissions, a disk fault) is tried again next time
      this.say(`cleaning up task directories: ${(err as Error).message}`);
    }
  }

  /**
   * Removes the task directories of partitions this member neither holds nor opens, unused for
   * more than `delayMs` (`TaskDirectory.removeUnused`); logs each. Returns the names removed.
   */
  cleanUp(delayMs: number, now = Date.now()): string[] {
    const removed = this.directory.removeUnused(delayMs, now, (id) => {
      const key = taskIdString(id);
      return this.slots.has(key) || (this.assigned.get(id.subtopology)?.has(id.partition) ?? false);
    });
    for (const name of removed)
      this.say(`removed the local state of task ${name}: not assigned to this member for over ${delayMs} ms`);
    return removed;
  }

  /** The slot of a partition's task, if this member owns it. */
  slot(sub: number, partition: number): TaskSlot | undefined {
    return this.slots.get(taskIdString({ subtopology: sub, partition }));
  }

  /** What this member holds of `sub`, or after a restart the partitions it has local state for: it gets them back. */
  owned(sub: Subtopology): number[] {
    return [...(this.assigned.get(sub.id) ?? this.directory.localPartitions(sub.id))];
  }

  /** The partitions of `sub` this member has local state for without holding them (left from an earlier assignment). */
  leftover(sub: Subtopology): number[] {
    const held = this.assigned.get(sub.id);
    return held === undefined ? [] : this.directory.localPartitions(sub.id).filter((p) => !held.has(p));
  }

  /**
   * Closes tasks whose partitions left this member, opens the new ones, resumes what was paused.
   * `memberId`: this member's id in the generation that assigned them (see `handoverWait`).
   */
  assign(sub: Subtopology, partitions: Set<number>, memberId?: string): void {
    if (this.o.engineState() !== 'running') return;
    const held = this.assigned.get(sub.id);
    this.assigned.set(sub.id, partitions);
    this.subs.set(sub.id, sub);
    for (const [key, slot] of this.slots) {
      if (slot.sub !== sub.id || partitions.has(slot.partition)) continue;
      // revoked: the slot goes at once (a task that is still opening sees it and closes unused)
      this.slots.delete(key);
      void slot.opening
        .then((t) => t?.close(true))
        .catch((err) => this.say(`closing task ${key}: ${(err as Error).message}`));
    }
    // a paused task whose partition left this member: its pause is its next owner's business
    for (const [name, id] of this.paused)
      if (id === sub.id && !partitions.has(Number(name.slice(name.indexOf('_') + 1)))) this.unpause(name, false);
    const consumer = this.o.consumerOf(sub);
    // asked once for the whole assignment, and only when a partition came from elsewhere
    let claims: Promise<Set<number> | undefined> | undefined;
    const claimed = (): Promise<Set<number> | undefined> =>
      (claims ??=
        memberId === undefined || this.o.port.claimedByOthers === undefined
          ? Promise.resolve(undefined)
          : this.o.port.claimedByOthers(sub, memberId).catch(() => undefined));
    for (const p of partitions) {
      const key = taskIdString({ subtopology: sub.id, partition: p });
      if (!this.slots.has(key)) {
        // in the map before it opens: an opening task checks it still owns the slot at every step
        const slot = new TaskSlot(sub.id, p, new TaskLifecycle(key));
        this.slots.set(key, slot);
        const handover = held?.has(p) === true ? undefined : this.handoverWait(p, claimed());
        slot.open(this.openTask(sub, p, slot, handover).catch((err: unknown) => this.openFailed(sub, p, slot, err)));
      }
      // a quarantined task's partition stays paused: this member keeps it, unprocessed
      if (consumer && !this.slots.get(key)?.quarantined)
        for (const topic of sub.sourceTopics) consumer.resume(topic, p);
    }
  }

  /**
   * Keeps `slot`'s partition on this member, paused and uncommitted, without a task: its init or
   * a punctuator threw (task-quarantine.ts). Handing it on would stop the next member the same way.
   */
  private quarantine(sub: Subtopology, slot: TaskSlot, q: QuarantinedTask, err: unknown): void {
    slot.quarantined = q;
    slot.task = undefined;
    this.o.logger.error(describeQuarantine(q, err));
    const consumer = this.o.consumerOf(sub);
    for (const topic of sub.sourceTopics) consumer?.pause(topic, slot.partition);
  }

  private openFailed(sub: Subtopology, p: number, slot: TaskSlot, err: unknown): undefined {
    slot.lifecycle.tryTo('closed');
    const state = this.o.engineState();
    // an opening cut short by stop() (its producer or admin closed underneath) is no failure
    if (state === 'stopping') return undefined;
    const reason = resourceFault(err);
    if (state === 'running' && reason !== undefined) {
      // its stores cannot open (or restore) on a full disk: the task is paused, and handed back as
      // after a broker fault, but only after a retry interval, so a disk full for long makes this
      // member join its group again every few seconds at most (the rejoin back-off then grows)
      this.pause(slot, reason, err as Error);
      setTimeout(() => {
        // revoked meanwhile: its pause ended with it (`assign`)
        if (this.o.engineState() === 'running' && this.slots.get(slot.name) === slot) this.drop(sub, p, slot);
      }, this.o.pauses?.retryMs ?? PAUSE_RETRY_MS).unref();
      return undefined;
    }
    if (state !== 'running' || !brokerFault(err)) {
      this.o.fail(err);
      return undefined;
    }
    // a broker fault while the task opened (a broker restarting refuses connections, a
    // coordinator moves): the member stays, and as after a lost task the partition pauses
    // (records fetched meanwhile were dropped) and the member joins its group again
    this.say(`task ${slot.name} could not open: ${(err as Error).message}; the member joins its group again`);
    this.drop(sub, p, slot);
    return undefined;
  }

  /**
   * Marks `slot`'s task paused by a resource fault (logged once, however often it is retried): its
   * stores could not apply a commit or open. The next opening that succeeds resumes it; a revoke
   * ends it (the partition's next owner is paused, or not, on its own).
   */
  private pause(slot: TaskSlot, reason: PauseReason, err: Error): void {
    this.paused.set(slot.name, slot.sub);
    this.o.pauses?.mark(`task ${slot.name}`, reason, err);
  }

  /** Ends the pause of task `name` (`sub_partition`) if any: resumed (one line), or cleared when it left this member. */
  private unpause(name: string, resumed: boolean): void {
    if (!this.paused.delete(name)) return;
    if (resumed) this.o.pauses?.resume(`task ${name}`);
    else this.o.pauses?.clear(`task ${name}`);
  }

  /**
   * Removes the slot, pauses the partition and makes the member join its group again. Nothing for
   * a slot that is no longer the partition's (revoked, perhaps assigned again to a new slot whose
   * task may run already): pausing then would stop that task's input with no rebalance coming to
   * resume it (a stale opening that failed after a revoke and re-assignment did so in a chaos run).
   */
  private drop(sub: Subtopology, partition: number, slot: TaskSlot): void {
    if (this.slots.get(slot.name) !== slot) return;
    this.slots.delete(slot.name);
    const consumer = this.o.consumerOf(sub);
    for (const topic of sub.sourceTopics) consumer?.pause(topic, partition);
    this.scheduleRejoin(sub);
  }

  /**
   * The wait before fencing partition `p`, which this member did not hold: the handover grace,
   * unless `claims` (the partitions other live members owned before this generation) shows that
   * no one else held it, and says so before the grace is over.
   */
  private async handoverWait(p: number, claims: Promise<Set<number> | undefined>): Promise<void> {
    const grace = this.o.handoverGraceMs ?? HANDOVER_GRACE_MS;
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, grace, undefined)));
    const known = await Promise.race([claims, graceOver]);
    if (known !== undefined && !known.has(p)) clearTimeout(timer);
    else await graceOver;
  }

  /**
   * Opens a task of an assigned partition; undefined when the partition was revoked meanwhile (a
   * later rebalance gave it to another member: this one must neither fence that owner nor commit).
   */
  private async openTask(
    sub: Subtopology,
    partition: number,
    slot: TaskSlot,
    handover: Promise<void> | undefined,
  ): Promise<KafkaTask | undefined> {
    const id = { subtopology: sub.id, partition };
    const { port } = this.o;
    // revoked (its slot removed) or revoked and assigned again (a new slot): this opening is over
    const stillAssigned = (): boolean => this.slots.get(slot.name) === slot;
    const { lifecycle } = slot;
    // a partition this member did not hold may come from a live member, which got the same
    // assignment and is closing its task with a last commit: that commit goes first, or its work
    // would be done again (HANDOVER_GRACE_MS, handoverWait)
    await handover;
    if (!stillAssigned()) {
      lifecycle.to('closed');
      return undefined;
    }
    // fence first: after this no earlier owner can commit, so the changelog ends read below are final
    const producer = await port.transactionalProducer(this.o.transactionalIdOf(sub, partition));
    if (!stillAssigned()) {
      lifecycle.to('closed');
      await producer.close().catch(() => undefined);
      return undefined;
    }
    lifecycle.to('restoring');
    // a failure below (a broker fault) leaves nothing open: the task is opened anew after a rejoin
    let state: LocalTaskState | undefined;
    let committed: TopicPartitionOffset[];
    try {
      // inputs below the offsets committed now (after the fence) are done and skipped: see committedInputs
      committed = await port.committedInputs(sub, partition);
      const dir = this.directory.task(id, await this.tombstoneRetention(sub));
      state = await openTaskState({
        id,
        sub,
        topology: this.o.topology,
        dir,
        source: port.changelogs,
        logger: this.o.logger,
        metrics: this.o.metrics,
      });
      // counted batch by batch: a restore of many minutes is progress, not a stall
      await restoreTaskState(state, port.changelogs, {
        metrics: this.o.metrics,
        onBatch: (n) => this.o.onRestored(n),
        say: (l) => this.say(l),
      });
    } catch (err) {
      if (state) await closeTaskState(state);
      await producer.close().catch(() => undefined);
      throw err;
    }
    let kafkaTask!: KafkaTask;
    const { stores } = state;
    const streamTask = (l: typeof lifecycle | undefined): StreamTask =>
      new StreamTask(
        id,
        sub,
        this.o.topology,
        { send: (t, p, k, v, ts, h) => kafkaTask.outputs.collect(t, p, k, v, ts, h) },
        stores,
        this.o.serdes,
        this.o.metrics,
        Date.now,
        this.o.logger.child({ task: slot.name }),
        l,
        undefined,
        this.inProcess,
      );
    const task = streamTask(lifecycle);
    // a rewind's new task: a lifecycle of its own (a closed one never runs again)
    kafkaTask = new KafkaTask(task, producer, state, this.taskHost(sub), () => streamTask(undefined));
    kafkaTask.startAt(committed);
    if (this.o.engineState() !== 'running') {
      // stopping (SIGTERM during a restore): nothing ran, so nothing to commit; the next owner restores
      await kafkaTask.close(false);
      return undefined;
    }
    if (!stillAssigned()) {
      this.say(`task ${slot.name} was revoked while it opened; closed unused`);
      await kafkaTask.close(false);
      return undefined;
    }
    try {
      task.init();
    } catch (err) {
      // corrupt state met by init (a scan of its stores): handed back like a lost task, whose next
      // opening wipes the RocksDB and restores it from the changelogs (store-repair.ts)
      if (this.repairs.claim(slot.name, err, this.directory.task(id), sub.stores)) {
        this.drop(sub, partition, slot);
        await kafkaTask.close(false);
        return undefined;
      }
      if (!quarantines(err)) {
        await kafkaTask.close(false);
        throw err;
      }
      this.quarantine(sub, slot, quarantineOf(id, 'init', err), err);
      await kafkaTask.close(false);
      return undefined;
    }
    kafkaTask.start();
    slot.task = kafkaTask;
    this.opened++;
    this.unpause(slot.name, true);
    return kafkaTask;
  }

  /** The shortest tombstone retention of `sub`'s changelogs: how long its local state may go unused and be trusted. */
  async tombstoneRetention(sub: Subtopology): Promise<number> {
    let ms = Infinity;
    for (const store of sub.stores)
      if (store.changelog)
        ms = Math.min(
          ms,
          await this.o.port.changelogs.tombstoneRetentionMs(this.o.topology.changelogTopic(store.name)),
        );
    return ms;
  }

  private taskHost(sub: Subtopology): KafkaTaskHost {
    return {
      groupId: this.o.groupIdOf(sub),
      commitIntervalMs: this.o.commitIntervalMs,
      deadLetters: this.o.deadLetters,
      ...(this.o.pauses !== undefined ? { pauses: this.o.pauses } : {}),
      metrics: this.o.metrics,
      log: (l) => this.say(l),
      lost: (task, err) => {
        const key = task.name;
        const slot = this.slots.get(key);
        // a task already revoked by a rebalance: its last commit may fail in any way (its successor,
        // perhaps on this very instance, fences it mid-transaction); the successor redoes the work
        if (slot?.task !== task) {
          this.say(`revoked task ${key} could not commit (${err.code}); its successor redoes the work`);
          void task.close(false);
          return;
        }
        const reason = resourceFault(err);
        if (reason !== undefined) {
          // its commit stands, but its stores could not apply it (a full disk) and refuse every
          // write now: handed back as below, the next opening restores them from the changelogs
          this.pause(slot, reason, err);
          this.drop(sub, task.task.id.partition, slot);
          void task.close(false);
          return;
        }
        // a live task lost its commit: fenced (another member took the partition, or will) or a broker
        // fault. Its fetch position is past uncommitted records, so the member joins its group again:
        // every partition is assigned anew and read again from its committed offset (Kafka Streams
        // does the same on a migrated task); until then the partition is paused
        this.say(`task ${key} lost (${err.code}): ${err.message}; the member joins its group again`);
        this.drop(sub, task.task.id.partition, slot);
        void task.close(false);
      },
      quarantine: (task, err) => {
        const slot = this.slots.get(task.name);
        if (slot?.task === task && task.quarantined) this.quarantine(sub, slot, task.quarantined, err);
        void task.close(false);
      },
      repairable: (task, err) => this.repairs.claim(task.name, err, this.directory.task(task.task.id), sub.stores),
      fatal: (err) => this.o.fail(err),
    };
  }

  /** The tasks of this member stopped alone (task-quarantine.ts), by sub-topology and partition. */
  quarantined(): QuarantinedTask[] {
    const out: QuarantinedTask[] = [];
    for (const slot of this.slots.values()) if (slot.quarantined) out.push(slot.quarantined);
    return out.sort((a, b) => a.subtopology - b.subtopology || a.partition - b.partition);
  }

  /** Joins the sub-topology's group again after a back-off (rejoin-schedule.ts); a member that cannot for five minutes stops. */
  private scheduleRejoin(sub: Subtopology): void {
    let schedule = this.rejoins.get(sub.id);
    if (!schedule) {
      const group = this.o.groupIdOf(sub);
      schedule = new RejoinSchedule({
        rejoin: () => this.o.consumerOf(sub)?.rejoin() ?? Promise.resolve(),
        running: () => this.o.engineState() === 'running',
        retrying: (err) => this.say(`group ${group}: ${(err as Error).message}; trying again`),
        giveUp: (err) => this.o.fail(err),
      });
      this.rejoins.set(sub.id, schedule);
    }
    schedule.request();
  }

  /** The running tasks (a slot still opening has none). */
  *running(): Iterable<KafkaTask> {
    for (const { task } of this.slots.values()) if (task) yield task;
  }

  /** True when every slot has a running task with nothing left to do. */
  idle(): boolean {
    // a quarantined partition takes no more work until a restart: waiting for it would never end
    for (const { task, quarantined } of this.slots.values())
      if (!quarantined && (!task || !task.isIdle())) return false;
    return true;
  }

  /**
   * Closes every task: with `commit`, each commits once more after up to `graceMs` of work in
   * flight (call it while still a group member, so no one fences that commit); without, nothing
   * is committed and the next owner redoes it. A task still opening stops there.
   */
  async closeAll(commit: boolean, graceMs?: number): Promise<void> {
    clearInterval(this.cleaner);
    this.orphans.stop();
    const tasks = await Promise.all([...this.slots.values()].map((s) => s.opening.catch(() => undefined)));
    this.slots.clear();
    await Promise.allSettled(tasks.map((t) => t?.close(commit, graceMs)));
  }

  /** Assigned tasks, and how many of them are not running yet. */
  counts(): { tasks: number; restoring: number } {
    let tasks = 0;
    let restoring = 0;
    for (const [sub, partitions] of this.assigned)
      for (const p of partitions) {
        tasks++;
        const slot = this.slot(sub, p);
        if (!slot?.quarantined && slot?.state !== 'running') restoring++;
      }
    return { tasks, restoring };
  }

  /** Every assigned task as `/status` lists it, by sub-topology and partition. */
  status(subtopologies: readonly Subtopology[], statusOf: (task: StreamTask) => TaskStatus): TaskStatus[] {
    const out: TaskStatus[] = [];
    for (const [sub, partitions] of this.assigned) {
      const spec = subtopologies.find((s) => s.id === sub);
      for (const p of [...partitions].sort((a, b) => a - b)) {
        const slot = this.slot(sub, p);
        out.push(
          slot?.task
            ? statusOf(slot.task.task)
            : slot?.quarantined
              ? {
                  task: slot.name,
                  subtopology: sub,
                  partition: p,
                  processors: spec?.nodes.filter((n) => n.kind === 'processor').map((n) => n.name) ?? [],
                  state: 'quarantined',
                }
              : {
                  task: taskIdString({ subtopology: sub, partition: p }),
                  subtopology: sub,
                  partition: p,
                  processors: spec?.nodes.filter((n) => n.kind === 'processor').map((n) => n.name) ?? [],
                  state: slot?.state ?? 'created',
                },
        );
      }
    }
    return out.sort((a, b) => a.subtopology - b.subtopology || a.partition - b.partition);
  }

  private say(line: string): void {
    this.o.logger.info(line);
  }
}
