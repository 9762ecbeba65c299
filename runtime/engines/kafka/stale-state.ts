import type { ChangeloggedStore } from '../../../state/state-store.js';
import type { KafkaAdmin } from './kafka-port.js';

/** A store whose local state is ahead of the cluster: its checkpoint lies past its changelog's end. */
export interface StaleStore {
  readonly store: string;
  readonly topic: string;
  readonly partition: number;
  readonly checkpoint: number;
  readonly end: number;
}

/**
 * The stores of one task whose local checkpoint lies past the end of their changelog partition.
 * A checkpoint only moves after a commit that wrote the changelog up to it, so such a store was
 * built against records this cluster does not have: its topics were deleted and created again, the
 * state directory came from another cluster, or an unclean election lost committed records. Kafka
 * Streams calls such a task corrupted and wipes its state; so does the engine (an empty list: the
 * local state is usable). `topicOf` gives the cluster's name of a changelog (with the app's prefix).
 */
export async function storesPastChangelogEnd(
  admin: KafkaAdmin,
  changelogged: readonly { store: ChangeloggedStore; topic: string }[],
  partition: number,
  topicOf: (logical: string) => string,
): Promise<StaleStore[]> {
  const stale: StaleStore[] = [];
  for (const { store, topic } of changelogged) {
    const checkpoint = store.checkpoint();
    if (checkpoint === 0) continue;
    const end = (await admin.endOffsets(topicOf(topic))).get(partition) ?? 0;
    if (checkpoint > end) stale.push({ store: store.name, topic, partition, checkpoint, end });
  }
  return stale;
}

/** One line for the log: which stores are ahead of their changelogs, and what is done about it. */
export function describeStale(task: string, stale: readonly StaleStore[]): string {
  const which = stale.map((s) => `${s.store} at ${s.checkpoint}, its changelog ends at ${s.end}`).join('; ');
  return (
    `task ${task}: local state is ahead of the cluster (${which}): the topics were created again or the ` +
    `state directory belongs to another cluster; wiping the task's local state and restoring it from the changelogs`
  );
}
