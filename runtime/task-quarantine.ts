import { isCrawlError } from '../core/errors.js';
import { taskIdString, type TaskId } from '../core/ids.js';
import type { QuarantinedTask } from './engine.js';

/**
 * Quarantine, not crash: a task whose `init` or punctuator throws is stopped alone (Kafka Streams
 * would kill the stream thread, and the partition, moved to the next member, would kill that one
 * the same way). Both engines then throw away the task's work since its last commit, close its
 * processors and stores, keep its input positions where they were committed, say one line with
 * the error, and report it in `EngineHealth.quarantined`, `/healthz` (which stays 200: the rest
 * of the process works) and `crawlstream_tasks_quarantined`. The embedded engine's other tasks go
 * on; a Kafka member keeps the partition (paused, nothing committed for it) rather than hand it to
 * a member it would stop too; a rebalance that moves it anyway gives it to a member that
 * quarantines it in turn. A restart (a fixed build, repaired state) runs it again.
 *
 * Errors that are not about one partition's state stay fatal: CS_TOPOLOGY (a bug of the dataflow,
 * the same on every partition) and CS_DISK_FULL (the machine's: every task would be quarantined
 * in turn, while a stopped process says so with its exit code).
 */

/** Whether `err`, thrown by a task's `init` or punctuator, quarantines the task (else the engine stops). */
export function quarantines(err: unknown): boolean {
  return !(isCrawlError(err) && (err.code === 'CS_TOPOLOGY' || err.code === 'CS_DISK_FULL'));
}

/** The report of task `id`, stopped now because `during` threw `err`. */
export function quarantineOf(
  id: TaskId,
  during: QuarantinedTask['during'],
  err: unknown,
  now = Date.now(),
): QuarantinedTask {
  return {
    task: taskIdString(id),
    subtopology: id.subtopology,
    partition: id.partition,
    during,
    code: isCrawlError(err) ? err.code : 'CS_INTERNAL',
    error: err instanceof Error ? err.message : String(err),
    since: now,
  };
}

/** The one log line of a quarantine, with the error's stack. */
export function describeQuarantine(q: QuarantinedTask, err: unknown): string {
  const detail = err instanceof Error ? (err.stack ?? err.message) : String(err);
  return (
    `task ${q.task} quarantined: its ${q.during} threw ${q.code}; its partition ${q.partition} is held unprocessed ` +
    `and its work since the last commit thrown away until a restart; the other tasks go on: ${detail}`
  );
}
