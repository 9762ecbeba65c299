import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../../core/logger.js';
import type { TaskId } from '../../../core/ids.js';
import type { ChangeloggedStore } from '../../../state/state-store.js';
import { closeTaskStores, openTaskStores, type TaskStores } from '../../task-stores.js';
import type { Subtopology, Topology } from '../../topology.js';
import { M } from '../../../core/metric-catalogue.js';
import type { Metrics } from '../../../core/metrics.js';
import { readChangelogs } from './changelog-reader.js';
import type { KafkaAdmin, KafkaPort } from './kafka-port.js';

/** A store whose local state is ahead of the cluster: its checkpoint lies past its changelog's end. */
export interface StaleStore {
  readonly store: string;
  readonly topic: string;
  readonly partition: number;
  readonly checkpoint: number;
  readonly end: number;
}

/** A task's local state, open: its RocksDB, its stores, and the end of each changelog partition. */
export interface LocalTaskState extends TaskStores {
  /** Changelog topic (logical name) → end offset of the task's partition, read once by `openTaskState`. */
  readonly ends: Map<string, number>;
}

export interface TaskStateOptions {
  readonly id: TaskId;
  readonly sub: Subtopology;
  readonly topology: Topology;
  readonly taskDir: string;
  readonly admin: KafkaAdmin;
  /** The cluster's name of a topic (with the app's prefix). */
  readonly physicalTopic: (logical: string) => string;
  readonly logger: Logger;
}

/**
 * Opens a task's RocksDB and builds its stores, and reads the end of each changelog partition
 * once. Call after the task's producer has fenced earlier owners: the ends are then final, and
 * the restore reads up to them. A store whose checkpoint lies past its changelog's end was built
 * against records this cluster does not have (its topics were deleted and created again, the
 * state directory came from another cluster, an unclean election lost committed records): a
 * checkpoint only moves after a commit that wrote the changelog up to it. Kafka Streams calls such
 * a task corrupted and wipes its state; so does this, with a warning, and opens it empty. On a
 * failure nothing is left open.
 */
export async function openTaskState(o: TaskStateOptions): Promise<LocalTaskState> {
  let state = await openStores(o);
  try {
    const ends = new Map<string, number>();
    for (const { topic } of state.changelogged)
      ends.set(topic, (await o.admin.endOffsets(o.physicalTopic(topic))).get(o.id.partition) ?? 0);
    const stale = staleStores(state.changelogged, o.id.partition, ends);
    if (stale.length > 0) {
      o.logger.warn(describeStale(`${o.id.subtopology}_${o.id.partition}`, stale));
      await closeTaskStores(state);
      rmSync(join(o.taskDir, 'rocksdb'), { recursive: true, force: true });
      state = await openStores(o);
    }
    return { ...state, ends };
  } catch (err) {
    await closeTaskStores(state);
    throw err;
  }
}

function openStores(o: TaskStateOptions): Promise<TaskStores> {
  return openTaskStores(o.id, o.sub, o.topology, o.taskDir);
}

/** The stores whose local checkpoint lies past their changelog partition's end (`ends`, by topic). */
export function staleStores(
  changelogged: readonly { store: ChangeloggedStore; topic: string }[],
  partition: number,
  ends: ReadonlyMap<string, number>,
): StaleStore[] {
  const stale: StaleStore[] = [];
  for (const { store, topic } of changelogged) {
    const checkpoint = store.checkpoint();
    const end = ends.get(topic) ?? 0;
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

/**
 * Restores the task's changelogged stores from their checkpoints up to the ends read when the
 * state opened (final: the task's producer fenced earlier owners first), all stores in one read;
 * counts records and seconds per store. Returns the records restored.
 */
export async function restoreTaskState(
  port: KafkaPort,
  state: LocalTaskState,
  partition: number,
  metrics: Metrics,
  /** Called with each batch's record count as it is restored: progress while a long restore runs. */
  onBatch: (records: number) => void = () => undefined,
): Promise<number> {
  const { changelogged, ends } = state;
  const byTopic = new Map(changelogged.map((c) => [c.topic, c.store]));
  const perStore = new Map<string, number>();
  const started = Date.now();
  const restored = await readChangelogs(
    port,
    changelogged.map(({ store, topic }) => ({ topic, partition, from: store.checkpoint(), end: ends.get(topic) })),
    (topic, _p, records, next) => {
      const store = byTopic.get(topic)!;
      perStore.set(store.name, (perStore.get(store.name) ?? 0) + records.length);
      onBatch(records.length);
      store.restore(
        records.map((r) => ({ key: Buffer.from(r.key), value: r.value === null ? null : Buffer.from(r.value) })),
        next,
      );
    },
  );
  // the stores restore together: their time is shared out by the records each read
  const seconds = (Date.now() - started) / 1000;
  for (const [store, n] of perStore) {
    metrics.inc(M.restoreRecords, n, store);
    metrics.inc(M.restoreSeconds, restored > 0 ? (seconds * n) / restored : 0, store);
  }
  return restored;
}
