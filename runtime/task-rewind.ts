import type { ConsumedRawRecord } from './record.js';
import { discardPending, type TaskStores } from './task-state.js';
import type { StreamTask } from './task.js';

/**
 * A record that failed in a processor is dead-lettered without leaving part of its work behind,
 * as Kafka Streams' exactly-once does it: the engine throws away everything its task did since
 * the last commit (pending store writes, collected outputs, punctuation effects, the processors'
 * in-memory state) and runs the task again from its committed positions; when the failed record
 * comes round again it is dead-lettered without being processed. The records before it are
 * processed again, exactly as if the process had crashed, so the commit holds their effects once.
 *
 * Only an 'after' task can be rewound: a 'before' task (the fetcher) committed its positions
 * before its records ran, so there is nothing to run again; its failed records are dead-lettered
 * where they fail, with what they forwarded before failing (at most once).
 */

/** The records of one task that failed after they may have left effects, by position, with their errors. */
export class PoisonRecords {
  private readonly byPosition = new Map<string, Error>();

  /** Remembers that `record` failed with `error`: the next time it comes round, it is dead-lettered unprocessed. */
  mark(record: ConsumedRawRecord, error: Error): void {
    this.byPosition.set(positionOf(record), error);
  }

  /** The error `record` failed with, forgetting it; undefined when it is not poison. */
  take(record: ConsumedRawRecord): Error | undefined {
    if (this.byPosition.size === 0) return undefined;
    const key = positionOf(record);
    const error = this.byPosition.get(key);
    if (error !== undefined) this.byPosition.delete(key);
    return error;
  }

  get size(): number {
    return this.byPosition.size;
  }
}

const positionOf = (r: ConsumedRawRecord): string => `${r.topic}\u0000${r.partition}\u0000${r.offset}`;

/**
 * Closes `old` (its processors; the stores stay open), drops every pending store write of
 * `state`, and returns a new task built by `build` over the same stores, initialized: the stores
 * read as at the last commit and the processors rebuild their in-memory state from them (what the
 * test driver's `crash()` plays). Call it with no record or punctuator of `old` running. Throws
 * what the new task's `init` throws; the new task is then closed.
 */
export async function rewindTask(
  old: StreamTask,
  state: Pick<TaskStores, 'changelogged'>,
  build: () => StreamTask,
): Promise<StreamTask> {
  await old.close();
  // after the processors' close, in case one wrote on its way out
  discardPending(state);
  return initialized(build);
}

/**
 * The task `build` returns, initialized over whatever stores it was built on: after `rewindTask`,
 * or once a task's stores were closed and opened again (a RocksDB that refused writes on a full
 * disk: the stores are restored from the changelogs up to the last commit, so the new task runs
 * from its committed positions exactly as a rewound one). Throws what its `init` throws; the new
 * task is then closed.
 */
export async function initialized(build: () => StreamTask): Promise<StreamTask> {
  const fresh = build();
  try {
    fresh.init();
  } catch (err) {
    await fresh.close().catch(() => undefined);
    throw err;
  }
  return fresh;
}
