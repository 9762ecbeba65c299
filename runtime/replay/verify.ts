import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RocksPort } from '../../state/rocks.js';
import type { ChangeloggedStore } from '../../state/state-store.js';
import type { Topology } from '../topology.js';
import type { ChangelogSource } from '../changelog-source.js';
import { closeStores, restoreStores } from '../task-state.js';
import { planStores, planTasks, replayStores, type TaskPlan } from './store-plan.js';

/** The verdict on one local copy of one store partition. */
export interface ReplayReport {
  readonly store: string;
  readonly partition: number;
  /** The changelog offset the local copy says it reflects. */
  readonly checkpoint: number;
  /** Entries of the local copy. */
  readonly entries: number;
  /** Keys the replay has and the copy lacks, keys only the copy has, keys whose values differ. */
  readonly missing: number;
  readonly extra: number;
  readonly differing: number;
  /** Committed changelog records after the checkpoint: 0 = current; more = a stale copy (another instance owns the partition now). */
  readonly behind: number;
  /** The first differing key (in key order), printable; undefined when equal. */
  readonly firstDifference?: string;
}

export function replayEqual(r: ReplayReport): boolean {
  return r.missing === 0 && r.extra === 0 && r.differing === 0;
}

/**
 * Rebuilds changelogged stores of `dataDir` from their changelogs (from offset 0 up to each local
 * copy's checkpoint) and compares the rebuild with the local RocksDB copy, entry by entry. The
 * rebuild is the engines' restore (`restoreStores`) into the store's own builder on a scratch
 * RocksDB under the system's temporary directory, removed when the task is compared: nothing in
 * `dataDir` is written. The instance owning `dataDir` must be stopped (RocksDB allows one
 * process). `stores` empty = every changelogged store; `partition` undefined = every partition
 * with a local copy.
 */
export async function verifyStores(
  source: ChangelogSource,
  topology: Topology,
  dataDir: string,
  stores: readonly string[],
  partition?: number,
): Promise<ReplayReport[]> {
  const tasks = planTasks(
    dataDir,
    planStores(topology, stores),
    partition === undefined ? 'local' : { partition },
  ).filter((t) => t.dir.hasLive());
  const reports: ReplayReport[] = [];
  for (const task of tasks) reports.push(...(await verifyTask(source, topology, task)));
  return reports;
}

/** One chosen store of a task: its local copy, its rebuild, and where its changelog ends. */
interface Pair {
  readonly name: string;
  readonly topic: string;
  readonly local: ChangeloggedStore;
  readonly replayed: ChangeloggedStore;
  readonly checkpoint: number;
  readonly end: number;
}

async function verifyTask(source: ChangelogSource, topology: Topology, task: TaskPlan): Promise<ReplayReport[]> {
  const scratchPath = mkdtempSync(join(tmpdir(), `crawlstream-verify-${task.dir.name}-`));
  let db: RocksPort | undefined;
  let scratch: RocksPort | undefined;
  try {
    db = await task.dir.openLive();
    scratch = await task.dir.open(scratchPath);
    const locals = replayStores(topology, task, db, task.chosen);
    const replayed = replayStores(topology, task, scratch, task.chosen);
    const pairs: Pair[] = [];
    for (const [i, { store: local, topic }] of locals.changelogged.entries()) {
      pairs.push({
        name: local.name,
        topic,
        local,
        replayed: replayed.changelogged[i]!.store,
        checkpoint: local.checkpoint(),
        end: (await source.endOffsets(topic, task.sub.partitions))[task.partition]!,
      });
    }
    // a checkpoint past the end (a copy ahead of its changelog) replays what there is
    await restoreStores(
      source,
      task.partition,
      pairs.map((p) => ({ store: p.replayed, topic: p.topic, to: Math.min(p.checkpoint, p.end) })),
    );
    const behind = await countRecords(source, task.partition, pairs);
    const reports = pairs.map((p) => ({
      store: p.name,
      partition: task.partition,
      checkpoint: p.checkpoint,
      behind: behind.get(p.topic) ?? 0,
      ...compareEntries(p.local.entries(), p.replayed.entries()),
    }));
    closeStores(locals);
    closeStores(replayed);
    return reports;
  } finally {
    await db?.close();
    await scratch?.close();
    rmSync(scratchPath, { recursive: true, force: true });
  }
}

/** The committed records after each copy's checkpoint, by topic: how far a stale copy is behind. */
async function countRecords(
  source: ChangelogSource,
  partition: number,
  pairs: readonly Pair[],
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const ranges = pairs
    .filter((p) => p.checkpoint < p.end)
    .map((p) => ({ topic: p.topic, partition, from: p.checkpoint, to: p.end }));
  if (ranges.length > 0)
    await source.read(ranges, (topic, _p, records) => counts.set(topic, (counts.get(topic) ?? 0) + records.length));
  return counts;
}

type Diff = Pick<ReplayReport, 'entries' | 'missing' | 'extra' | 'differing' | 'firstDifference'>;

/** Walks both copies in key order (RocksDB's bytewise order) side by side. */
function compareEntries(local: Iterator<[Buffer, Buffer]>, replayed: Iterator<[Buffer, Buffer]>): Diff {
  let entries = 0;
  let missing = 0;
  let extra = 0;
  let differing = 0;
  let first: Buffer | undefined;
  let l = local.next();
  let r = replayed.next();
  while (!l.done || !r.done) {
    const order = l.done ? 1 : r.done ? -1 : Buffer.compare(l.value[0], r.value[0]);
    if (order < 0) {
      extra++;
      first ??= l.value![0];
    } else if (order > 0) {
      missing++;
      first ??= r.value![0];
    } else if (!l.value![1].equals(r.value![1])) {
      differing++;
      first ??= l.value![0];
    }
    if (order <= 0) {
      entries++;
      l = local.next();
    }
    if (order >= 0) r = replayed.next();
  }
  return { entries, missing, extra, differing, ...(first !== undefined ? { firstDifference: printable(first) } : {}) };
}

function printable(key: Buffer): string {
  const text = key.toString('utf8');
  return /^[\x20-\x7e]*$/.test(text) ? JSON.stringify(text) : `0x${key.toString('hex')}`;
}
