import { M } from '../core/metric-catalogue.js';
import { CrawlError } from '../core/errors.js';
import type { Metrics } from '../core/metrics.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { partitionFor } from './partitioner.js';
import type { Cancellable, Processor, ProcessorContext, Punctuator, QueryHandler } from './processor.js';
import { taskIdString, type TaskId } from '../core/ids.js';
import type { ConsumedRawRecord, RecordHeaders, RecordMetadata, StreamRecord } from './record.js';
import type { Serde } from '../core/serde.js';
import type { ProcessorNode, Subtopology, Topology } from './topology.js';
import type { StateStore } from '../state/state-store.js';
import { TaskLifecycle, type TaskState } from './task-lifecycle.js';
import type { MemoryBudget } from '../state/memory-budget.js';
import { processMemory, sharedMemory } from './process-memory.js';

/** Where a task's sinks put serialized records; the engine makes them part of the next commit. */
export interface RecordCollector {
  send(
    topic: string,
    partition: number,
    key: Buffer,
    value: Buffer | null,
    timestamp: number,
    headers?: RecordHeaders,
  ): void;
}

/** The serdes of every topic: keys are strings, values Avro in the Confluent wire format. */
export interface TopicSerdes {
  key(topic: string): Serde<string>;
  value(topic: string): Serde<unknown>;
}

interface ScheduledPunctuator {
  intervalMs: number;
  nextAt: number;
  fn: Punctuator;
  running: boolean;
  cancelled: boolean;
}

/**
 * One task: the processors of a sub-topology for one partition, wired to their stores. Shared by
 * both engines — they feed it records and punctuation, and collect its output at commit time.
 */
export class StreamTask {
  readonly name: string;
  readonly concurrency: number;
  readonly commitInputs: 'before' | 'after';
  /** 'after' records handed in before the earlier ones finished (ProcessorOptions.lookahead). */
  readonly lookahead: number;
  private readonly processors = new Map<string, Processor>();
  private readonly contexts = new Map<string, NodeContext>();
  private readonly punctuators: ScheduledPunctuator[] = [];
  /** Queries processors registered (`processor/name`), for `Engine.query`. */
  private readonly queries = new Map<string, QueryHandler>();
  /** Children of the source that reads each input topic. */
  private readonly sourceChildren = new Map<string, readonly string[]>();
  /** Where the task is in its life (task-lifecycle.ts); the engine moves it, `init` and `close` too. */
  readonly lifecycle: TaskLifecycle;

  constructor(
    readonly id: TaskId,
    readonly subtopology: Subtopology,
    readonly topology: Topology,
    private readonly collector: RecordCollector,
    readonly stores: ReadonlyMap<string, StateStore>,
    private readonly serdes: TopicSerdes,
    readonly metrics: Metrics,
    private readonly clock: () => number = Date.now,
    /** Bound to this task by the engine; processors get it, with their name, as `context.log`. */
    readonly logger: Logger = silentLogger,
    /** The engine's, when it moved the task before building it (created, restoring); else a new one. */
    lifecycle?: TaskLifecycle,
    /** Objects shared by co-located tasks (`ProcessorContext.coLocated`): given only by an engine that runs every task of the topology in this process. */
    private readonly coLocated?: Map<string, unknown>,
    /** Objects shared by the tasks the engine runs in this process (`ProcessorContext.inProcess`); this task's own when not given. */
    private readonly inProcess: Map<string, unknown> = new Map(),
  ) {
    this.name = taskIdString(id);
    this.lifecycle = lifecycle ?? new TaskLifecycle(this.name);
    const procs = subtopology.nodes.filter((n): n is ProcessorNode => n.kind === 'processor');
    this.concurrency = Math.max(1, Math.min(...procs.map((p) => p.options.concurrency ?? 1)));
    this.commitInputs = procs.some((p) => p.options.commitInputs === 'before') ? 'before' : 'after';
    this.lookahead = Math.max(1, Math.min(...procs.map((p) => p.options.lookahead ?? 1)));
    for (const node of procs) {
      this.processors.set(node.name, node.supplier());
      this.contexts.set(node.name, new NodeContext(this, node));
    }
    for (const node of subtopology.nodes)
      if (node.kind === 'source') for (const t of node.topics) this.sourceChildren.set(t, node.children);
  }

  get state(): TaskState {
    return this.lifecycle.state;
  }

  /** Moves the task to `running` and calls every processor's init, parents before children. Once only. */
  init(): void {
    this.lifecycle.to('running');
    for (const [name, p] of this.processors) p.init?.(this.contexts.get(name)!);
  }

  /** Deserializes a consumed record and hands it to the children of the source that reads its topic. */
  process(raw: ConsumedRawRecord): void | Promise<void> {
    if (this.lifecycle.state !== 'running')
      throw new CrawlError('CS_INTERNAL', `task ${this.name} is ${this.lifecycle.state}: it processes no records`);
    const children = this.sourceChildren.get(raw.topic);
    if (!children) throw new CrawlError('CS_TOPOLOGY', `task ${this.name} does not read topic ${raw.topic}`);
    if (raw.value === null) return; // tombstones carry nothing for processors
    this.metrics.inc(M.recordsProcessed, 1, raw.topic);
    let record: StreamRecord<unknown, unknown>;
    try {
      const corrupt = raw.headers?.['x-crawlstream-corrupt'];
      if (corrupt !== undefined) throw new CrawlError('CS_CORRUPT_RECORD', corrupt);
      record = {
        key: this.serdes.key(raw.topic).deserialize(raw.key),
        value: this.serdes.value(raw.topic).deserialize(raw.value),
        timestamp: raw.timestamp,
        ...(raw.headers ? { headers: raw.headers } : {}),
      };
    } catch (err) {
      if (typeof err === 'object' && err !== null) this.unread.add(err);
      throw err;
    }
    const meta: RecordMetadata = { topic: raw.topic, partition: raw.partition, offset: raw.offset };
    return this.dispatch(children, record, meta);
  }

  /** Errors `process` threw before any processor saw the record (unreadable, corrupt): they left no effects. */
  private readonly unread = new WeakSet<object>();

  /**
   * Whether `process` threw `err` before handing the record to a processor, so the record left
   * nothing behind and its dead letter needs no rewind (task-rewind.ts).
   */
  failedUnread(err: unknown): boolean {
    return typeof err === 'object' && err !== null && this.unread.has(err);
  }

  /** Routes a record to the named nodes; returns a promise only if some processor returned one. */
  dispatch(
    children: readonly string[],
    record: StreamRecord<unknown, unknown>,
    meta: RecordMetadata | undefined,
  ): void | Promise<void> {
    let pending: Promise<void>[] | undefined;
    for (const child of children) {
      const node = this.topology.nodes.get(child)!;
      if (node.kind === 'sink') {
        this.sink(node.topic, record);
        continue;
      }
      const ctx = this.contexts.get(child)!;
      ctx.recordMetadata = meta;
      const result = this.processors.get(child)!.process(record);
      if (result instanceof Promise) (pending ??= []).push(result);
    }
    if (pending) return Promise.all(pending).then(() => undefined);
  }

  private sink(topic: string, record: StreamRecord<unknown, unknown>): void {
    const spec = this.topology.topic(topic);
    const key = this.serdes.key(topic).serialize(record.key as string);
    const value = record.value === null ? null : this.serdes.value(topic).serialize(record.value);
    this.collector.send(topic, partitionFor(key, spec.partitions), key, value, record.timestamp, record.headers);
  }

  schedule(intervalMs: number, fn: Punctuator): Cancellable {
    if (!(intervalMs > 0))
      throw new CrawlError('CS_TOPOLOGY', `punctuation interval must be positive, got ${intervalMs}`);
    const p: ScheduledPunctuator = {
      intervalMs,
      nextAt: this.clock() + intervalMs,
      fn,
      running: false,
      cancelled: false,
    };
    this.punctuators.push(p);
    return { cancel: () => void (p.cancelled = true) };
  }

  /** Runs the punctuators that are due; never re-enters one whose promise is still pending. None unless running. */
  punctuate(now: number): Promise<void>[] {
    const running: Promise<void>[] = [];
    if (this.lifecycle.state !== 'running') return running;
    for (const p of this.punctuators) {
      if (p.cancelled || p.running || now < p.nextAt) continue;
      p.nextAt = now + p.intervalMs;
      const result = p.fn(now);
      if (result instanceof Promise) {
        p.running = true;
        running.push(result.finally(() => void (p.running = false)));
      }
    }
    return running;
  }

  /** Milliseconds until the next punctuator is due (Infinity when none). */
  nextPunctuationIn(now: number): number {
    let next = Infinity;
    for (const p of this.punctuators) if (!p.cancelled) next = Math.min(next, p.nextAt - now);
    return Math.max(0, next);
  }

  isIdle(): boolean {
    for (const p of this.processors.values()) if (p.isIdle && !p.isIdle()) return false;
    return true;
  }

  commitRequested = false;

  /**
   * Takes no more records or punctuation: the engine calls it once its loop has stopped, before
   * the work in flight finishes and the last commit. Idempotent; a task that never ran stays as it is.
   */
  suspend(): void {
    if (this.lifecycle.state === 'running') this.lifecycle.to('suspended');
  }

  /** Closes every processor that was initialized (a task closed before `init` closes none). Idempotent. */
  async close(): Promise<void> {
    const ran = this.lifecycle.state === 'running' || this.lifecycle.state === 'suspended';
    if (!this.lifecycle.tryTo('closed')) return;
    for (const p of this.punctuators) p.cancelled = true;
    if (ran) for (const p of this.processors.values()) await p.close?.();
  }

  now(): number {
    return this.clock();
  }

  /** The object shared by the tasks of every partition of `processor`, or undefined (see the constructor). */
  coLocatedObject<T>(processor: string, key: string, create: () => T): T | undefined {
    if (!this.coLocated) return undefined;
    const k = `${this.subtopology.id}\u0000${processor}\u0000${key}`;
    if (!this.coLocated.has(k)) this.coLocated.set(k, create());
    return this.coLocated.get(k) as T;
  }

  /** The object shared by the tasks of `processor` in this process (see the constructor). */
  inProcessObject<T>(processor: string, key: string, create: () => T): T {
    const k = `${this.subtopology.id}\u0000${processor}\u0000${key}`;
    if (!this.inProcess.has(k)) this.inProcess.set(k, create());
    return this.inProcess.get(k) as T;
  }

  /** The process's memory plan (`ProcessorContext.memory`): the engine's, else this task's own. */
  memoryPlan(): MemoryBudget {
    return sharedMemory(this.inProcess, () => processMemory(this.topology, this.logger));
  }

  registerQuery(processor: string, name: string, handler: QueryHandler): void {
    const id = `${processor}/${name}`;
    if (this.queries.has(id)) throw new CrawlError('CS_TOPOLOGY', `query ${id} is registered twice`);
    this.queries.set(id, handler);
  }

  /**
   * Runs `processor`'s query `name` for `key` (the key's partition is this task's: the engine
   * checked). Undefined when no such query is registered; throws CS_INTERNAL unless the task is
   * running, since a restoring task's stores are not yet whole and a closed one's are closed.
   */
  query(processor: string, name: string, key: string): { value: unknown } | undefined {
    const handler = this.queries.get(`${processor}/${name}`);
    if (handler === undefined) return undefined;
    if (this.lifecycle.state !== 'running')
      throw new CrawlError('CS_INTERNAL', `task ${this.name} is ${this.lifecycle.state}: it answers no queries`);
    return { value: handler(key) };
  }

  /**
   * The task's instance of processor `name`, for a test driver or a tool to look into: the task
   * owns it (its lifecycle is the task's). Throws CS_TOPOLOGY when the sub-topology has no such processor.
   */
  processor<P extends Processor>(name: string): P {
    const p = this.processors.get(name);
    if (!p) throw new CrawlError('CS_TOPOLOGY', `task ${this.name} has no processor ${name}`);
    return p as P;
  }

  store<S extends StateStore>(processor: ProcessorNode, name: string): S {
    if (!processor.stores.includes(name))
      throw new CrawlError('CS_TOPOLOGY', `processor ${processor.name} is not connected to store ${name}`);
    const store = this.stores.get(name);
    if (!store) throw new CrawlError('CS_TOPOLOGY', `store ${name} is not open in task ${this.name}`);
    return store as S;
  }
}

class NodeContext implements ProcessorContext {
  recordMetadata: RecordMetadata | undefined;
  private logger: Logger | undefined;

  constructor(
    private readonly task: StreamTask,
    private readonly node: ProcessorNode,
  ) {}

  get applicationId(): string {
    return this.task.topology.applicationId;
  }

  get taskId(): TaskId {
    return this.task.id;
  }

  get metrics(): Metrics {
    return this.task.metrics;
  }

  get log(): Logger {
    return (this.logger ??= this.task.logger.child({ task: this.task.name, processor: this.node.name }));
  }

  forward(record: StreamRecord<unknown, unknown>, childName?: string): void {
    let children = this.node.children;
    if (childName !== undefined) {
      if (!children.includes(childName))
        throw new CrawlError('CS_TOPOLOGY', `${this.node.name} has no child ${childName}`);
      children = [childName];
    }
    const result = this.task.dispatch(children, record, this.recordMetadata);
    if (result instanceof Promise) {
      throw new CrawlError(
        'CS_TOPOLOGY',
        `${this.node.name} forwarded to an asynchronous processor; only source-fed processors may be asynchronous`,
      );
    }
  }

  schedule(intervalMs: number, punctuator: Punctuator): Cancellable {
    return this.task.schedule(intervalMs, punctuator);
  }

  getStateStore<S extends StateStore>(name: string): S {
    return this.task.store<S>(this.node, name);
  }

  commit(): void {
    this.task.commitRequested = true;
  }

  currentTimeMs(): number {
    return this.task.now();
  }

  registerQuery(name: string, handler: QueryHandler): void {
    this.task.registerQuery(this.node.name, name, handler);
  }

  coLocated<T>(key: string, create: () => T): T | undefined {
    return this.task.coLocatedObject(this.node.name, key, create);
  }

  inProcess<T>(key: string, create: () => T): T {
    return this.task.inProcessObject(this.node.name, key, create);
  }

  memory(): MemoryBudget {
    return this.task.memoryPlan();
  }
}
