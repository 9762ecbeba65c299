import { silentLogger, type Logger } from '../../core/logger.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { Metrics } from '../../core/metrics.js';
import type { SchemaRegistry } from '../../schemas/index.js';
import { MemoryRegistry } from '../../schemas/memory-registry.js';
import type { StateStore } from '../../state/state-store.js';
import { DeadLetters, deadLetterMaxMessageBytes, deadLetterTopicOf, type DeadLetter } from '../dead-letter.js';
import type { Processor } from '../processor.js';
import type { ConsumedRawRecord, RecordHeaders } from '../record.js';
import { RecordDriver } from '../record-driver.js';
import { buildSerdes, type SerdeSet } from '../serdes.js';
import { StreamTask } from '../task.js';
import { TaskDirectory } from '../task-directory.js';
import { processMemory, sharedMemory } from '../process-memory.js';
import {
  applyCommitted,
  closeTaskState,
  discardPending,
  openTaskStores,
  prepareCommit,
  type TaskStores,
} from '../task-state.js';
import { rangeKey } from '../changelog-source.js';
import type { Subtopology, Topology } from '../topology.js';

/** A record a sink wrote, decoded with its topic's serdes. */
export interface OutputRecord<V = unknown> {
  readonly key: string;
  readonly value: V | null;
  readonly partition: number;
  readonly timestamp: number;
  readonly headers?: RecordHeaders;
}

/** A changelog record a commit wrote for a store, raw. */
export interface ChangelogRecord {
  readonly key: Buffer;
  readonly value: Buffer | null;
}

/** A record a sink wrote, as serialized for its topic. The buffers are the task's: copy to keep. */
export interface RawOutputRecord {
  readonly key: Buffer;
  readonly value: Buffer | null;
  readonly partition: number;
  readonly timestamp: number;
}

/** A record to pipe in: key and value as the topic's producer would hand them to its serdes. */
export interface InputRecord {
  readonly key: string;
  readonly value: unknown;
  /** Default: the driver's clock when the record is piped. */
  readonly timestamp?: number;
}

export interface TopologyTestDriverOptions {
  readonly topology: Topology;
  /** The sub-topology to run: the one reading this topic (default: the first sub-topology). */
  readonly sourceTopic?: string;
  /** The task's partition (default 0). */
  readonly partition?: number;
  /** The clock's first reading, epoch ms (default 1_000_000). */
  readonly startTime?: number;
  /** The data directory of the task's state (laid out as the engines lay it out); default a new temporary directory, removed by `close()`. */
  readonly dir?: string;
  readonly registry?: SchemaRegistry;
  readonly metrics?: Metrics;
  /** Called with each record a sink writes, as it is written (after it is captured). */
  readonly onOutput?: (topic: string, record: OutputRecord) => void;
  /**
   * Whether sinks' records are decoded and kept for `output()` and `onOutput` (default true).
   * A bench turns it off: the task's time then holds no decoding, and memory does not grow with the output.
   */
  readonly captureOutputs?: boolean;
  /** Called with each record a sink writes, serialized, before any capture. */
  readonly onRawOutput?: (topic: string, record: RawOutputRecord) => void;
  /**
   * Whether commits keep the changelog records they write, for `changelog()` (default true). A
   * bench turns it off: a commit still assembles them as an engine does, and drops them.
   */
  readonly keepChangelogs?: boolean;
  /**
   * What the task's processors share with other tasks of this process (`ProcessorContext.inProcess`):
   * give two drivers one map to run them as one engine runs two partitions; a map of the task's own by default.
   */
  readonly inProcess?: Map<string, unknown>;
  /** The task's logger (processors get it as `context.log`); silent by default. */
  readonly logger?: Logger;
}

/**
 * Runs one task of a topology as an engine would, for tests and benches (Kafka Streams'
 * TopologyTestDriver): the real `StreamTask` on the real stores (RocksDB, opened through
 * `openTaskStores` of task-state.ts, as both engines open them), records piped in serialized with the topology's
 * serdes, a clock that moves only when told (punctuators fire as it passes them), and every
 * sink's output captured per topic, decoded. `commit()` plays an engine's commit (store changes
 * to their changelogs, outputs and input positions, all at once); `crash()` a crash between
 * commits. Single-threaded: one call at a time. The caller owns the driver and must `close()` it.
 */
export class TopologyTestDriver {
  readonly metrics: Metrics;
  private time: number;
  private taskNow!: StreamTask;
  private readonly outputs = new Map<string, OutputRecord[]>();
  private readonly committedCounts = new Map<string, number>();
  private readonly changelogs = new Map<string, ChangelogRecord[]>();
  private readonly offsets = new Map<string, number>();
  /** Each changelog's next offset (`rangeKey` → offset), kept or not. */
  private readonly changelogEnds = new Map<string, number>();
  private uncommitted: ConsumedRawRecord[] = [];
  private readonly deadLettered: DeadLetter[] = [];
  private closed = false;

  private constructor(
    private readonly topology: Topology,
    private readonly sub: Subtopology,
    private readonly partition: number,
    private readonly serdes: SerdeSet,
    private readonly state: TaskStores,
    /** The data directory holding the task's state (`TaskDirectory`). */
    readonly directory: string,
    private readonly ownDir: string | undefined,
    metrics: Metrics,
    startTime: number,
    private readonly outputOptions: Pick<
      TopologyTestDriverOptions,
      'onOutput' | 'onRawOutput' | 'captureOutputs' | 'keepChangelogs' | 'inProcess' | 'logger'
    >,
  ) {
    this.metrics = metrics;
    this.time = startTime;
  }

  /** Builds the topology, opens the task's stores and inits its processors. */
  static async open(options: TopologyTestDriverOptions): Promise<TopologyTestDriver> {
    const { topology, sourceTopic, partition = 0, startTime = 1_000_000 } = options;
    if (!Number.isInteger(partition) || partition < 0)
      throw new CrawlError(
        'CS_INVALID_OPTION',
        `topology test driver: partition must be an integer ≥ 0, got ${partition}`,
      );
    const subs = topology.build();
    const sub = sourceTopic === undefined ? subs[0] : subs.find((s) => s.sourceTopics.includes(sourceTopic));
    if (!sub)
      throw new CrawlError(
        'CS_INVALID_OPTION',
        `topology test driver: no sub-topology reads ${sourceTopic ?? 'any topic'} (sources: ${subs.map((s) => s.sourceTopics.join(',')).join(' | ')})`,
      );
    if (partition >= sub.partitions)
      throw new CrawlError('CS_INVALID_OPTION', `topology test driver: partition ${partition} of ${sub.partitions}`);
    const serdes = await buildSerdes(topology, options.registry ?? new MemoryRegistry());
    const ownDir = options.dir === undefined ? mkdtempSync(join(tmpdir(), 'crawlstream-driver-')) : undefined;
    const dir = options.dir ?? ownDir!;
    const id = { subtopology: sub.id, partition };
    // one process: the task's database is claimed in the plan its processors see (`ProcessorContext.memory`)
    const inProcess = options.inProcess ?? new Map<string, unknown>();
    const memory = sharedMemory(inProcess, () => processMemory(topology, options.logger ?? silentLogger));
    const state = await openTaskStores(id, sub, topology, new TaskDirectory(dir, { memory }).task(id));
    const driver = new TopologyTestDriver(
      topology,
      sub,
      partition,
      serdes,
      state,
      dir,
      ownDir,
      options.metrics ?? new Metrics(),
      startTime,
      { ...options, inProcess },
    );
    driver.taskNow = driver.newTask();
    driver.taskNow.init();
    return driver;
  }

  /** The running task (replaced by `crash()`). */
  get task(): StreamTask {
    return this.taskNow;
  }

  /** The clock every processor reads (`context.currentTimeMs()`). */
  get now(): number {
    return this.time;
  }

  /** Sets the clock without firing punctuators (e.g. to start a scenario at a given time). */
  set now(t: number) {
    this.time = t;
  }

  /** A store of the task, for a test to look into (committed and pending writes alike). */
  store<S extends StateStore>(name: string): S {
    const store = this.state.stores.get(name);
    if (!store) throw new CrawlError('CS_TOPOLOGY', `store ${name} is not a store of task ${this.taskNow.name}`);
    return store as S;
  }

  /** A RocksDB property of the task's database (`rocksdb.estimate-num-keys`…), for a bench; undefined when unknown. */
  dbProperty(name: string): string | undefined {
    return this.state.db.property(name);
  }

  /** The task's instance of processor `name`, for a test to look into (replaced by `crash()`). */
  processor<P extends Processor>(name: string): P {
    return this.taskNow.processor<P>(name);
  }

  /**
   * Serializes `value` as the topic's producer would and hands it to the task at the current
   * time (or `timestamp`): returns what `StreamTask.process` returns (a promise for an
   * asynchronous processor, to be awaited before the next call). A processor's error is thrown
   * (or rejects) here: no dead letter.
   */
  pipeInput(topic: string, key: string, value: unknown, timestamp = this.time): void | Promise<void> {
    return this.pipeRawInput(this.encode(topic, key, value, timestamp));
  }

  /**
   * The record `pipeInput` would hand in, serialized, and the topic's next offset taken: for a
   * bench to encode outside what it measures, then `pipeRawInput`.
   */
  encode(topic: string, key: string, value: unknown, timestamp = this.time): ConsumedRawRecord {
    const offset = this.offsets.get(topic) ?? 0;
    this.offsets.set(topic, offset + 1);
    return {
      topic,
      partition: this.partition,
      offset,
      timestamp,
      key: this.serdes.key(topic).serialize(key),
      value: this.serdes.value(topic).serialize(value),
    };
  }

  /** A value of `topic` deserialized with the topology's serdes: for a bench that takes outputs raw (`onRawOutput`). */
  decodeValue<V>(topic: string, value: Buffer): V {
    return this.serdes.value(topic).deserialize(value) as V;
  }

  /** Hands a record made by `encode` to the task, as `pipeInput` does. */
  pipeRawInput(raw: ConsumedRawRecord): void | Promise<void> {
    this.uncommitted.push(raw);
    return this.taskNow.process(raw);
  }

  /**
   * Pipes `records` in through the engines' own record loop (`RecordDriver`): as many in flight
   * as the task's processors allow (`concurrency` for 'before' processors, `lookahead` for
   * 'after' ones), a failing record dead-lettered (`deadLetters()`, the `dead_letters` metric)
   * and the rest processed. Resolves once every record has finished; rejects with a CS_TOPOLOGY
   * error, which an engine would stop on, once the others have finished.
   */
  async pipeInputs(topic: string, records: readonly InputRecord[]): Promise<void> {
    const raws = records.map((r) => this.encode(topic, r.key, r.value, r.timestamp ?? this.time));
    for (const raw of raws) this.uncommitted.push(raw); // no spread: a bench pipes more records than a call takes arguments
    let fatal: unknown;
    const letters = new DeadLetters(
      deadLetterTopicOf(this.topology.applicationId),
      deadLetterMaxMessageBytes(this.topology),
      this.metrics,
      () => undefined,
    );
    const loop = new RecordDriver(this.taskNow, {
      advance: () => undefined,
      deadLetter: (r, error) => void this.deadLettered.push(letters.of(r, error)),
      fatal: (error) => void (fatal ??= error),
    });
    const running = () => fatal === undefined;
    if (this.taskNow.commitInputs === 'before') await loop.startConcurrently(raws, running);
    else await loop.processInOrder(raws, running);
    await loop.whenIdle();
    if (fatal !== undefined) throw fatal;
  }

  /** The records `pipeInputs` dead-lettered, oldest first, as an engine writes them to its dead-letter topic. */
  deadLetters(): readonly DeadLetter[] {
    return this.deadLettered;
  }

  /**
   * Moves the clock `ms` forward in steps of `step`, running the punctuators due at each step and
   * awaiting those that return a promise.
   */
  async advanceWallClockTime(ms: number, step = 100): Promise<void> {
    if (!(step > 0))
      throw new CrawlError('CS_INVALID_OPTION', `topology test driver: step must be positive, got ${step}`);
    for (let t = 0; t < ms; t += step) {
      this.time += step;
      await Promise.all(this.taskNow.punctuate(this.time));
    }
  }

  /** Every record the task wrote to `topic` since it opened, oldest first (a live array: do not change it). */
  output<V = unknown>(topic: string): readonly OutputRecord<V>[] {
    return this.outputOf(topic) as OutputRecord<V>[];
  }

  /** The records of `topic` whose commit has happened: the only ones a consumer could see. */
  committedOutput<V = unknown>(topic: string): readonly OutputRecord<V>[] {
    return this.outputOf(topic).slice(0, this.committedCounts.get(topic) ?? 0) as OutputRecord<V>[];
  }

  /** The changelog records commits wrote for `store`, oldest first. */
  changelog(store: string): readonly ChangelogRecord[] {
    return this.changelogs.get(this.topology.changelogTopic(store)) ?? [];
  }

  /**
   * Commits as an engine does: each changelogged store's pending writes become its changelog's
   * next records and are applied locally at the offset after them; outputs and input positions
   * commit with them.
   */
  commit(): void {
    // the engines' own commit assembly (task-state.ts), with in-memory changelogs as the log
    const prepared = prepareCommit(this.state, this.partition, this.now);
    const keep = this.outputOptions.keepChangelogs !== false;
    const bases = new Map<string, number>();
    const ends = new Map<string, number>();
    for (const r of prepared.records) {
      let log = this.changelogs.get(r.topic);
      if (!log) this.changelogs.set(r.topic, (log = []));
      const range = rangeKey(r.topic, r.partition);
      // a log not kept is only counted, for the offsets the stores' checkpoints move to
      const end = ends.get(range) ?? this.changelogEnds.get(range) ?? log.length;
      if (!bases.has(range)) bases.set(range, end);
      ends.set(range, end + 1);
      if (keep) log.push({ key: r.key, value: r.value });
    }
    for (const [range, end] of ends) this.changelogEnds.set(range, end);
    applyCommitted(prepared, bases);
    for (const [topic, records] of this.outputs) this.committedCounts.set(topic, records.length);
    this.uncommitted = [];
    this.taskNow.commitRequested = false;
  }

  /**
   * A crash between commits and a restart: uncommitted store writes and outputs are lost, a new
   * task opens the same stores, and the input consumed since the last commit is processed again.
   */
  async crash(): Promise<void> {
    discardPending(this.state);
    for (const [topic, records] of this.outputs) records.length = this.committedCounts.get(topic) ?? 0;
    await this.taskNow.close();
    this.taskNow = this.newTask();
    this.taskNow.init();
    const replay = this.uncommitted;
    this.uncommitted = [];
    for (const raw of replay) {
      this.uncommitted.push(raw);
      await this.taskNow.process(raw);
    }
  }

  /** Closes the task and its stores, and removes the directory the driver made. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.taskNow.close();
    } finally {
      await closeTaskState(this.state);
      if (this.ownDir !== undefined) rmSync(this.ownDir, { recursive: true, force: true });
    }
  }

  private outputOf(topic: string): OutputRecord[] {
    let records = this.outputs.get(topic);
    if (!records) this.outputs.set(topic, (records = []));
    return records;
  }

  private newTask(): StreamTask {
    return new StreamTask(
      { subtopology: this.sub.id, partition: this.partition },
      this.sub,
      this.topology,
      {
        send: (topic, partition, key, value, timestamp, headers) => {
          this.outputOptions.onRawOutput?.(topic, { key, value, partition, timestamp });
          if (this.outputOptions.captureOutputs === false) return;
          const record: OutputRecord = {
            key: this.serdes.key(topic).deserialize(key),
            value: value === null ? null : this.serdes.value(topic).deserialize(value),
            partition,
            timestamp,
            ...(headers ? { headers } : {}),
          };
          this.outputOf(topic).push(record);
          this.outputOptions.onOutput?.(topic, record);
        },
      },
      this.state.stores,
      this.serdes,
      this.metrics,
      () => this.time,
      this.outputOptions.logger,
      undefined,
      undefined,
      this.outputOptions.inProcess,
    );
  }
}
