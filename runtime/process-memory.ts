import type { Logger } from '../core/logger.js';
import { describeOver, MemoryBudget } from '../state/memory-budget.js';
import type { RocksPort } from '../state/rocks.js';
import type { Topology } from './topology.js';

/** Where a process's memory plan sits among the objects its tasks share (`StreamTask`'s in-process map). */
export const PROCESS_MEMORY_KEY = '\u0000runtime\u0000memory-plan';

/**
 * The memory plan of a process running `topology`: its total from the topology
 * (`memoryBudgetBytes`), a warning on `logger` each time the fixed parts come to pass it.
 */
export function processMemory(topology: Topology, logger: Logger): MemoryBudget {
  return new MemoryBudget(topology.memoryBudgetBytes, (r) => logger.warn(describeOver(r), { over: r.over }));
}

/**
 * The plan stored under PROCESS_MEMORY_KEY in `shared`, made by `create` (and stored) when there
 * is none: the engine puts its own there; a task run alone gets one of its own.
 */
export function sharedMemory(shared: Map<string, unknown>, create: () => MemoryBudget): MemoryBudget {
  let plan = shared.get(PROCESS_MEMORY_KEY) as MemoryBudget | undefined;
  if (plan === undefined) shared.set(PROCESS_MEMORY_KEY, (plan = create()));
  return plan;
}

/** How often a RocksDB's claim follows what it holds. */
const REFRESH_MS = 5_000;

const MiB = 2 ** 20;

/**
 * One RocksDB's place in a process's memory plan, claimed as `rocksdb`: what it holds by its own
 * figures (`RocksPort.memory`: memtables, block cache, and the index and filter blocks of its open
 * files, which RocksDB keeps outside the block cache and which grow with its data), rounded up to
 * whole MiB and followed every few seconds. Its bounds (`RocksMemoryBounds`) cap the first two, not
 * the third. What it holds, not what its bounds allow: a process's many small databases (fetcher
 * and parser tasks, standbys) hold far less than their bounds. The binding has no cache shared
 * across databases nor a write-buffer manager, so the plan cannot size them; counting them lets it
 * shrink the caches it can size (the seen-sets') as a process opens more databases (a failover
 * onto it). Release it when the database closes.
 */
export class RocksClaim {
  private readonly claim;
  private readonly timer: NodeJS.Timeout;
  private last = 0;

  constructor(
    plan: MemoryBudget,
    private readonly db: Pick<RocksPort, 'memory'>,
    refreshMs = REFRESH_MS,
  ) {
    this.claim = plan.claim('rocksdb', this.held());
    this.timer = setInterval(() => this.refresh(), refreshMs).unref();
  }

  /** Follows what the database holds now. */
  refresh(): void {
    this.claim.update(this.held());
  }

  /** Gives the claim back (the database closed). Idempotent. */
  release(): void {
    clearInterval(this.timer);
    this.claim.release();
  }

  private held(): number {
    try {
      const m = this.db.memory();
      const bytes = Math.max(0, m.memtables) + Math.max(0, m.blockCache) + Math.max(0, m.tableReaders);
      this.last = Math.ceil(bytes / MiB) * MiB;
    } catch {
      // closing: its last figure stands until the claim is released
    }
    return this.last;
  }
}
