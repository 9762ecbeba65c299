import { readdirSync, readFileSync } from 'node:fs';

/** Linux's clock ticks per second for /proc CPU times (USER_HZ, 100 on every common build). */
const CLK_TCK = 100;

/** CPU and memory of a live process, read from /proc. */
export interface ProcessUsage {
  /** CPU seconds, user + system, all threads (those that ended included). */
  readonly cpuS: number;
  readonly rssMiB: number;
  /** Peak resident MiB (VmHWM). */
  readonly peakMiB: number;
  /** MiB it caused to be written to storage (`write_bytes` of /proc/PID/io; 0 when unreadable). */
  readonly writtenMiB: number;
}

/** CPU seconds of one thread of a process, or of several taken together. */
export interface ThreadUsage {
  /** `main` for the process's first thread, else `NAME#TID` (`/proc/PID/task/TID/comm`), or a count of threads summed. */
  readonly name: string;
  readonly cpuS: number;
}

/** User + system CPU seconds from a /proc stat line (its fields after the command name). */
function statCpuS(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** CPU seconds, user + system, of the calling thread (/proc/thread-self); 0 where that is not readable. */
export function callingThreadCpuS(): number {
  try {
    return statCpuS(readFileSync('/proc/thread-self/stat', 'latin1'));
  } catch {
    return 0;
  }
}

/** Usage of process `pid`; throws ENOENT once it has ended. */
export function processUsage(pid: number): ProcessUsage {
  const cpuS = statCpuS(readFileSync(`/proc/${pid}/stat`, 'latin1'));
  const status = readFileSync(`/proc/${pid}/status`, 'latin1');
  const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  let written = 0;
  try {
    written = Number(/write_bytes:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'latin1'))?.[1] ?? 0);
  } catch {
    // another user's process: /proc/PID/io is not readable
  }
  return { cpuS, rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024, writtenMiB: written / 2 ** 20 };
}

/**
 * CPU of the live threads of process `pid`: the main thread first, then the others busiest first.
 * Threads that ended are missing (their time stays only in {@link processUsage}); a thread that ends
 * while this reads is skipped. Node names all its threads `node` (libuv's pool, V8's platform
 * workers, worker_threads alike), so threads are told apart by id, not by name.
 */
export function threadUsage(pid: number): ThreadUsage[] {
  const threads: ThreadUsage[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'latin1').trim();
      const cpuS = statCpuS(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'latin1'));
      threads.push({ name: tid === String(pid) ? 'main' : `${comm}#${tid}`, cpuS });
    } catch {
      continue;
    }
  }
  return threads.sort((a, b) => (a.name === 'main' ? -1 : b.name === 'main' ? 1 : b.cpuS - a.cpuS));
}

/** `threads` with those after the first `keep` summed into one entry named by their count. */
export function topThreads(threads: readonly ThreadUsage[], keep: number): ThreadUsage[] {
  const rest = threads.slice(keep);
  if (rest.length <= 1) return [...threads];
  return [...threads.slice(0, keep), { name: `${rest.length} others`, cpuS: rest.reduce((sum, t) => sum + t.cpuS, 0) }];
}

/** Jiffies of one core of the machine since boot (/proc/stat): busy, and busy + idle. */
export interface CoreTicks {
  readonly busy: number;
  readonly total: number;
}

/**
 * Every core's ticks, `cpu0` first; [] where /proc/stat is not readable. Busy is all but idle and
 * iowait (steal counts as busy: the core was not free for this machine).
 */
export function coreTicks(): CoreTicks[] {
  let stat: string;
  try {
    stat = readFileSync('/proc/stat', 'latin1');
  } catch {
    return [];
  }
  const cores: CoreTicks[] = [];
  for (const line of stat.split('\n')) {
    if (!/^cpu\d+ /.test(line)) continue;
    const t = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = t.reduce((sum, x) => sum + x, 0);
    cores.push({ busy: total - t[3]! - t[4]!, total });
  }
  return cores;
}

/** Each core's busy share between two readings of {@link coreTicks} (0–1); [] when either is empty. */
export function coresBusy(from: readonly CoreTicks[], to: readonly CoreTicks[]): number[] {
  if (from.length === 0 || from.length !== to.length) return [];
  return to.map((c, i) => (c.busy - from[i]!.busy) / Math.max(1, c.total - from[i]!.total));
}
