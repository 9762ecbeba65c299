import { isCrawlError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { StoreBuilder } from '../state/store-builder.js';
import type { TaskDir } from './task-directory.js';
import { storesWithoutChangelog } from './task-state.js';

/** How long after a task's stores were repaired a new corruption of them is not repaired again. */
export const REPAIR_QUIET_MS = 10 * 60_000;

/**
 * Corrupt state met while a task runs is its storage's fault, not its record's (Kafka Streams
 * raises TaskCorruptedException for it): the task's work since its last commit is thrown away, its
 * processors and stores are closed and opened again, and it runs again from its committed
 * positions. The opening wipes the RocksDB the read marked corrupt (`TaskDir.markCorrupt`) and
 * restores it from the changelogs (task-state.ts), so the record that met the corruption is
 * processed again on sound state, never dead-lettered, and a punctuator that met it does not
 * quarantine the task.
 *
 * One engine's ledger of those repairs. A failure is repaired only when it is CS_STORE_CORRUPT, its
 * task's directory is marked, and every store in the RocksDB has a changelog to be restored from;
 * and not when the same task was repaired less than REPAIR_QUIET_MS ago: state found corrupt again
 * so soon after a fresh restore is a disk that damages what is written to it, and the failure then
 * goes the way of any other (a dead letter, a quarantine) rather than round a wipe-and-restore loop.
 * Not thread-safe; one per engine (a Kafka task's next opening is a new KafkaTask, the ledger stays).
 */
export class StoreRepairs {
  private readonly last = new Map<string, number>();

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether task `name`'s failure `err` is repaired by opening its stores again (then recorded as
   * one repair, with a warning line); `dir` is the task's directory, `stores` its sub-topology's.
   */
  claim(name: string, err: unknown, dir: TaskDir, stores: readonly StoreBuilder[]): boolean {
    if (!isCrawlError(err) || err.code !== 'CS_STORE_CORRUPT') return false;
    const marked = dir.corruption();
    if (marked === undefined || storesWithoutChangelog(stores).length > 0) return false;
    const at = this.now();
    const previous = this.last.get(name);
    if (previous !== undefined && at - previous < REPAIR_QUIET_MS) {
      this.logger.warn(
        `task ${name}: its RocksDB was found corrupt again ${Math.round((at - previous) / 1000)} s after it was restored (${marked}); ` +
          `not repaired again: check the disk under ${dir.live}`,
      );
      return false;
    }
    this.last.set(name, at);
    this.logger.warn(
      `task ${name}: a read found its RocksDB corrupt (${marked}); its work since the last commit is thrown away and its stores are opened again`,
    );
    return true;
  }
}
