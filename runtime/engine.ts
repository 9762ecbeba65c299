import type { Metrics } from '../core/metrics.js';
import type { MemoryBudget } from '../state/memory-budget.js';
import type { StreamRecord } from './record.js';

/**
 * What the CLI and tests drive; implemented by the embedded engine and the Kafka engine, which
 * run the same Topology. Processors never see this interface.
 */
export interface Engine {
  readonly name: 'embedded' | 'kafka';
  readonly metrics: Metrics;
  /**
   * The process's memory plan (state/memory-budget.ts): the RocksDB databases and state every task
   * of this process claims, the caches it grants; the ops server publishes it at each scrape, so a
   * process of any role reports it.
   */
  readonly memoryPlan: MemoryBudget;
  /** Opens topics and stores, restores state, initializes every task and starts processing. */
  start(): Promise<void>;
  /** Writes records to a topic atomically (seeds, control commands); keys pick partitions. */
  produce(topic: string, records: readonly StreamRecord<string, unknown>[]): Promise<void>;
  /** True when every input is consumed, nothing is in flight or uncommitted, and no processor holds work. */
  isIdle(): boolean;
  /** Settles when the engine has stopped, by `stop()` or a fatal error (then it rejects). */
  readonly done: Promise<void>;
  /** What `/healthz` and `/readyz` report; cheap, safe to call at any time. */
  health(): EngineHealth;
  /**
   * Runs a processor's registered query on this instance's task owning `request.key`'s partition,
   * whichever engine runs it. Synchronous: queries are cheap and bounded by contract.
   */
  query(request: QueryRequest): QueryAnswer;
  /** This instance's tasks and their states; cheap, safe to call at any time. */
  taskStatus(): TaskStatus[];
  /** Graceful: stops taking input, waits briefly for work in flight, commits, closes. Idempotent. */
  stop(): Promise<void>;
}

/** An engine's liveness and readiness, as the operations endpoints report them. */
export interface EngineHealth {
  /** False once the engine has failed (a fatal error): the process should be restarted. */
  readonly live: boolean;
  /** True when started and every assigned task has restored its stores and is running. */
  readonly ready: boolean;
  /** The engine's lifecycle state. */
  readonly state: string;
  /** Tasks assigned to this instance, and how many of them are still restoring. */
  readonly tasks: number;
  readonly restoring: number;
  /**
   * Why `live` is false (the fatal error, a crashed consumer), or why a live engine is not ready
   * (`paused: …`, a task paused by a full disk: resource-pause.ts), for people; else absent.
   */
  readonly reason?: string;
  /**
   * A reading that changes whenever the engine moves work forward: a record taken for processing,
   * a changelog record restored, a transaction committed. Only its changes mean anything: two
   * equal readings say nothing moved in between.
   */
  readonly progress: number;
  /**
   * The work the engine could do now and has not done, for people ("12 input records not yet
   * processed, 3 in flight"); absent when there is none. Work a processor holds on its own clock
   * (URLs waiting for a host's politeness gap, a Retry-After back-off, a revisit time) is not
   * pending: it is not due, so waiting on it is not a stall.
   */
  readonly pending?: string;
  /** The tasks stopped alone (task-quarantine.ts); absent when none. They leave `live` true. */
  readonly quarantined?: readonly QuarantinedTask[];
}

/**
 * A task stopped alone because its state makes it throw in its `init` or a punctuator (a record's
 * failure is a dead letter instead): its work since the last commit is thrown away, its
 * partition is kept by this instance and not processed until a restart; the rest goes on.
 */
export interface QuarantinedTask {
  /** `subtopology_partition`. */
  readonly task: string;
  readonly subtopology: number;
  readonly partition: number;
  /** What threw. */
  readonly during: 'init' | 'punctuator';
  /** The error's code (CS_INTERNAL when it had none) and message. */
  readonly code: string;
  readonly error: string;
  /** When it was stopped (epoch ms). */
  readonly since: number;
}

/**
 * A question for one processor's query (`ProcessorContext.registerQuery`), asked of the task that
 * owns `key`'s partition of that processor's sub-topology (the partitioner of its input topics).
 */
export interface QueryRequest {
  readonly processor: string;
  readonly query: string;
  readonly key: string;
}

/** What `Engine.query` found: the answer, or why there is none here. */
export type QueryAnswer =
  | { readonly kind: 'answered'; readonly task: string; readonly partition: number; readonly value: unknown }
  /** Another instance owns the key's partition (Kafka): ask the one that does. */
  | {
      readonly kind: 'not-owned';
      readonly partition: number;
      readonly partitions: number;
      /** The partitions of that sub-topology this instance owns. */
      readonly owned: readonly number[];
    }
  /** The owning task is here but cannot answer yet (restoring, closing) or the engine is not running. */
  | { readonly kind: 'unavailable'; readonly partition?: number; readonly reason: string }
  /** No such processor, or it registered no such query. */
  | { readonly kind: 'unknown'; readonly reason: string };

/** One task of this instance, as `/status` lists it. */
export interface TaskStatus {
  /** `subtopology_partition`. */
  readonly task: string;
  readonly subtopology: number;
  readonly partition: number;
  /** The processors it runs, e.g. `['frontier']`. */
  readonly processors: readonly string[];
  /** created | restoring | running | suspended | closed (task-lifecycle.ts), or quarantined (task-quarantine.ts). */
  readonly state: string;
}
