import { M } from '../../../core/metric-catalogue.js';
import type { CrawlError } from '../../../core/errors.js';
import type { Logger } from '../../../core/logger.js';
import { mkdirSync } from 'node:fs';
import type { Engine, EngineHealth, QueryAnswer, QueryRequest, TaskStatus } from '../../engine.js';
import { answerQuery, queryTarget, statusOf } from '../../task-query.js';
import type { ConsumedRawRecord, StreamRecord } from '../../record.js';
import { buildSerdes, type SerdeSet } from '../../serdes.js';
import type { Subtopology, Topology } from '../../topology.js';
import { EngineBase, sleep } from '../../engine-base.js';
import { serializeFor } from '../../output-collector.js';
import { DeadLetters } from '../../dead-letter.js';
import { describePending } from '../../stall-watch.js';
import { ConfluentSchemaRegistry } from './confluent-registry.js';
import { KafkaPort, type GroupConsumer, type KafkaAdmin } from './kafka-port.js';
import type { ClusterSecurity } from './kafka-security.js';
import type { KafkaCompression } from './kafka-codecs.js';
import { KafkaChangelogSource } from './kafka-changelog-source.js';
import { claimStateDir } from './cluster-identity.js';
import { checkTopics, committedInputs, deadLetterTopicLimit, groupIdOf, transactionalIdOf } from './topics.js';
import { consumeLoop } from './consume-loop.js';
import { TaskManager } from './task-manager.js';
import { processMemory } from '../../process-memory.js';
import type { MemoryBudget } from '../../../state/memory-budget.js';
import { StandbyTasks } from './standby-tasks.js';
import { KAFKA_ENGINE_SETTINGS } from './engine-settings.js';

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
  /** How long a task directory of no partition this member holds stays on disk; default 10 min. */
  readonly stateCleanupDelayMs?: number;
  /** Where the engine's lines go (and, bound to each task, its processors'); default silent. */
  readonly logger?: Logger;
  /** TLS/SASL to the brokers and credentials of the registry; default PLAINTEXT, no credentials. */
  readonly security?: ClusterSecurity;
  /** The codec of every batch the engine produces; default lz4 (kafka-codecs.ts). */
  readonly compression?: KafkaCompression;
  /** How long a partition taken from a live member waits for its closing commit; default HANDOVER_GRACE_MS (task-manager.ts). */
  readonly handoverGraceMs?: number;
  /**
   * `--standby-replicas`: how many other members keep a standby copy of each task's stores,
   * following its changelogs, so a failover restores only the tail (standby-tasks.ts). Default 0.
   */
  readonly standbyReplicas?: number;
  /** How often standbys catch up with their changelogs; default STANDBY_CATCH_UP_MS (standby-tasks.ts). */
  readonly standbyCatchUpMs?: number;
}

/**
 * Runs a Topology on Kafka. Each sub-topology is a consumer group (its consume loop: consume-loop.ts);
 * a task is created when its partition is assigned (the task manager: task-manager.ts): its
 * transactional producer fences the previous owner, its changelogged stores catch up from
 * `<app>-<store>-changelog` (from the local checkpoint on), then it processes. Commits are per
 * task, one transaction each (see KafkaTask). Topics must exist (`topics create`).
 */
export class KafkaEngine extends EngineBase implements Engine {
  readonly name = 'kafka' as const;
  private port!: KafkaPort;
  /** One admin client for the engine's life: committed offsets and changelog ends at each task's opening. */
  private admin!: KafkaAdmin;
  private tasks!: TaskManager;
  /** This member's standby tasks; none without `standbyReplicas`. */
  private standbys: StandbyTasks | undefined;
  /** Per sub-topology id: the latest assignment whose standbys are being asked for (older answers are dropped). */
  private readonly standbyAsks = new Map<number, number>();
  private serdes!: SerdeSet;
  private registryComplainedAt = -Infinity;
  /** The member's consumer of each sub-topology's group, by sub-topology id. */
  private readonly consumers = new Map<number, GroupConsumer>();
  /** The built topology, for routing queries (set by start). */
  private subtopologies: readonly Subtopology[] = [];
  /** Per sub-topology id: why its consumer is down, from its crash until kafkajs has joined it again. */
  private readonly crashed = new Map<number, string>();
  /** Records handed to tasks, changelog records restored: with tasks opened and commits, the engine's progress. */
  private fetchedRecords = 0;
  private restored = 0;

  readonly memoryPlan: MemoryBudget;

  constructor(
    private readonly topology: Topology,
    private readonly options: KafkaEngineOptions,
  ) {
    super(options.logger);
    this.memoryPlan = processMemory(topology, this.logger);
  }

  async start(): Promise<void> {
    this.startOnce();
    mkdirSync(this.options.dataDir, { recursive: true });
    const subtopologies = this.topology.build();
    this.subtopologies = subtopologies;
    const port = new KafkaPort(
      this.options.brokers,
      this.topology.applicationId,
      (l) => this.say(l),
      this.options.security?.kafka,
      this.topology,
      this.options.compression,
    );
    this.port = port;
    try {
      const admin = await port.admin();
      this.admin = admin;
      await checkTopics(admin, this.topology, this.options.brokers);
      const deadLetterLimit = await deadLetterTopicLimit(admin, this.topology);
      if (deadLetterLimit.warning) this.logger.warn(deadLetterLimit.warning);
      const clusterId = await admin.clusterId();
      const claim = claimStateDir(this.options.dataDir, clusterId);
      if (claim.kind === 'wiped')
        this.logger.warn(
          `the data dir ${this.options.dataDir} held task state of cluster ${claim.previous}, the brokers are cluster ${clusterId}: ` +
            `wiped its local state; every task restores from this cluster's changelogs`,
        );
      const serdes = await buildSerdes(
        this.topology,
        new ConfluentSchemaRegistry(this.options.registryUrl, this.options.security?.registry),
      );
      this.tasks = new TaskManager({
        topology: this.topology,
        dataDir: this.options.dataDir,
        memory: this.memoryPlan,
        commitIntervalMs: this.options.commitIntervalMs ?? KAFKA_ENGINE_SETTINGS.commitIntervalMs.default,
        deadLetters: new DeadLetters(deadLetterLimit.topic, deadLetterLimit.maxBytes, this.metrics, (l) => this.say(l)),
        serdes,
        metrics: this.metrics,
        logger: this.logger,
        port: {
          transactionalProducer: (id) => port.transactionalProducer(id),
          committedInputs: (sub, p) => committedInputs(admin, this.topology, groupIdOf(this.topology, sub), sub, p),
          changelogs: new KafkaChangelogSource(port, admin, false),
          claimedByOthers: (sub, memberId) => admin.claimedByOthers(groupIdOf(this.topology, sub), memberId),
        },
        groupIdOf: (sub) => groupIdOf(this.topology, sub),
        transactionalIdOf: (sub, p) => transactionalIdOf(this.topology, sub.id, p),
        consumerOf: (sub) => this.consumers.get(sub.id),
        engineState: () => this.state,
        fail: (err) => void this.fail(err),
        onRestored: (n) => (this.restored += n),
        stateCleanupDelayMs: this.options.stateCleanupDelayMs ?? KAFKA_ENGINE_SETTINGS.stateCleanupDelayMs.default,
        pauses: this.pauses,
        ...(this.options.handoverGraceMs !== undefined ? { handoverGraceMs: this.options.handoverGraceMs } : {}),
      });
      this.serdes = serdes;
      if ((this.options.standbyReplicas ?? 0) > 0) {
        const tasks = this.tasks;
        this.standbys = new StandbyTasks({
          topology: this.topology,
          directory: tasks.directory,
          changelogs: new KafkaChangelogSource(port, admin, false),
          logger: this.logger,
          metrics: this.metrics,
          staleAfterMs: (sub) => tasks.tombstoneRetention(sub),
          ...(this.options.standbyCatchUpMs !== undefined ? { catchUpMs: this.options.standbyCatchUpMs } : {}),
        });
      }
    } catch (err) {
      // nothing may stay connected, or the process would not exit with the error
      await port.close();
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
      `kafka engine started on ${this.options.brokers.join(',')}: groups ${this.runs(subtopologies)
        .map((s) => groupIdOf(this.topology, s))
        .join(', ')}`,
    );
  }

  private runs(subtopologies: readonly Subtopology[]): Subtopology[] {
    return subtopologies.filter(this.options.runs ?? (() => true));
  }

  /**
   * The serdes learn the writer schemas of `records` they do not know; while the registry cannot
   * be asked, again every 1–10 s (said once a minute), until it can or the engine stops: a record
   * is never dead-lettered for a registry outage.
   */
  private async learnWriters(records: readonly ConsumedRawRecord[]): Promise<void> {
    const say = (line: string) => this.logger.warn(line);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.serdes.learnWriters(records, say);
      } catch (err) {
        if (this.state !== 'running') return;
        const now = Date.now();
        if (now - this.registryComplainedAt >= 60_000) {
          this.registryComplainedAt = now;
          say(`cannot read new writer schemas, retrying: ${(err as Error).message}`);
        }
        await sleep(Math.min(10_000, 1_000 * 2 ** attempt));
      }
    }
  }

  /** Joins the consumer group of each sub-topology this instance runs. */
  private async joinGroups(subtopologies: readonly Subtopology[]): Promise<void> {
    for (const sub of this.runs(subtopologies)) {
      const handlers = consumeLoop(sub, {
        manager: this.tasks,
        metrics: this.metrics,
        running: () => this.state === 'running',
        learnWriters: (records) => this.learnWriters(records),
        fetched: (n) => (this.fetchedRecords += n),
        assigned: (s, partitions, memberId) => {
          // joined again after a crash kafkajs restarted it: consuming once more
          this.crashed.delete(s.id);
          // a standby of a partition now active here closes first: the task opens on its copy
          for (const p of partitions) void this.standbys?.release(s.id, p);
          this.tasks.assign(s, partitions, memberId);
          if (this.standbys && memberId !== undefined) void this.learnStandbys(s, partitions, memberId);
        },
        crashed: (s, err, restart) => this.consumerCrashed(s, err, restart),
        consumer: () => this.consumers.get(sub.id),
      });
      const consumer = await this.port.groupConsumer(
        {
          groupId: groupIdOf(this.topology, sub),
          topics: sub.sourceTopics,
          sessionTimeoutMs: this.options.sessionTimeoutMs ?? KAFKA_ENGINE_SETTINGS.sessionTimeoutMs.default,
          // what this member holds, or after a restart the tasks it has local state for: it gets them back
          owned: () => this.tasks.owned(sub),
          // standbys and state left from earlier assignments: a partition that moves prefers them
          warm: () => [...new Set([...(this.standbys?.warm(sub.id) ?? []), ...this.tasks.leftover(sub)])],
          standbyReplicas: this.options.standbyReplicas ?? 0,
        },
        handlers,
      );
      this.consumers.set(sub.id, consumer);
    }
  }

  /**
   * Asks the group which standbys its leader gave this member with `active` (kafkajs hands a
   * member only its partitions) and keeps those; an answer overtaken by a newer assignment is
   * dropped. A group that cannot be asked (a broker fault) keeps the standbys it had.
   */
  private async learnStandbys(sub: Subtopology, active: ReadonlySet<number>, memberId: string): Promise<void> {
    const ask = (this.standbyAsks.get(sub.id) ?? 0) + 1;
    this.standbyAsks.set(sub.id, ask);
    const group = groupIdOf(this.topology, sub);
    for (let attempt = 1; ; attempt++) {
      try {
        const named = await this.admin.standbysOf(group, memberId);
        if (this.standbyAsks.get(sub.id) !== ask || this.state !== 'running') return;
        this.standbys?.set(sub, new Set(named.filter((p) => !active.has(p))));
        return;
      } catch (err) {
        if (attempt === 5 || this.state !== 'running') {
          this.logger.warn(
            `group ${group}: its standbys could not be read (${(err as Error).message}); kept as they were`,
          );
          return;
        }
        await sleep(1_000);
      }
    }
  }

  async produce(topic: string, records: readonly StreamRecord<string, unknown>[]): Promise<void> {
    this.checkProduce(topic);
    const producer = await this.port.producer();
    try {
      await producer.send(serializeFor(this.topology, this.serdes, topic, records));
    } finally {
      await producer.close();
    }
  }

  /** True when every task of this instance has nothing buffered, in flight or uncommitted, and has processed up to the end it last fetched. */
  isIdle(): boolean {
    return this.state === 'running' && this.tasks.idle();
  }

  async stop(graceMs = 5_000): Promise<void> {
    const nothing = this.beginStop();
    if (nothing) return nothing;
    // commit while still a group member, so no one fences the last commit; then leave the groups
    await this.tasks.closeAll(true, graceMs);
    await this.standbys?.closeAll();
    await Promise.allSettled([...this.consumers.values()].map((c) => c.close()));
    await this.admin.close().catch(() => undefined);
    await this.port.close();
    this.endStop();
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
    if (!this.beginFail(err)) return;
    // no final commit: whatever was not committed is redone by the next owner
    await this.tasks?.closeAll(false);
    await this.standbys?.closeAll();
    await Promise.allSettled([...this.consumers.values()].map((c) => c.close()));
    await this.admin?.close().catch(() => undefined);
    await this.port?.close();
    this.endFail(err);
  }

  /**
   * Not live once failed or while a consumer is down after a crash. Progress: records fetched into
   * tasks, records taken for processing, changelog records restored, transactions committed, tasks
   * opened. Pending: assigned tasks not running, and each running task's unread input, records in
   * flight and uncommitted work (KafkaTask.pendingWork); what processors hold on their own clock
   * (a politeness gap) is not.
   */
  health(): EngineHealth {
    const { tasks, restoring } = this.tasks?.counts() ?? { tasks: 0, restoring: 0 };
    const running = this.state === 'running';
    let unread = 0;
    let inFlight = 0;
    let uncommitted = 0;
    if (running)
      for (const task of this.tasks.running()) {
        const work = task.pendingWork();
        unread += work.unread;
        inFlight += work.inFlight;
        if (work.uncommitted) uncommitted++;
      }
    const crash = [...this.crashed.values()][0];
    const m = this.metrics;
    return this.healthOf({
      ready: running && restoring === 0,
      tasks,
      restoring,
      progress:
        this.fetchedRecords +
        (this.tasks?.opened ?? 0) +
        this.restored +
        m.total(M.recordsProcessed) +
        m.counter(M.commits),
      pending: running ? describePending({ unread, inFlight, uncommitted, opening: restoring }) : undefined,
      down: crash === undefined ? undefined : `${crash}; kafkajs restarts it`,
      quarantined: this.tasks?.quarantined() ?? [],
    });
  }

  /** Answers for the partitions this member owns; for another partition says which one it is (`not-owned`). */
  query(request: QueryRequest): QueryAnswer {
    if (this.state === 'new') return { kind: 'unavailable', reason: 'the engine has not started' };
    const target = queryTarget(this.topology, this.subtopologies, request);
    if ('kind' in target) return target;
    const { sub, partition } = target;
    const owned = this.tasks.assigned.get(sub.id);
    if (owned === undefined || !owned.has(partition))
      return {
        kind: 'not-owned',
        partition,
        partitions: sub.partitions,
        owned: [...(owned ?? [])].sort((a, b) => a - b),
      };
    if (this.state !== 'running') return { kind: 'unavailable', partition, reason: `the engine is ${this.state}` };
    return answerQuery(this.tasks.slot(sub.id, partition)?.task?.task, partition, request);
  }

  /** The tasks this member runs, then its standbys (state `standby`: stores only, no processor). */
  taskStatus(): TaskStatus[] {
    const standbys: TaskStatus[] = [...(this.standbys?.lags().keys() ?? [])].map((task) => {
      const [sub, partition] = task.split('_').map(Number) as [number, number];
      return { task, subtopology: sub, partition, processors: [], state: 'standby' };
    });
    return [...(this.tasks?.status(this.subtopologies, statusOf) ?? []), ...standbys];
  }
}
