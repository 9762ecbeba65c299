import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CrawlError } from '../../../core/errors.js';
import { TaskDirectory } from '../../task-directory.js';

/** The file in a data dir that names the cluster its task state was built from. */
export const CLUSTER_ID_FILE = 'cluster-id';

/** What `claimStateDir` found: a data dir new to clusters, one of this cluster, or one of another (its state wiped). */
export type StateDirClaim =
  { readonly kind: 'new' } | { readonly kind: 'same' } | { readonly kind: 'wiped'; readonly previous: string };

/**
 * Binds `dataDir`'s task state (`state/`) to the cluster `clusterId`. A data dir whose state was
 * built from another cluster (a volume moved, a cluster rebuilt under the same address) holds
 * stores and checkpoints that mean nothing here, and whose checkpoints may even lie below the new
 * changelogs' ends, where the checkpoint check of task-state.ts cannot see them: its `state/` is
 * removed, and the tasks restore from this cluster's changelogs. A data dir without the file
 * (new, or from before it was written) is claimed as it is. Idempotent; the file is replaced
 * atomically. Throws CS_STORE when the directory cannot be read or written.
 */
export function claimStateDir(dataDir: string, clusterId: string): StateDirClaim {
  if (clusterId === '') throw new CrawlError('CS_KAFKA', 'the brokers report no cluster id');
  const file = join(dataDir, CLUSTER_ID_FILE);
  try {
    const previous = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    if (previous === clusterId) return { kind: 'same' };
    if (previous !== '') new TaskDirectory(dataDir).wipeAll();
    writeFileSync(`${file}.tmp`, `${clusterId}\n`);
    renameSync(`${file}.tmp`, file);
    return previous !== '' ? { kind: 'wiped', previous } : { kind: 'new' };
  } catch (err) {
    throw new CrawlError(
      'CS_STORE',
      `cannot bind the data dir ${dataDir} to cluster ${clusterId}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      { cause: err },
    );
  }
}
