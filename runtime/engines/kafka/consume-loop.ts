import { M } from '../../../core/metric-catalogue.js';
import type { CrawlError } from '../../../core/errors.js';
import type { Metrics } from '../../../core/metrics.js';
import { sleep } from '../../engine-base.js';
import type { ConsumedRawRecord } from '../../record.js';
import type { Subtopology } from '../../topology.js';
import type { GroupConsumer, GroupConsumerHandlers } from './kafka-port.js';
import type { TaskManager } from './task-manager.js';
import { whileHeartbeating } from './task-slot.js';
import { HIGH_WATER, HIGH_WATER_BYTES } from './input-bounds.js';

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
  /** The sub-topology's consumer, once it has joined: a partition whose task still opens is paused on it. */
  consumer(): GroupConsumer | undefined;
}

/**
 * The consume loop of one sub-topology's group: its assignments go to the task manager, each
 * fetched batch to its partition's task (a partition whose task still opens is paused until it
 * runs, its batch kept for it), with back-pressure while the task holds more than `HIGH_WATER`
 * records or `HIGH_WATER_BYTES` untaken; fetch progress moves each task's view of its partitions'
 * ends.
 */
export function consumeLoop(sub: Subtopology, host: ConsumeLoopHost): GroupConsumerHandlers {
  const { manager } = host;
  return {
    onAssignment: (assigned, memberId) => host.assigned(sub, new Set(assigned.map((a) => a.partition)), memberId),
    onCrash: (err, restart) => host.crashed(sub, err, restart),
    onRecords: async (records, heartbeat) => {
      const partition = records[0]!.partition;
      const slot = manager.slot(sub.id, partition);
      if (slot && !slot.task && !slot.quarantined) {
        // its task still opens (a restore may take minutes): rather than wait here, which would stop
        // the member's other partitions on this broker (kafkajs fetches a broker again only once
        // every batch of its last answer is done), the partition is paused and this batch handed to
        // the task once it runs, before the partition resumes; dropped if the task never runs (its
        // next owner reads from the committed offset)
        await whileHeartbeating(host.learnWriters(records), heartbeat);
        for (const topic of sub.sourceTopics) host.consumer()?.pause(topic, partition);
        // synchronous, and registered before this batch's progress (after this returns) on the same
        // promise: the task must hold the records before it hears the fetch moved past them, or it
        // would take their offsets for done
        void slot.opening.then((task) => {
          if (!task || manager.slot(sub.id, partition) !== slot) return;
          host.fetched(records.length);
          task.enqueue(records);
          for (const topic of sub.sourceTopics) host.consumer()?.resume(topic, partition);
        });
        return;
      }
      // revoked, or quarantined (its partition stays paused): nothing takes these records
      const task = slot?.task;
      if (!task) return;
      await whileHeartbeating(host.learnWriters(records), heartbeat);
      host.fetched(records.length);
      task.enqueue(records);
      while (
        (task.backlog() > HIGH_WATER || task.backlogBytes() > HIGH_WATER_BYTES) &&
        host.running() &&
        manager.slot(sub.id, partition)?.task === task
      ) {
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
