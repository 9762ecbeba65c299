import { CrawlError } from '../core/errors.js';

/**
 * Where a task is in its life, as Kafka Streams names it:
 * - `created`: its partition is assigned to this instance; nothing is open yet;
 * - `restoring`: its stores are open and catching up with their changelogs;
 * - `running`: its processors are initialized and it processes records;
 * - `suspended`: it takes no more records; work in flight finishes and, when it closes
 *   gracefully, commits once more;
 * - `closed`: processors, stores and producer are closed; a task is never reopened (its
 *   partition, when assigned again, gets a new task).
 */
export type TaskState = 'created' | 'restoring' | 'running' | 'suspended' | 'closed';

/** The moves a task may make; any other is a bug in the engine and is refused. */
export const TASK_MOVES: Readonly<Record<TaskState, readonly TaskState[]>> = {
  // a task with no changelogged store has nothing to restore; one revoked while opening closes unused
  created: ['restoring', 'running', 'closed'],
  restoring: ['running', 'closed'],
  running: ['suspended', 'closed'],
  suspended: ['closed'],
  closed: [],
};

/**
 * One task's state machine, shared by both engines (they drive it; `StreamTask` refuses to
 * process outside `running`). Not thread-safe, and need not be: a task lives on one event loop.
 */
export class TaskLifecycle {
  private current: TaskState = 'created';
  private readonly since: Record<TaskState, number | undefined> = {
    created: Date.now(),
    restoring: undefined,
    running: undefined,
    suspended: undefined,
    closed: undefined,
  };

  constructor(
    /** The task's name (`1_3`), for the errors. */
    readonly task: string,
  ) {}

  get state(): TaskState {
    return this.current;
  }

  /** When the task entered `state` (epoch ms), or undefined when it never did. */
  enteredAt(state: TaskState): number | undefined {
    return this.since[state];
  }

  /** Moves to `next`; throws CS_INTERNAL naming both states when the move is not allowed. */
  to(next: TaskState): void {
    if (!TASK_MOVES[this.current].includes(next))
      throw new CrawlError('CS_INTERNAL', `task ${this.task} cannot move from ${this.current} to ${next}`);
    this.current = next;
    this.since[next] = Date.now();
  }

  /** Moves to `next` when that is allowed from here; returns whether it moved (close paths that may run twice). */
  tryTo(next: TaskState): boolean {
    if (!TASK_MOVES[this.current].includes(next)) return false;
    this.to(next);
    return true;
  }
}
