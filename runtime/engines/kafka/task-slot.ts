import { taskIdString } from '../../../core/ids.js';
import { sleep } from '../../engine-base.js';
import type { QuarantinedTask } from '../../engine.js';
import type { TaskLifecycle, TaskState } from '../../task-lifecycle.js';
import { kafkaFaultCode } from './kafka-common.js';
import type { KafkaTask } from './kafka-task.js';

/**
 * A partition's task on this member: its life, its opening, and the task once it runs. The task
 * manager holds the slot of each partition it owns; a revoke removes it, so an opening task that
 * finds another slot (or none) in its place closes unused.
 */
export class TaskSlot {
  /** `<sub>_<partition>`. */
  readonly name: string;
  private opened: Promise<KafkaTask | undefined> | undefined;
  /** Set once the task runs; the slot's task is the one that may commit for the partition. */
  task: KafkaTask | undefined;
  /** Set when its task's init or a punctuator threw: the partition is kept, paused, without a task (task-quarantine.ts). */
  quarantined: QuarantinedTask | undefined;
  /** When the slot was made (its opening began). */
  readonly createdAt = Date.now();
  /** Whether a slow opening was reported (once per slot). */
  slowSaid = false;

  constructor(
    readonly sub: number,
    readonly partition: number,
    readonly lifecycle: TaskLifecycle,
  ) {
    this.name = taskIdString({ subtopology: sub, partition });
  }

  /** Where the partition's task is: the running task's state (a rewind gives it a new task), else the opening's. */
  get state(): TaskState {
    return this.task?.task.state ?? this.lifecycle.state;
  }

  /** Sets the opening; once only, right after the slot is created. */
  open(opening: Promise<KafkaTask | undefined>): void {
    this.opened = opening;
  }

  /** Resolves to the running task, or undefined when it closed unused (revoked, or a broker fault). Never rejects. */
  get opening(): Promise<KafkaTask | undefined> {
    return this.opened ?? Promise.resolve(undefined);
  }
}

const PENDING = Symbol('pending');

/** The value of `p`, calling `heartbeat` every `everyMs` (one second) until it settles. */
export async function whileHeartbeating<T>(p: Promise<T>, heartbeat: () => Promise<void>, everyMs = 1_000): Promise<T> {
  let settled = false;
  void p.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (;;) {
    const value = await Promise.race([p, sleep(everyMs).then(() => PENDING)]);
    if (value !== PENDING || settled) return p;
    // a rebalance under way throws here: kafkajs then abandons the batch and joins again, as it should
    await heartbeat();
  }
}

/**
 * An error of the brokers, not of this instance: CS_KAFKA or CS_FENCED as the kafkajs door
 * classifies it (kafka-common.ts `kafkaFaultCode`).
 */
export function brokerFault(err: unknown): boolean {
  return kafkaFaultCode(err) !== undefined;
}
