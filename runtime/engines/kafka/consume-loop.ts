import { M } from '../../../core/metric-catalogue.js';
import type { CrawlError } from '../../../core/errors.js';
import type { Metrics } from '../../../core/metrics.js';
import { sleep } from '../../engine-base.js';
import type { ConsumedRawRecord } from '../../record.js';
import type { Subtopology } from '../../topology.js';
import type { GroupConsumerHandlers } from './kafka-port.js';
import type { TaskManager } from './task-manager.js';
import { whileHeartbeating } from './task-slot.js';

/**
 * Fetched records a task may hold unprocessed before its partition's fetch loop waits: bounds the
 * memory of a slow task (the frontier behind a burst of links) without stalling a fast one.
 */
export const HIGH_WATER = 2_000;

export interface ConsumeLoopHost {
  readonly manager: TaskManager;
  readonly metrics: Metrics;
  /** Whether the engine runs: a fetch loop waiting for a task's backlog to drain stops waiting when not. */
  running(): boolean;
  /**
   * Makes the batch's values readable: writer schemas registered after this instance started (a
   * newer instance's records in a rolling upgrade) fetched from the registry. Settles only when
   * every id is learned or known to be unreadable, or the engine stops (it retries meanwhile).
   */
  learnWriters(records: readonly ConsumedRawRecord[]): Promise<void>;
  /** Records handed to tasks: part of the engine's progress. */
  fetched(records: number): void;
  /** kafkajs joined the group again (after a crash) and assigned these partitions of `sub`. */
  assigned(sub: Subtopology, partitions: Set<number>, memberId: string): void;
  /** The consumer crashed (see GroupConsumerHandlers.onCrash). */
  crashed(sub: Subtopology, err: CrawlError, restart: boolean): void;
}

/**
 * The consume loop of one sub-topology's group: its assignments go to the task manager, each
 * fetched batch to its partition's task (once the task has opened, heartbeating meanwhile), with
 * back-pressure at `HIGH_WATER`; fetch progress moves each task's view of its partitions' ends.
 */
export function consumeLoop(sub: Subtopology, host: ConsumeLoopHost): GroupConsumerHandlers {
  const { manager } = host;
  return {
    onAssignment: (assigned, memberId) => host.assigned(sub, new Set(assigned.map((a) => a.partition)), memberId),
    onCrash: (err, restart) => host.crashed(sub, err, restart),
    onRecords: async (records, heartbeat) => {
      const partition = records[0]!.partition;
      const slot = manager.slot(sub.id, partition);
      // a task restores before it runs: keep the membership alive meanwhile (kafkajs heartbeats only between batches)
      const task = slot && (await whileHeartbeating(slot.opening, heartbeat));
      if (!task) return;
      await whileHeartbeating(host.learnWriters(records), heartbeat);
      host.fetched(records.length);
      task.enqueue(records);
      while (task.backlog() > HIGH_WATER && host.running() && manager.slot(sub.id, partition)?.task === task) {
        await sleep(100);
        await heartbeat();
      }
    },
    onProgress: (topic, partition, next, end) => {
      host.metrics.setGauge(M.consumerLag, 'engine', Math.max(0, end - next), `${topic},${partition}`);
      void manager.slot(sub.id, partition)?.opening.then((t) => t?.progress(topic, partition, next, end));
    },
  };
}
