import type { RecordMetadata, StreamRecord } from './record.js';
import type { MemoryBudget } from '../state/memory-budget.js';
import type { StateStore } from '../state/state-store.js';
import type { Metrics } from '../core/metrics.js';
import type { Logger } from '../core/logger.js';
import type { TaskId } from '../core/ids.js';

/** Cancels a scheduled punctuator; idempotent. */
export interface Cancellable {
  cancel(): void;
}

/** Called with the wall-clock time. A punctuator that returns a promise is not re-entered before it settles. */
export type Punctuator = (now: number) => void | Promise<void>;

/**
 * Answers one named question about a running task's own state, for operators and programs
 * (Kafka Streams' Interactive Queries): given a key of the task's partition (e.g. a site), returns
 * a JSON-serializable view. Runs on the task's event loop between records, so it must be
 * synchronous, cheap and bounded: no scans of large stores, output capped. Read-only: it must not
 * change state, forward or commit.
 */
export type QueryHandler = (key: string) => unknown;

/**
 * A processor's view of the engine, valid between `init()` and `close()`. Everything forwarded
 * becomes durable together with the input positions and state changes of the same commit, or not
 * at all.
 */
export interface ProcessorContext<KOut = unknown, VOut = unknown> {
  readonly applicationId: string;
  readonly taskId: TaskId;
  readonly metrics: Metrics;
  /** Logs with this task and processor in every line; processors never write to the console. */
  readonly log: Logger;
  /** The record being processed; undefined inside a punctuator. */
  readonly recordMetadata: RecordMetadata | undefined;
  /** Sends a record to every child, or only to the named one. Throws CS_TOPOLOGY for an unknown child. */
  forward(record: StreamRecord<KOut, VOut>, childName?: string): void;
  /** Runs `punctuator` every `intervalMs` of wall-clock time until cancelled or the task closes. */
  schedule(intervalMs: number, punctuator: Punctuator): Cancellable;
  /** A store connected to this processor in the topology; throws CS_TOPOLOGY otherwise. */
  getStateStore<S extends StateStore>(name: string): S;
  /** Asks the engine to commit soon; the commit itself happens between records. */
  commit(): void;
  currentTimeMs(): number;
  /**
   * Offers `handler` as this processor's query `name` (`Engine.query`): the engine runs it for the
   * task owning a key's partition, whichever engine that is. Throws CS_TOPOLOGY for a name
   * registered twice by the same processor.
   */
  registerQuery(name: string, handler: QueryHandler): void;
  /**
   * The object stored under `key` for this processor's tasks of every partition (made by `create`
   * on first use), when the engine runs all of them in this process for their whole life (the
   * embedded engine); undefined when tasks may move between processes (Kafka) or run alone (the
   * test driver), and the processor must then keep its rule without it. The object is the
   * processor's: the engine never reads it, keeps no copy past its own run, restores none after a
   * restart (put nothing there a restart must find).
   */
  coLocated<T>(key: string, create: () => T): T | undefined;
  /**
   * The object stored under `key` for this processor's tasks that the engine runs in this
   * process now (made by `create` on first use): whichever partitions those are, which may be
   * fewer than all and change as partitions move (Kafka). For a rule this process keeps over its
   * own work (spacing its own requests to an address), never for one that needs every partition
   * (that is `coLocated`). Always given: a task run alone (the test driver) gets one of its own.
   * Owned as `coLocated`'s objects are.
   */
  inProcess<T>(key: string, create: () => T): T;
  /**
   * The memory plan of this process (state/memory-budget.ts): one for every task the engine runs
   * here, of every processor, with the process's RocksDB databases already claimed in it; its
   * total is the topology's `memoryBudgetBytes`. A processor claims the RAM its state must hold and
   * sizes its caches by the shares it is granted, and gives both back when it closes. Always given:
   * a task run alone (the test driver) gets one of its own.
   */
  memory(): MemoryBudget;
}

/**
 * A stream processor, Kafka Streams style. One instance per task; the engine calls init once,
 * process for each input record in offset order per partition, close once (close is idempotent
 * and must not close stores: the runtime owns them).
 *
 * `process` may return a promise: the engine then awaits it (or, for processors declared with
 * `concurrency > 1`, keeps up to that many in flight) before treating the record as done.
 * `isIdle` lets `--until-idle` know whether the processor still holds work of its own (queued
 * URLs, open leases); omit it when the processor holds none. *
 * A `process` that fails with a resource fault (`resourceFault` in resource-pause.ts: a full
 * disk) must have had no effect: the engine pauses the task and hands the same record in again
 * until it succeeds. A processor declared with `lookahead > 1` that keeps its records in order
 * must then fail the records handed in after it the same way, without effect, so that none of
 * them takes effect before it.
 */
export interface Processor<KIn = unknown, VIn = unknown, KOut = unknown, VOut = unknown> {
  init?(context: ProcessorContext<KOut, VOut>): void;
  process(record: StreamRecord<KIn, VIn>): void | Promise<void>;
  close?(): void | Promise<void>;
  isIdle?(): boolean;
}

export type ProcessorSupplier<KIn = unknown, VIn = unknown, KOut = unknown, VOut = unknown> = () => Processor<
  KIn,
  VIn,
  KOut,
  VOut
>;
