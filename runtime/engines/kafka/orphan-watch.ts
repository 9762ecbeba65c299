import { taskIdString } from '../../../core/ids.js';
import type { Subtopology } from '../../topology.js';
import type { TaskSlot } from './task-slot.js';

/** How often a member looks for assigned partitions without a task (OrphanWatch). */
export const ORPHAN_CHECK_MS = 15_000;

/** What the orphan watch reads of its task manager; it owns none of it. */
export interface OrphanWatchHost {
  /** The partitions of each sub-topology in the member's latest assignment. */
  readonly assigned: ReadonlyMap<number, ReadonlySet<number>>;
  /** The member's task slots, by `sub_partition`. */
  readonly slots: ReadonlyMap<string, TaskSlot>;
  /** The sub-topologies assigned so far, by id. */
  readonly subs: ReadonlyMap<number, Subtopology>;
  running(): boolean;
  say(line: string): void;
  warn(line: string): void;
  /** Makes the member join `sub`'s group again (after its back-off). */
  rejoin(sub: Subtopology): void;
}

/**
 * Looks every `everyMs` for a partition of the member's assignment with no task at two looks in
 * a row: its task was dropped (a broker fault while it opened or committed) and the rejoin asked
 * for then brought no new assignment (shared with a rejoin already under way, or overtaken by
 * kafkajs' own). Its partition would stay paused and unprocessed until the next rebalance, which
 * may never come, so the member joins its group again. An opening that neither ends nor fails
 * (a broker call that never answers) is said once, after four looks.
 */
export class OrphanWatch {
  /** Assigned partitions (`sub_partition`) found without a task at the last look. */
  private orphans = new Set<string>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly host: OrphanWatchHost,
    private readonly everyMs = ORPHAN_CHECK_MS,
  ) {
    this.timer = setInterval(() => this.look(), everyMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private look(): void {
    const { host } = this;
    if (!host.running()) return;
    const now = new Set<string>();
    for (const [id, partitions] of host.assigned)
      for (const p of partitions) {
        const key = taskIdString({ subtopology: id, partition: p });
        if (!host.slots.has(key)) now.add(key);
      }
    const slowAfter = 4 * this.everyMs;
    for (const slot of host.slots.values())
      if (!slot.task && !slot.quarantined && !slot.slowSaid && Date.now() - slot.createdAt > slowAfter) {
        slot.slowSaid = true;
        host.warn(
          `task ${slot.name} has been opening for ${Math.round((Date.now() - slot.createdAt) / 1000)} s (${slot.state})`,
        );
      }
    for (const key of now) {
      if (!this.orphans.has(key)) continue;
      const sub = host.subs.get(Number(key.slice(0, key.indexOf('_'))))!;
      host.say(`task ${key} is assigned to this member but has no task; the member joins its group again`);
      host.rejoin(sub);
    }
    this.orphans = now;
  }
}
