import type { Logger } from '../core/logger.js';
import type { TaskId } from '../core/ids.js';
import { M } from '../core/metric-catalogue.js';
import type { Metrics } from '../core/metrics.js';
import type { RocksPort } from '../state/rocks.js';
import type { ChangeloggedStore, StateStore } from '../state/state-store.js';
import { isChangelogged, type StoreBuilder } from '../state/store-builder.js';
import { CrawlError, isCrawlError } from '../core/errors.js';
import { rangeKey, type ChangelogRecord, type ChangelogSource } from './changelog-source.js';
import type { TaskDir } from './task-directory.js';
import type { Subtopology, Topology } from './topology.js';

/**
 * The state of one task, the same for both engines and for replay: open its stores, restore them
 * from a `ChangelogSource`, turn their pending writes into changelog records for a commit, apply
 * them once the commit is durable, close. The engines differ only in how a commit is made durable
 * (one RocksDB batch of the embedded log, one Kafka transaction) and in how they consume input.
 */

/** A changelogged store with its changelog topic (logical name). */
export interface ChangeloggedEntry {
  readonly store: ChangeloggedStore;
  readonly topic: string;
}

/** A task's local state, open: its RocksDB, its stores by name, and the changelogged ones with their topics. */
export interface TaskStores {
  readonly db: RocksPort;
  readonly stores: Map<string, StateStore>;
  /** In the sub-topology's order. */
  readonly changelogged: ChangeloggedEntry[];
}

/** A task's state as `openTaskState` opens it: its stores, and where each changelog partition ends. */
export interface LocalTaskState extends TaskStores {
  readonly id: TaskId;
  readonly dir: TaskDir;
  /** Changelog topic → end offset of the task's partition, read once at the opening. */
  readonly ends: ReadonlyMap<string, number>;
}

export interface OpenTaskStateOptions {
  readonly id: TaskId;
  readonly sub: Subtopology;
  readonly topology: Topology;
  readonly dir: TaskDir;
  /** Where the changelogs are: their ends are read once, and the restore reads up to them. */
  readonly source: ChangelogSource;
  readonly logger: Logger;
  /** Where a wipe is counted (`crawlstream_store_wipes_total{reason}`); none when absent (replay, tests). */
  readonly metrics?: Metrics;
}

/** Every reason a task's local state is wiped, exported at 0 from an engine's start so a dashboard and an alert see the series. */
export const WIPE_REASONS = ['corrupt-at-open', 'corrupt-read', 'stale-checkpoint'] as const;

/** Why a task's local state was wiped and restored: the `reason` label of `crawlstream_store_wipes_total`. */
export type WipeReason = (typeof WIPE_REASONS)[number];

/** Wipes `o`'s live RocksDB (closed) and counts it. */
function wipe(o: OpenTaskStateOptions, reason: WipeReason): void {
  o.dir.wipeLive();
  o.metrics?.inc(M.storeWipes, 1, reason);
}

/** A store whose local state is ahead of the cluster: its checkpoint lies past its changelog's end. */
export interface StaleStore {
  readonly store: string;
  readonly topic: string;
  readonly partition: number;
  readonly checkpoint: number;
  readonly end: number;
}

/**
 * Opens a task's stores as the disk left them (after recovering a rebuild cut short) and reads the
 * end of each changelog partition once. On Kafka, call it after the task's producer has fenced
 * earlier owners: the ends are then final. A store whose checkpoint lies past its changelog's end
 * was built against records the changelogs do not have (topics deleted and created again, a state
 * directory of another cluster, an unclean election): a checkpoint only moves after a commit that
 * wrote the changelog up to it. Like Kafka Streams with a corrupted task, the local state is then
 * wiped, with a warning, and opened empty. So is a live RocksDB that RocksDB finds corrupt at the
 * opening (CS_STORE_CORRUPT: a torn MANIFEST, a bad SST) or that a read found corrupt while it was
 * open (`TaskDir.markCorrupt`): see `openRestorable`. Either way the caller's restore then reads
 * the changelogs from offset 0. The caller owns the result (`closeTaskState`); on a failure
 * nothing is left open.
 */
export async function openTaskState(o: OpenTaskStateOptions): Promise<LocalTaskState> {
  for (const line of o.dir.recover()) o.logger.info(`task ${o.dir.name}: ${line}`);
  let state = await openRestorable(o);
  try {
    const ends = new Map<string, number>();
    for (const { topic } of state.changelogged)
      ends.set(topic, (await o.source.endOffsets(topic, o.sub.partitions))[o.id.partition] ?? 0);
    const stale = staleStores(state.changelogged, o.id.partition, ends);
    if (stale.length > 0) {
      o.logger.warn(describeStale(o.dir.name, stale));
      await closeTaskState(state);
      wipe(o, 'stale-checkpoint');
      state = await openTaskStores(o.id, o.sub, o.topology, o.dir);
    }
    return { ...state, id: o.id, dir: o.dir, ends };
  } catch (err) {
    await closeTaskState(state);
    throw err;
  }
}

/**
 * `openTaskStores`, with a corrupt live RocksDB wiped (one warning naming its path, RocksDB's
 * message and the stores to restore) and opened empty: when RocksDB reports corruption at the
 * opening or while the stores are built (CS_STORE_CORRUPT), and when a read marked it corrupt
 * while it was open (`TaskDir.corruption`). Only a RocksDB whose every store is restorable is
 * wiped: each store that keeps state in it (`StoreBuilder.inRocks`) has a changelog. Otherwise a
 * corruption found at the opening stays fatal (CS_STORE_CORRUPT naming the stores without a
 * changelog and the path to repair or remove), and a marked one is opened as it is, with a
 * warning. No other failure wipes anything: a held lock, a full disk (CS_DISK_FULL), permissions.
 */
async function openRestorable(o: OpenTaskStateOptions): Promise<TaskStores> {
  const unrestorable = storesWithoutChangelog(o.sub.stores);
  let state: TaskStores;
  try {
    state = await openTaskStores(o.id, o.sub, o.topology, o.dir);
  } catch (err) {
    if (!isCrawlError(err) || err.code !== 'CS_STORE_CORRUPT') throw err;
    if (unrestorable.length > 0)
      throw new CrawlError(
        'CS_STORE_CORRUPT',
        `task ${o.dir.name}: ${err.message}; not wiped: ${describeUnrestorable(unrestorable)}; repair or remove ${o.dir.live}`,
        { cause: err },
      );
    o.logger.warn(describeCorrupt(o.dir.name, o.sub.stores, err.message));
    wipe(o, 'corrupt-at-open');
    return openTaskStores(o.id, o.sub, o.topology, o.dir);
  }
  // read once this opening owns the copy: an earlier owner may have marked it until its close
  const marked = o.dir.corruption();
  if (marked === undefined) return state;
  if (unrestorable.length > 0) {
    o.logger.warn(
      `task ${o.dir.name}: a read found its RocksDB corrupt (${marked}), but ${describeUnrestorable(unrestorable)}: ` +
        `opened as it is; repair or remove ${o.dir.live}`,
    );
    return state;
  }
  o.logger.warn(describeCorrupt(o.dir.name, o.sub.stores, marked));
  await closeTaskState(state);
  wipe(o, 'corrupt-read');
  return openTaskStores(o.id, o.sub, o.topology, o.dir);
}

/** The stores of `builders` that keep state in the task's RocksDB without a changelog to restore it from. */
export function storesWithoutChangelog(builders: readonly StoreBuilder[]): string[] {
  return builders.filter((b) => b.inRocks !== false && !b.changelog).map((b) => b.name);
}

function describeUnrestorable(stores: readonly string[]): string {
  const which = stores.length === 1 ? `store ${stores[0]} keeps` : `stores ${stores.join(', ')} keep`;
  return `${which} state in it with no changelog to restore it from`;
}

/** One line for the log: the task's RocksDB is corrupt (`why`, RocksDB's words), and what is done about it. */
export function describeCorrupt(task: string, builders: readonly StoreBuilder[], why: string): string {
  const restored = builders.filter((b) => b.changelog).map((b) => b.name);
  return (
    `task ${task}: its RocksDB is corrupt (${why.replace(/\s+/g, ' ')}); wiping the task's local state and restoring it from the changelogs` +
    (restored.length > 0 ? ` (${restored.join(', ')})` : '')
  );
}

/**
 * Opens the task's live RocksDB and builds the stores of `sub` on it (`buildStores`). The stores
 * are as the disk left them. The caller owns the result and closes it with `closeTaskState`; if a
 * store fails to build, what was opened is closed first.
 */
export async function openTaskStores(
  id: TaskId,
  sub: Subtopology,
  topology: Topology,
  dir: TaskDir,
): Promise<TaskStores> {
  const db = await dir.openLive();
  try {
    return buildStores(id, sub.stores, { db, storeDir: (name) => dir.storeDir(name) }, (name) =>
      topology.changelogTopic(name),
    );
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}

/** Where a task's stores are built: an open RocksDB, and the directory each store keeps its own files in. */
export interface StoreHome {
  readonly db: RocksPort;
  storeDir(store: string): string;
}

/**
 * Builds `builders` on `home` as task `id`'s stores: the one place a store is built, for the
 * engines and the test driver (the live RocksDB, `openTaskStores`), replay (a rebuild's copy, a
 * scratch copy to compare) and reparse (scratch stores). With `changelogTopic`, a builder that
 * declares a changelog must build a changelogged store (CS_TOPOLOGY otherwise) and is listed with
 * its topic; without it the stores are scratch and none is listed. The stores are as the RocksDB
 * holds them. The caller owns the result (`closeStores`, or `closeTaskState` to close the RocksDB
 * too); if a store fails to build, those built are closed and the RocksDB is left to the caller.
 */
export function buildStores(
  id: TaskId,
  builders: readonly StoreBuilder[],
  home: StoreHome,
  changelogTopic?: (store: string) => string,
): TaskStores {
  const stores = new Map<string, StateStore>();
  const changelogged: ChangeloggedEntry[] = [];
  try {
    for (const builder of builders) {
      const store = builder.build({ taskId: id, db: home.db, dir: home.storeDir(builder.name) });
      stores.set(builder.name, store);
      if (!builder.changelog || !changelogTopic) continue;
      if (!isChangelogged(store))
        throw new CrawlError(
          'CS_TOPOLOGY',
          `store ${builder.name} declares a changelog but is not a changelogged store`,
        );
      changelogged.push({ store, topic: changelogTopic(builder.name) });
    }
  } catch (err) {
    closeStores({ stores });
    throw err;
  }
  return { db: home.db, stores, changelogged };
}

/** The stores whose local checkpoint lies past their changelog partition's end (`ends`, by topic). */
export function staleStores(
  changelogged: readonly ChangeloggedEntry[],
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

/** One store to restore: from its checkpoint up to `to` (exclusive). */
export interface RestoreTarget extends ChangeloggedEntry {
  readonly to: number;
  /** Its changelog partition, when not the one `restoreStores` is called with (standbys of several tasks in one read). */
  readonly partition?: number;
}

/** What a restore did to one store. */
export interface StoreRestore {
  readonly store: string;
  readonly topic: string;
  /** Records applied. */
  readonly records: number;
  /** The offset of the last record applied; -1 when none. */
  readonly last: number;
  /** The checkpoint the store records now (the source's: it may pass `last + 1` over transaction markers). */
  readonly checkpoint: number;
}

export interface RestoreOptions {
  /** Counts `crawlstream_restore_records` and `_seconds` per store (their time shared out by the records each read). */
  readonly metrics?: Metrics;
  /** Called with each batch's record count as it is applied: progress while a long restore runs. */
  readonly onBatch?: (records: number) => void;
}

/**
 * Replays each target's changelog partition (`partition`, unless the target names its own) from
 * the store's checkpoint up to `to` into the store, all targets in one read of `source`, and
 * records the checkpoint the source reports.
 * The one restore of the engines (up to the ends read at the opening) and of `replay rebuild`
 * (a fresh store, from 0). A failure, or an `onBatch` that throws (how a standby's catch-up is cut
 * short), ends the read at once and leaves each store at the last batch applied.
 */
export async function restoreStores(
  source: ChangelogSource,
  partition: number,
  targets: readonly RestoreTarget[],
  options: RestoreOptions = {},
): Promise<StoreRestore[]> {
  const partitionOf = (t: RestoreTarget): number => t.partition ?? partition;
  const byRange = new Map(targets.map((t) => [rangeKey(t.topic, partitionOf(t)), { target: t, records: 0, last: -1 }]));
  const ranges = targets
    .map((t) => ({ topic: t.topic, partition: partitionOf(t), from: t.store.checkpoint(), to: t.to }))
    .filter((r) => r.from < r.to);
  const started = process.hrtime.bigint();
  const checkpoints =
    ranges.length === 0
      ? new Map<string, number>()
      : await source.read(ranges, (topic, p, records) => {
          const s = byRange.get(rangeKey(topic, p))!;
          s.last = records[records.length - 1]!.offset;
          s.records += records.length;
          s.target.store.restore(records as ChangelogRecord[], s.last + 1);
          options.onBatch?.(records.length);
        });
  const results: StoreRestore[] = [];
  let total = 0;
  for (const { target, records, last } of byRange.values()) {
    const checkpoint = checkpoints.get(rangeKey(target.topic, partitionOf(target)));
    // the source may pass the last record (commit markers after it): the store starts there next time
    if (checkpoint !== undefined && checkpoint > target.store.checkpoint()) target.store.restore([], checkpoint);
    results.push({
      store: target.store.name,
      topic: target.topic,
      records,
      last,
      checkpoint: target.store.checkpoint(),
    });
    total += records;
  }
  if (options.metrics) {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    // every store counts, 0 included: its series exists from the task's opening
    for (const r of results) {
      options.metrics.inc(M.restoreRecords, r.records, r.store);
      options.metrics.inc(M.restoreSeconds, total > 0 ? (seconds * r.records) / total : 0, r.store);
    }
  }
  return results;
}

/**
 * Restores an opened task's changelogged stores up to the ends read at its opening; returns the
 * records applied, and when there were any says one line: `task 1_3: restored 120 changelog
 * records in 40 ms (hosts 100, queue 20)`.
 */
export async function restoreTaskState(
  state: LocalTaskState,
  source: ChangelogSource,
  options: RestoreOptions & { readonly say?: (line: string) => void } = {},
): Promise<number> {
  const started = Date.now();
  const targets = state.changelogged.map((c) => ({ ...c, to: state.ends.get(c.topic) ?? 0 }));
  const restored = (await restoreStores(source, state.id.partition, targets, options)).filter((r) => r.records > 0);
  const total = restored.reduce((n, r) => n + r.records, 0);
  if (total > 0)
    options.say?.(
      `task ${state.dir.name}: restored ${total} changelog records in ${Date.now() - started} ms ` +
        `(${restored.map((r) => `${r.store} ${r.records}`).join(', ')})`,
    );
  return total;
}

/** A changelog record of a commit, addressed to its topic partition. */
export interface ChangelogWrite {
  readonly topic: string;
  readonly partition: number;
  readonly key: Buffer;
  readonly value: Buffer | null;
  readonly timestamp: number;
}

/** What one task's stores hand to a commit: their changelog records, and what to apply once it is durable. */
export interface PreparedCommit {
  readonly records: ChangelogWrite[];
  readonly applied: readonly {
    readonly store: ChangeloggedStore;
    readonly topic: string;
    readonly partition: number;
    readonly count: number;
  }[];
}

/**
 * Flushes every store of the task and turns the changelogged stores' pending writes into
 * changelog records (one per key, the last write; deletes as null), stamped `now`. Nothing is
 * applied: after the commit made them durable, `applyCommitted` does; after a failed one,
 * `discardPending`. Call it with no store write running.
 */
export function prepareCommit(state: TaskStores, partition: number, now: number): PreparedCommit {
  for (const s of state.stores.values()) s.flush();
  const records: ChangelogWrite[] = [];
  const applied: { store: ChangeloggedStore; topic: string; partition: number; count: number }[] = [];
  for (const { store, topic } of state.changelogged) {
    const changes = store.pendingChanges();
    if (changes.length === 0) continue;
    for (const c of changes) records.push({ topic, partition, key: c.key, value: c.value, timestamp: now });
    applied.push({ store, topic, partition, count: changes.length });
  }
  return { records, applied };
}

/**
 * Applies a durable commit to the local stores: each store writes its pending changes and moves
 * its checkpoint past its records, at `bases` (`rangeKey(topic, partition)` → the first offset
 * the commit wrote there) + its count.
 */
export function applyCommitted(prepared: PreparedCommit, bases: ReadonlyMap<string, number>): void {
  for (const a of prepared.applied) a.store.applyCommitted(bases.get(rangeKey(a.topic, a.partition))! + a.count);
}

/** Drops every pending write (a commit failed or will not be made): the stores stay at their last commit. */
export function discardPending(state: Pick<TaskStores, 'changelogged'>): void {
  for (const { store } of state.changelogged) store.discardPending();
}

/** Whether any changelogged store holds writes no commit has made durable yet. */
export function hasPendingWrites(state: Pick<TaskStores, 'changelogged'>): boolean {
  for (const { store } of state.changelogged) if (store.pendingCount() > 0) return true;
  return false;
}

/**
 * Closes the task's processors (when given), then its stores, then their RocksDB (whose close
 * failure, with nothing left to lose, is ignored). Pending writes are not committed: call
 * `discardPending` or commit first.
 */
export async function closeTaskState(state: TaskStores, task?: { close(): Promise<void> }): Promise<void> {
  await task?.close();
  closeStores(state);
  await state.db.close().catch(() => undefined);
}

/** Closes the stores and leaves their RocksDB open (a rebuild writes and syncs it before closing it). */
export function closeStores(state: Pick<TaskStores, 'stores'>): void {
  for (const store of state.stores.values()) store.close();
}
