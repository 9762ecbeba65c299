import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { SyntheticWeb } from '../synthetic-web/synthetic-web.js';
import type { RequestLogEntry } from '../synthetic-web/request-log.js';
import { figure } from './machine.js';
import {
  coresBusy,
  coreTicks,
  processUsage,
  threadUsage,
  topThreads,
  type CoreTicks,
  type ThreadUsage,
} from './proc-usage.js';

/** What one crawler did on the web until 99 % of its pages were fetched (or it stopped, or time ran out). */
export interface CrawlRun {
  readonly label: string;
  /** Distinct pages (host and path) answered 200, robots.txt aside, when the figures were taken. */
  readonly pages: number;
  readonly total: number;
  readonly s: number;
  readonly reached99: boolean;
  /** CPU seconds of the crawler's processes, all threads, at the last look (every 0.5 s) ... */
  readonly cpuS: number;
  /** ... when it had fetched this many pages: CPU per page is cpuS / cpuPages. */
  readonly cpuPages: number;
  /** Peak resident MiB (VmHWM), summed over the crawler's processes when it has several. */
  readonly peakMiB: number;
  /** Each process's peak resident MiB, by name, when the crawler has several; else empty. */
  readonly peaks: readonly { readonly name: string; readonly peakMiB: number }[];
  /** MiB the crawler caused to be written to storage by then (its log, stores, WARC files). */
  readonly writtenMiB: number;
  /**
   * Its live threads' CPU at the last look before the figures were taken, main threads first (named
   * `ROLE main` and so on when the crawler has several processes).
   */
  readonly threads: readonly ThreadUsage[];
  /** The machine's 1-minute load average when the crawler started and when the figures were taken. */
  readonly load: readonly [number, number];
  /**
   * Each core's busy share (0–1) from the first look that found a page fetched to the figures,
   * whatever kept it busy (crawler, web, broker); [] where /proc/stat is not readable.
   */
  readonly coresBusy: readonly number[];
  /** CPU ms this (the web's) process spent per request while the crawler ran. */
  readonly serverMsPerRequest: number;
  /**
   * How late this (the web's) process's event loop ran, in ms, p99 and max while the crawler ran:
   * the judge stamps a request when the loop reads it, so a stamp can be late by this much.
   */
  readonly webLoopDelayMs: { readonly p99: number; readonly max: number };
}

/** One process of a crawler: its name in the figures and the arguments to `node` that start it. */
export interface CrawlerProcess {
  readonly name: string;
  readonly argv: readonly string[];
}

export interface MeasureOptions {
  readonly label: string;
  /** Arguments to `node` for the crawler's process (Node flags, script, its arguments). */
  readonly argv: readonly string[];
  /**
   * The crawler is these processes instead (one a role, on Kafka), measured as one crawler: CPU and
   * bytes written summed, peaks summed and shown each; the first to exit ends the measure.
   */
  readonly processes?: readonly CrawlerProcess[];
  /** Added to this process's environment for the crawler's. */
  readonly env?: Readonly<Record<string, string>>;
  readonly web: SyntheticWeb;
  /** Pages a full crawl fetches. */
  readonly total: number;
  readonly limitS: number;
  /** Prints a progress line every this many seconds (0: none). */
  readonly progressS?: number;
}

const POLL_MS = 500;

/**
 * Runs a crawler as its own process against `web` and follows the web's log: at 99 % of `total`
 * distinct pages, or when the crawler exits, or after `limitS`, it takes the figures and ends the
 * crawler (SIGTERM, then waits for it to exit, so a `--cpu-prof` profile gets written).
 */
export async function measureCrawl(o: MeasureOptions): Promise<CrawlRun> {
  const several = o.processes !== undefined;
  const children = (o.processes ?? [{ name: '', argv: o.argv }]).map(({ name, argv }) => {
    const child = spawn(process.execPath, [...argv], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, ...o.env },
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return { name, child, pid: child.pid!, exited };
  });
  const exited = Promise.race(children.map((c) => c.exited));
  const allExited = Promise.all(children.map((c) => c.exited));
  const stopAll = async (): Promise<void> => {
    for (const c of children) c.child.kill('SIGTERM');
    await allExited;
  };
  const serverCpu0 = process.cpuUsage();
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  const load0 = loadavg()[0]!;
  const requests0 = o.web.finishedSince(0).length;
  const started = performance.now();
  const startedAt = performance.timeOrigin + started;
  const pages = new Set<string>();
  /** Seconds from the start to the end of the response that made 99 % of the pages (from the log, not the poll). */
  let at99: { s: number; pages: number } | undefined;
  let read = requests0;
  const follow = (): void => {
    const fresh: readonly RequestLogEntry[] = o.web.finishedSince(read);
    read += fresh.length;
    for (const e of fresh) {
      if (e.status !== 200 || e.path === '/robots.txt') continue;
      pages.add(`${e.host} ${e.path}`);
      if (at99 === undefined && pages.size >= 0.99 * o.total)
        at99 = { s: (e.end - startedAt) / 1000, pages: pages.size };
    }
  };
  let last = { cpuS: 0, rssMiB: 0, peakMiB: 0, writtenMiB: 0 };
  let peaks: { name: string; peakMiB: number }[] = [];
  let threads: ThreadUsage[] = [];
  let cpuPages = 0;
  let cores0: CoreTicks[] | undefined;
  let cores: CoreTicks[] = [];
  let nextLine = o.progressS ?? 0;
  let s: number;
  for (;;) {
    const done = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(r, POLL_MS, false))]);
    s = (performance.now() - started) / 1000;
    follow();
    if (done) break;
    try {
      const usages = children.map((c) => processUsage(c.pid));
      last = {
        cpuS: sum(usages.map((u) => u.cpuS)),
        rssMiB: sum(usages.map((u) => u.rssMiB)),
        peakMiB: sum(usages.map((u) => u.peakMiB)),
        writtenMiB: sum(usages.map((u) => u.writtenMiB)),
      };
      if (several) peaks = children.map((c, i) => ({ name: c.name, peakMiB: usages[i]!.peakMiB }));
      threads = mainsFirst(
        children.map((c) => threadUsage(c.pid).map((t) => (several ? { ...t, name: `${c.name} ${t.name}` } : t))),
      );
      cpuPages = pages.size;
      cores = coreTicks();
      if (cores0 === undefined && pages.size > 0) cores0 = cores;
    } catch {
      // ended between the race and the read: keep the last look
    }
    if (o.progressS !== undefined && o.progressS > 0 && s >= nextLine) {
      process.stdout.write(
        `  ${o.label} ${Math.round(s)} s: ${pages.size} pages, ${((last.cpuS * 1000) / Math.max(1, pages.size)).toFixed(2)} CPU ms/page, RSS ${Math.round(last.rssMiB)} MiB\n`,
      );
      nextLine += o.progressS;
    }
    if (at99 !== undefined || s > o.limitS) break;
  }
  // a crawler that stopped by itself (or one process of it) is ended whole too
  await stopAll();
  const serverCpu = process.cpuUsage(serverCpu0);
  loopDelay.disable();
  const requests = read - requests0;
  return {
    label: o.label,
    pages: at99?.pages ?? pages.size,
    total: o.total,
    s: at99?.s ?? s,
    reached99: at99 !== undefined,
    cpuS: last.cpuS,
    cpuPages,
    peakMiB: last.peakMiB,
    peaks,
    writtenMiB: last.writtenMiB,
    threads,
    load: [load0, loadavg()[0]!],
    coresBusy: cores0 === undefined ? [] : coresBusy(cores0, cores),
    serverMsPerRequest: (serverCpu.user + serverCpu.system) / 1000 / Math.max(1, requests),
    webLoopDelayMs: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
  };
}

function sum(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

/** Several processes' threads (each main first, as threadUsage gives them): every main, then the rest busiest first. */
function mainsFirst(perProcess: readonly (readonly ThreadUsage[])[]): ThreadUsage[] {
  const mains = perProcess.flatMap((ts) => ts.slice(0, 1));
  const rest = perProcess.flatMap((ts) => ts.slice(1)).sort((a, b) => b.cpuS - a.cpuS);
  return [...mains, ...rest];
}

/** Prints a run's figures, one a line, each named after the run's label. */
export function printRun(run: CrawlRun): void {
  const name = (what: string) => `${run.label} ${what}`;
  if (!run.reached99) process.stdout.write(`${run.label}: 99 % of pages NOT reached; figures at the stop\n`);
  figure(name('pages fetched'), run.pages, `of ${run.total}`);
  figure(name(run.reached99 ? 'time to 99 % of pages' : 'time'), run.s, 's');
  figure(name('pages/s'), run.pages / run.s, 'pages/s');
  figure(name('CPU per page'), (run.cpuS * 1000) / run.cpuPages, 'ms');
  figure(name('CPU'), run.cpuS / run.s, 'cores');
  figure(name('peak RSS'), run.peakMiB, 'MiB');
  if (run.peaks.length > 0)
    process.stdout.write(
      `${name('peak RSS by process')}: ${run.peaks.map((p) => `${p.name} ${Math.round(p.peakMiB)} MiB`).join(', ')}\n`,
    );
  figure(name('written to disk per page'), (run.writtenMiB * 1024) / run.cpuPages, 'KiB');
  figure(name('server CPU per request'), run.serverMsPerRequest, 'ms');
  process.stdout.write(
    `${name("web's event-loop delay")}: p99 ${run.webLoopDelayMs.p99.toFixed(1)} ms, max ${run.webLoopDelayMs.max.toFixed(1)} ms (the judge's stamps can be this late)\n`,
  );
  process.stdout.write(
    `${name('load average')}: ${run.load[0].toFixed(1)} at the start, ${run.load[1].toFixed(1)} at the end\n`,
  );
  if (run.coresBusy.length > 0)
    process.stdout.write(
      `${name('machine cores busy')} from the first page: ${run.coresBusy.map((b) => `${Math.round(b * 100)} %`).join(', ')} (everything on the machine)\n`,
    );
  for (const t of topThreads(run.threads, Math.max(5, run.peaks.length + 2))) {
    process.stdout.write(
      `${name('thread')} ${t.name}: ${((t.cpuS * 1000) / run.cpuPages).toFixed(2)} ms/page, busy ${(t.cpuS / run.s).toFixed(2)} cores\n`,
    );
  }
}
