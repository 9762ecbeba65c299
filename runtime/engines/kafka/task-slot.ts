import { CrawlError } from '../../../core/errors.js';
import type { TaskLifecycle } from '../../task-lifecycle.js';
import type { KafkaTask } from './kafka-task.js';

/**
 * A partition's task on this member: its life, its opening, and the task once it runs. The
 * engine's map holds the slot of each partition it owns; a revoke removes it, so an opening task
 * that finds another slot (or none) in its place closes unused.
 */
export interface TaskSlot {
  readonly lifecycle: TaskLifecycle;
  /** Resolves to the running task, or undefined when it closed unused (revoked, or a broker fault). */
  opening: Promise<KafkaTask | undefined>;
  /** Set once the task runs; the slot's task is the one that may commit for the partition. */
  task?: KafkaTask;
}

const PENDING = Symbol('pending');

/** The value of `p`, calling `heartbeat` every second until it settles. */
export async function whileHeartbeating<T>(p: Promise<T>, heartbeat: () => Promise<void>): Promise<T> {
  let settled = false;
  void p.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (;;) {
    const value = await Promise.race([p, sleep(1_000).then(() => PENDING)]);
    if (value !== PENDING || settled) return p;
    // a rebalance under way throws here: kafkajs then abandons the batch and joins again, as it should
    await heartbeat();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * An error of the brokers, not of this instance: a Kafka failure as kafka-port reports it
 * (CS_KAFKA, CS_FENCED), or a kafkajs error that reached us unwrapped (connection, retries spent).
 */
export function brokerFault(err: unknown): boolean {
  if (err instanceof CrawlError) return err.code === 'CS_KAFKA' || err.code === 'CS_FENCED';
  return /^KafkaJS/.test((err as Error | undefined)?.name ?? '');
}
