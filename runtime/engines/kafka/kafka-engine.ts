import { M } from '../../../core/metric-catalogue.js';
import { silentLogger, type Logger } from '../../../core/logger.js';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Engine, EngineHealth, QueryAnswer, QueryRequest, TaskStatus } from '../../engine.js';
import { answerQuery, queryTarget, statusOf } from '../../task-query.js';
import { CrawlError } from '../../../core/errors.js';
import { Metrics } from '../../../core/metrics.js';
import { partitionFor } from '../../partitioner.js';
import type { StreamRecord } from '../../record.js';
import { buildSerdes, type SerdeSet } from '../../serdes.js';
import { StreamTask } from '../../task.js';
import type { Subtopology, Topology } from '../../topology.js';
import { recoverTaskDir } from '../../replay/swap.js';
import { ConfluentSchemaRegistry } from './confluent-registry.js';
import { KafkaPort, type GroupConsumer, type KafkaAdmin } from './kafka-port.js';
import type { ClusterSecurity } from './kafka-security.js';
import type { KafkaCompression } from './kafka-codecs.js';
import { TaskLifecycle } from '../../task-lifecycle.js';
import { KafkaTask, tp, type KafkaTaskHost } from './kafka-task.js';
import { RejoinSchedule } from './rejoin-schedule.js';
import { closeTaskStores } from '../../task-stores.js';
import { openTaskState, restoreTaskState, type LocalTaskState } from './task-state.js';
import { claimStateDir } from './cluster-identity.js';
import { brokerFault, sleep, whileHeartbeating, type TaskSlot } from './task-slot.js';
import { checkTopics, committedInputs, deadLetterTopic } from './topics.js';
import { describePending } from '../../stall-watch.js';

export interface KafkaEngineOptions {
  readonly brokers: readonly string[];
  /** Confluent-compatible registry base URL (Apicurio: `.../apis/ccompat/v7`). */
  readonly registryUrl: string;
  /** Local state: one RocksDB (and WARC dir) per task; one running engine per directory. */
  readonly dataDir: string;
  /** The sub-topologies this instance runs (a role); all when omitted. */
  readonly runs?: (sub: Subtopology) => boolean;
  readonly commitIntervalMs?: number;
  /** Consumer-group session timeout: how soon a dead instance's partitions move. */
  readonly sessionTimeoutMs?: number;
  /** Where the engine's lines go (and, bound to each task, its processors'); default silent. */
  readonly logger?: Logger;
  /** TLS/SASL to the brokers and credentials of the registry; default PLAINTEXT, no credentials. */
  readonly security?: ClusterSecurity;
  /** The codec of every batch the engine produces; default lz4 (kafka-codecs.ts). */
  readonly compression?: KafkaCompression;
}

/** The consumer group of a sub-topology: `<app>-<its processors, joined by +>`, e.g. `crawlstream-frontier`. */
export function groupIdOf(topology: Topology, sub: Subtopology): string {
  return `${topology.applicationId}-${sub.nodes
    .filter((n) => n.kind === 'processor')
    .map((n) => n.name)
    .join('+')}`;
}

/** The transactional id of a task: `<app>-<subtopology>_<partition>`; a new owner fences the old one. */
export function transactionalIdOf(topology: Topology, subtopology: number, partition: number): string {
  return `${topology.applicationId}-${subtopology}_${partition}`;
}

const HIGH_WATER = 2_000;

/**
 * Runs a Topology on Kafka. Each sub-topology is a consumer group; a task is created when its
 * partition is assigned: its transactional producer fences the previous owner, its changelogged
 * stores catch up from `<app>-<store>-changelog` (from the local checkpoint on), then it processes.
 * Commits are per task, one transaction each (see KafkaTask). Topics must exist (`topics create`).
 */
export class KafkaEngine implements Engine {
  readonly name = 'kafka' as const;
  readonly metrics = new Metrics();
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private rejectDone!: (err: unknown) => void;
  private port!: KafkaPort;
  /** One admin client for the engine's life: committed offsets at each task's opening. */
  private admin!: KafkaAdmin;
  private serdes!: SerdeSet;
  /** Per sub-topology id: when its group joins again after a lost task. */
  private readonly rejoins = new Map<number, RejoinSchedule>();
  private readonly consumers: GroupConsumer[] = [];
  /** The task of each `sub_partition` this member owns: opening, running or being closed. */
  private readonly slots = new Map<string, TaskSlot>();
  /** The partitions of each sub-topology in this member's latest assignment. */
  private readonly assigned = new Map<number, Set<number>>();
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private failed = false;
  /** The built topology, for routing queries (set by start). */
  private subtopologies: readonly Subtopology[] = [];
  /** The fatal error's message, which `/healthz` gives as its reason. */
  private failure: string | undefined;
  /** Per sub-topology id: why its consumer is down, from its crash until kafkajs has joined it again. */
  private readonly crashed = new Map<number, string>();
  /** Records handed to tasks, changelog records restored, tasks opened: with the commit counter, the engine's progress. */
  private fetchedRecords = 0;
  private restored = 0;
  private opened = 0;

  constructor(
    private readonly topology: Topology,
    private readonly options: KafkaEngineOptions,
  ) {
    this.done = new Promise((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.done.catch(() => undefined);
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new CrawlError('CS_INTERNAL', 'engine already started');
    mkdirSync(this.options.dataDir, { recursive: true });
    const subtopologies = this.topology.build();
    this.subtopologies = subtopologies;
    this.port = new KafkaPort(
      this.options.brokers,
      this.topology.applicationId,
      (l) => this.say(l),
      this.options.security?.kafka,
      this.topology,
      this.options.compression,
    );
    try {
      this.admin = await this.port.admin();
      await checkTopics(this.admin, this.topology, this.options.brokers);
      const clusterId = await this.admin.clusterId();
      const claim = claimStateDir(this.options.dataDir, clusterId);
      if (claim.kind === 'wiped')
        (this.options.logger ?? silentLogger).warn(
          `the data dir ${this.options.dataDir} held task state of cluster ${claim.previous}, the brokers are cluster ${clusterId}: ` +
            `wiped its local state; every task restores from this cluster's changelogs`,
        );
      this.serdes = await buildSerdes(
        this.topology,
        new ConfluentSchemaRegistry(this.options.registryUrl, this.options.security?.registry),
      );
    } catch (err) {
      // nothing may stay connected, or the process would not exit with the error
      await this.port.close();
      throw err;
    }
    this.state = 'running';
    try {
      await this.joinGroups(subtopologies);
    } catch (err) {
      // a group that cannot be joined (its consumer crashed for good while joining) fails the
      // engine: the groups joined before it and their tasks close, and start() rejects with it
      await this.fail(err);
      throw err;
    }
    this.say(
      `kafka engine started on ${this.options.brokers.join(',')}: groups ${subtopologies
        .filter(this.options.runs ?? (() => true))
        .map((s) => groupIdOf(this.topology, s))
        .join(', ')}`,
    );
  }

  /** Joins the consumer group of each sub-topology this instance runs. */
  private async joinGroups(subtopologies: readonly Subtopology[]): Promise<void> {
    for (const sub of subtopologies.filter(this.options.runs ?? (() => true))) {
      const holder: { consumer?: GroupConsumer } = {};
      const consumer = await this.port.groupConsumer(
        {
          groupId: groupIdOf(this.topology, sub),
          topics: sub.sourceTopics,
          sessionTimeoutMs: this.options.sessionTimeoutMs ?? 10_000,
          // what this member holds, or after a restart the tasks it has local state for: it gets them back
          owned: () => [...(this.assigned.get(sub.id) ?? this.localPartitions(sub))],
        },
        {
          onAssignment: (assigned) => {
            // joined again after a crash kafkajs restarted it: consuming once more
            this.crashed.delete(sub.id);
            this.assign(sub, new Set(assigned.map((a) => a.partition)), holder.consumer);
          },
          onCrash: (err, restart) => this.consumerCrashed(sub, err, restart),
          onRecords: async (records, heartbeat) => {
            const key = `${sub.id}_${records[0]!.partition}`;
            const slot = this.slots.get(key);
            // a task restores before it runs: keep the membership alive meanwhile (kafkajs heartbeats only between batches)
            const task = slot && (await whileHeartbeating(slot.opening, heartbeat));
            if (!task) return;
            this.fetchedRecords += records.length;
            task.enqueue(records);
            while (task.backlog() > HIGH_WATER && this.state === 'running' && this.slots.get(key)?.task === task) {
              await sleep(100);
              await heartbeat();
            }
          },
          onProgress: (topic, partition, next, end) => {
            this.metrics.setGauge(M.consumerLag, 'engine', Math.max(0, end - next), `${topic},${partition}`);
            void this.slots
              .get(`${sub.id}_${partition}`)
              ?.opening.then((t) => t?.progress(topic, partition, next, end));
          },
        },
      );
      holder.consumer = consumer;
      this.consumers.push(consumer);
    }
  }

  /** The partitions of `sub` with a task directory under the data dir (state kept from an earlier run). */
  private localPartitions(sub: Subtopology): number[] {
    try {
      return readdirSync(join(this.options.dataDir, 'state'))
        .map((name) => /^(\d+)_(\d+)$/.exec(name))
        .filter((m): m is RegExpExecArray => m !== null && Number(m[1]) === sub.id)
        .map((m) => Number(m[2]));
    } catch {
      return [];
    }
  }

  /** Closes tasks whose partitions left this member, opens the new ones, resumes what was paused. */
  private assign(sub: Subtopology, partitions: Set<number>, consumer: GroupConsumer | undefined): void {
    if (this.state !== 'running') return;
    this.assigned.set(sub.id, partitions);
    for (const [key, slot] of this.slots) {
      const [s, p] = key.split('_').map(Number) as [number, number];
      if (s !== sub.id || partitions.has(p)) continue;
      // revoked: the slot goes at once (a task that is still opening sees it and closes unused)
      this.slots.delete(key);
      void slot.opening
        .then((t) => t?.close(true))
        .catch((err) => this.say(`closing task ${key}: ${(err as Error).message}`));
    }
    for (const p of partitions) {
      const key = `${sub.id}_${p}`;
      if (!this.slots.has(key)) {
        // in the map before it opens: an opening task checks it still owns the slot at every step
        const slot = { lifecycle: new TaskLifecycle(key) } as TaskSlot;
        this.slots.set(key, slot);
        slot.opening = this.openTask(sub, p, slot).catch((err: unknown) => {
          slot.lifecycle.tryTo('closed');
          // an opening cut short by stop() (its producer or admin closed underneath) is no failure
          if (this.state === 'stopping') return undefined;
          if (this.state !== 'running' || !brokerFault(err)) {
            void this.fail(err);
            return undefined;
          }
          // a broker fault while the task opened (a broker restarting refuses connections, a
          // coordinator moves): the member stays, and as after a lost task the partition pauses
          // (records fetched meanwhile were dropped) and the member joins its group again
          this.say(`task ${key} could not open: ${(err as Error).message}; the member joins its group again`);
          if (this.slots.get(key) === slot) this.slots.delete(key);
          const member = this.consumers[this.consumerIndex(sub)];
          for (const topic of sub.sourceTopics) member?.pause(topic, p);
          this.scheduleRejoin(sub);
          return undefined;
        });
      }
      if (consumer) for (const topic of sub.sourceTopics) consumer.resume(topic, p);
    }
  }

  /**
   * Opens a task of an assigned partition; undefined when the partition was revoked meanwhile (a
   * later rebalance gave it to another member: this one must neither fence that owner nor commit).
   */
  private async openTask(sub: Subtopology, partition: number, slot: TaskSlot): Promise<KafkaTask | undefined> {
    const id = { subtopology: sub.id, partition };
    const txId = transactionalIdOf(this.topology, sub.id, partition);
    // revoked (its slot removed) or revoked and assigned again (a new slot): this opening is over
    const stillAssigned = (): boolean => this.slots.get(`${sub.id}_${partition}`) === slot;
    const { lifecycle } = slot;
    if (!stillAssigned()) {
      lifecycle.to('closed');
      return undefined;
    }
    // fence first: after this no earlier owner can commit, so the changelog end below is final
    const producer = await this.port.transactionalProducer(txId);
    if (!stillAssigned()) {
      lifecycle.to('closed');
      await producer.close().catch(() => undefined);
      return undefined;
    }
    lifecycle.to('restoring');
    // a failure below (a broker fault) leaves nothing open: the task is opened anew after a rejoin
    let state: LocalTaskState | undefined;
    let committed: Awaited<ReturnType<typeof committedInputs>>;
    try {
      // inputs below the offsets committed now (after the fence) are done and skipped: see committedInputs
      committed = await committedInputs(this.admin, this.topology, groupIdOf(this.topology, sub), sub, partition);
      const taskDir = join(this.options.dataDir, 'state', `${sub.id}_${partition}`);
      // a `replay rebuild` that stopped mid-swap may have left the live copy as rocksdb.old-<pid>
      for (const line of recoverTaskDir(taskDir)) this.say(`task ${sub.id}_${partition}: ${line}`);
      state = await openTaskState({
        id,
        sub,
        topology: this.topology,
        taskDir,
        admin: this.admin,
        physicalTopic: (t) => this.port.naming.physicalTopic(t),
        logger: this.options.logger ?? silentLogger,
      });
      const started = Date.now();
      // counted batch by batch: a restore of many minutes is progress, not a stall
      const restored = await restoreTaskState(this.port, state, partition, this.metrics, (n) => (this.restored += n));
      if (restored > 0)
        this.say(`task ${sub.id}_${partition}: restored ${restored} changelog records in ${Date.now() - started} ms`);
    } catch (err) {
      if (state) await closeTaskStores(state);
      await producer.close().catch(() => undefined);
      throw err;
    }
    const { db, stores, changelogged } = state;
    let kafkaTask!: KafkaTask;
    const task = new StreamTask(
      id,
      sub,
      this.topology,
      { send: (t, p, k, v, ts, h) => kafkaTask.collect(t, p, k, v, ts, h) },
      stores,
      this.serdes,
      this.metrics,
      Date.now,
      (this.options.logger ?? silentLogger).child({ task: `${id.subtopology}_${id.partition}` }),
      lifecycle,
    );
    kafkaTask = new KafkaTask(task, producer, db, changelogged, this.taskHost(sub));
    kafkaTask.startAt(committed);
    if (this.state !== 'running') {
      // stopping (SIGTERM during a restore): nothing ran, so nothing to commit; the next owner restores
      await kafkaTask.close(false);
      return undefined;
    }
    if (!stillAssigned()) {
      this.say(`task ${sub.id}_${partition} was revoked while it opened; closed unused`);
      await kafkaTask.close(false);
      return undefined;
    }
    task.init();
    kafkaTask.start();
    slot.task = kafkaTask;
    this.opened++;
    return kafkaTask;
  }

  private taskHost(sub: Subtopology): KafkaTaskHost {
    return {
      groupId: groupIdOf(this.topology, sub),
      commitIntervalMs: this.options.commitIntervalMs ?? 200,
      deadLetterTopic: deadLetterTopic(this.topology.applicationId),
      metrics: this.metrics,
      log: (l) => this.say(l),
      lost: (task, err) => {
        const key = task.name;
        // a task already revoked by a rebalance: its last commit may fail in any way (its successor,
        // perhaps on this very instance, fences it mid-transaction); the successor redoes the work
        if (this.slots.get(key)?.task !== task) {
          this.say(`revoked task ${key} could not commit (${err.code}); its successor redoes the work`);
          void task.close(false);
          return;
        }
        // a live task lost its commit: fenced (another member took the partition, or will) or a broker
        // fault. Its fetch position is past uncommitted records, so the member joins its group again:
        // every partition is assigned anew and read again from its committed offset (Kafka Streams
        // does the same on a migrated task); until then the partition is paused
        this.say(`task ${key} lost (${err.code}): ${err.message}; the member joins its group again`);
        this.slots.delete(key);
        const consumer = this.consumers[this.consumerIndex(sub)];
        for (const topic of sub.sourceTopics) consumer?.pause(topic, task.task.id.partition);
        void task.close(false);
        this.scheduleRejoin(sub);
      },
      fatal: (err) => void this.fail(err),
    };
  }

  /** Joins the sub-topology's group again after a back-off (rejoin-schedule.ts); a member that cannot for five minutes stops. */
  private scheduleRejoin(sub: Subtopology): void {
    let schedule = this.rejoins.get(sub.id);
    if (!schedule) {
      const group = groupIdOf(this.topology, sub);
      schedule = new RejoinSchedule({
        rejoin: () => this.consumers[this.consumerIndex(sub)]?.rejoin() ?? Promise.resolve(),
        running: () => this.state === 'running',
        retrying: (err) => this.say(`group ${group}: ${(err as Error).message}; trying again`),
        giveUp: (err) => void this.fail(err),
      });
      this.rejoins.set(sub.id, schedule);
    }
    schedule.request();
  }

  private consumerIndex(sub: Subtopology): number {
    const subs = this.topology.build().filter(this.options.runs ?? (() => true));
    return subs.findIndex((s) => s.id === sub.id);
  }

  async produce(topic: string, records: readonly StreamRecord<string, unknown>[]): Promise<void> {
    if (this.state !== 'running')
      throw new CrawlError('CS_INTERNAL', `cannot produce to ${topic}: the engine is ${this.state}`);
    const spec = this.topology.topic(topic);
    const producer = await this.port.producer();
    try {
      await producer.send(
        records.map((r) => {
          const key = this.serdes.key(topic).serialize(r.key);
          return {
            topic,
            partition: partitionFor(key, spec.partitions),
            key,
            value: this.serdes.value(topic).serialize(r.value),
            timestamp: r.timestamp,
            ...(r.headers ? { headers: r.headers } : {}),
          };
        }),
      );
    } finally {
      await producer.close();
    }
  }

  /** True when every task of this instance has nothing buffered, in flight or uncommitted, and has processed up to the end it last fetched. */
  isIdle(): boolean {
    if (this.state !== 'running') return false;
    // a slot without a running task is still opening
    for (const { task } of this.slots.values()) if (!task || !task.isIdle()) return false;
    return true;
  }

  async stop(graceMs = 5_000): Promise<void> {
    if (this.state === 'stopped' || this.state === 'stopping') return this.done.catch(() => undefined);
    if (this.state === 'new') {
      this.state = 'stopped';
      this.resolveDone();
      return;
    }
    this.state = 'stopping';
    // commit while still a group member, so no one fences the last commit; then leave the groups.
    // A task still opening stops there (it closes what it opened and has nothing to commit).
    const tasks = (await Promise.all([...this.slots.values()].map((s) => s.opening.catch(() => undefined)))).filter(
      (t): t is KafkaTask => t !== undefined,
    );
    this.slots.clear();
    await Promise.all(tasks.map((t) => t.close(true, graceMs)));
    await Promise.allSettled(this.consumers.map((c) => c.close()));
    await this.admin.close().catch(() => undefined);
    await this.port.close();
    this.state = 'stopped';
    this.resolveDone();
  }

  /**
   * kafkajs' consumer of `sub` crashed (see GroupConsumerHandlers.onCrash). One that kafkajs
   * restarts (brokers unreachable past the retry budget) makes `/healthz` fail until it has joined
   * its group again, and the engine keeps its tasks: they are fenced or taken back by the next
   * assignment, like Kafka Streams replacing a dead StreamThread. One that kafkajs does not restart
   * fails the engine, like a StreamThread dying under Streams' default SHUTDOWN_CLIENT: this member
   * would consume nothing more, while its tasks kept running punctuators (a frontier dispatching
   * fetches) for partitions the group has given to others; exiting lets the orchestrator start a
   * fresh process, which restores from its checkpoints and joins again.
   */
  private consumerCrashed(sub: Subtopology, err: CrawlError, restart: boolean): void {
    if (this.state !== 'running') return;
    if (!restart) {
      void this.fail(err);
      return;
    }
    this.crashed.set(sub.id, err.message);
    this.say(`${err.message}; kafkajs restarts it`);
  }

  private async fail(err: unknown): Promise<void> {
    if (this.state === 'stopped') return;
    (this.options.logger ?? silentLogger).error(`fatal: ${(err as Error).stack ?? String(err)}`);
    this.state = 'stopped';
    this.failed = true;
    this.failure = err instanceof Error ? err.message : String(err);
    const tasks = await Promise.all([...this.slots.values()].map((s) => s.opening.catch(() => undefined)));
    this.slots.clear();
    // no final commit: whatever was not committed is redone by the next owner
    await Promise.allSettled(tasks.map((t) => t?.close(false)));
    await Promise.allSettled(this.consumers.map((c) => c.close()));
    await this.admin?.close().catch(() => undefined);
    await this.port?.close();
    this.rejectDone(err);
  }

  /**
   * Not live once failed or while a consumer is down after a crash. Progress: records fetched into
   * tasks, records taken for processing, changelog records restored, transactions committed, tasks
   * opened. Pending: assigned tasks not running, and each running task's unread input, records in
   * flight and uncommitted work (KafkaTask.pendingWork); what processors hold on their own clock
   * (a politeness gap) is not.
   */
  health(): EngineHealth {
    let tasks = 0;
    let restoring = 0;
    for (const [sub, partitions] of this.assigned) {
      for (const p of partitions) {
        tasks++;
        if (this.slots.get(`${sub}_${p}`)?.lifecycle.state !== 'running') restoring++;
      }
    }
    const running = this.state === 'running';
    let unread = 0;
    let inFlight = 0;
    let uncommitted = 0;
    if (running)
      for (const { task } of this.slots.values()) {
        if (!task) continue;
        const work = task.pendingWork();
        unread += work.unread;
        inFlight += work.inFlight;
        if (work.uncommitted) uncommitted++;
      }
    const pending = running ? describePending({ unread, inFlight, uncommitted, opening: restoring }) : undefined;
    const crash = [...this.crashed.values()][0];
    const reason = this.failure !== undefined ? `failed: ${this.failure}` : crash && `${crash}; kafkajs restarts it`;
    const m = this.metrics;
    return {
      live: !this.failed && this.crashed.size === 0,
      ready: running && restoring === 0,
      state: this.failed ? 'failed' : this.state,
      tasks,
      restoring,
      ...(reason !== undefined ? { reason } : {}),
      progress: this.fetchedRecords + this.opened + this.restored + m.total(M.recordsProcessed) + m.counter(M.commits),
      ...(pending !== undefined ? { pending } : {}),
    };
  }

  /** Answers for the partitions this member owns; for another partition says which one it is (`not-owned`). */
  query(request: QueryRequest): QueryAnswer {
    if (this.state === 'new') return { kind: 'unavailable', reason: 'the engine has not started' };
    const target = queryTarget(this.topology, this.subtopologies, request);
    if ('kind' in target) return target;
    const { sub, partition } = target;
    const owned = this.assigned.get(sub.id);
    if (owned === undefined || !owned.has(partition))
      return {
        kind: 'not-owned',
        partition,
        partitions: sub.partitions,
        owned: [...(owned ?? [])].sort((a, b) => a - b),
      };
    if (this.state !== 'running') return { kind: 'unavailable', partition, reason: `the engine is ${this.state}` };
    return answerQuery(this.slots.get(`${sub.id}_${partition}`)?.task?.task, partition, request);
  }

  taskStatus(): TaskStatus[] {
    const out: TaskStatus[] = [];
    for (const [sub, partitions] of this.assigned) {
      const spec = this.subtopologies.find((s) => s.id === sub);
      for (const p of [...partitions].sort((a, b) => a - b)) {
        const slot = this.slots.get(`${sub}_${p}`);
        out.push(
          slot?.task
            ? statusOf(slot.task.task)
            : {
                task: `${sub}_${p}`,
                subtopology: sub,
                partition: p,
                processors: spec?.nodes.filter((n) => n.kind === 'processor').map((n) => n.name) ?? [],
                state: slot?.lifecycle.state ?? 'created',
              },
        );
      }
    }
    return out.sort((a, b) => a.subtopology - b.subtopology || a.partition - b.partition);
  }

  private say(line: string): void {
    (this.options.logger ?? silentLogger).info(line);
  }
}

export { tp };
