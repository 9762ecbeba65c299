import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';

// Where a crawler's CPU goes, from the .cpuprofile files `node --cpu-prof` writes (one per thread):
// self time by function and by category. Run on its own: node dist/bench/cpu-profile.js FILE|DIR…

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
}

/** The parts of a V8 CPU profile (the `Profiler.Profile` of the DevTools protocol) read here. */
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** Self time of one profile, in ms, by function and by category. */
export interface ProfileSummary {
  readonly file: string;
  /** Wall time the profile spans. */
  readonly spanMs: number;
  /** Sampled time that was not idle: what the thread spent on CPU (as far as sampling sees). */
  readonly busyMs: number;
  readonly byFunction: ReadonlyMap<string, number>;
  readonly byCategory: ReadonlyMap<string, number>;
}

/**
 * What a frame is part of, by its script: a package under node_modules, a folder of ours under
 * dist/, a Node module (`node:tls`, `node:zlib`, `node:stream`…), or V8's own entries ((garbage
 * collector), (program), (idle)); native functions without a script are `(native)`.
 */
export function categoryOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg !== null) return pkg[1]!;
  const ours = /\/dist\/([^/]+)\//.exec(url);
  if (ours !== null) return `crawlstream ${ours[1]}`;
  const internal = /^node:(?:internal\/)?(?:deps\/)?([^/]+)/.exec(url);
  if (internal !== null) return `node:${internal[1]!.replace(/\.js$/, '').replace(/^_tls_.*$/, 'tls')}`;
  return url;
}

/** Self time by function and category of one profile (samples weighted by their time deltas). */
export function summarizeProfile(file: string): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // a sample's time is the gap to the next sample (the last one gets the mean)
  const mean = samples.length === 0 ? 0 : (profile.endTime - profile.startTime) / samples.length;
  for (let i = 0; i < samples.length; i++) {
    const us = i + 1 < deltas.length ? deltas[i + 1]! : mean;
    selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + us);
  }
  const byFunction = new Map<string, number>();
  const byCategory = new Map<string, number>();
  let busyMs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    const ms = us / 1000;
    const category = categoryOf(frame);
    if (category !== '(idle)') busyMs += ms;
    const where = frame.url === '' ? '' : ` ${basename(frame.url)}:${frame.lineNumber + 1}`;
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
    byCategory.set(category, (byCategory.get(category) ?? 0) + ms);
  }
  return { file, spanMs: (profile.endTime - profile.startTime) / 1000, busyMs, byFunction, byCategory };
}

/** The .cpuprofile files among `paths` (a directory stands for the profiles in it). */
export function profileFiles(paths: readonly string[]): string[] {
  return paths.flatMap((p) => {
    try {
      return readdirSync(p)
        .filter((f) => f.endsWith('.cpuprofile'))
        .sort()
        .map((f) => join(p, f));
    } catch {
      return [p];
    }
  });
}

/**
 * Lines for people: per profile its span and busy share, then the `top` categories and functions
 * by self time, each as ms and as a share of the profile's busy (non-idle) time.
 */
export function formatProfileSummary(summary: ProfileSummary, top = 12): string[] {
  const share = (ms: number) => `${((100 * ms) / Math.max(summary.busyMs, 1e-9)).toFixed(1)} %`;
  const rows = (map: ReadonlyMap<string, number>) =>
    [...map]
      .filter(([name]) => name !== '(idle)')
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => `    ${share(ms).padStart(7)} ${Math.round(ms).toString().padStart(7)} ms  ${name}`);
  return [
    `profile ${basename(summary.file)}: ${(summary.spanMs / 1000).toFixed(1)} s, busy ${(summary.busyMs / 1000).toFixed(1)} s (${((100 * summary.busyMs) / Math.max(summary.spanMs, 1e-9)).toFixed(0)} %)`,
    '  by category (self time, share of busy):',
    ...rows(summary.byCategory),
    '  by function:',
    ...rows(summary.byFunction),
  ];
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const files = profileFiles(process.argv.slice(2));
  if (files.length === 0) {
    process.stderr.write('usage: node dist/bench/cpu-profile.js FILE.cpuprofile|DIR …\n');
    process.exit(2);
  }
  for (const file of files) process.stdout.write(`${formatProfileSummary(summarizeProfile(file)).join('\n')}\n`);
}
