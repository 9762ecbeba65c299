import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after } from 'node:test';
import type { PageRecord } from '../../schemas/types.js';
import { warcio } from '../python/warcio.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';

export const CLI = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `crawlstream-${prefix}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** The documented crawl command line for the loopback test web. */
export function crawlArgs(seedsFile: string, dataDir: string, extra: string[] = []): string[] {
  return [
    'crawl',
    '--seeds',
    seedsFile,
    '--data',
    dataDir,
    '--resolve',
    '*.test=127.0.0.1',
    '--allow-ip',
    '127.0.0.1/32',
    '--until-idle',
    ...extra,
  ];
}

export function writeSeeds(dir: string, urls: string[]): string {
  const file = join(dir, 'seeds.txt');
  writeFileSync(file, `# seeds of the synthetic web\n${urls.join('\n')}\n`);
  return file;
}

export interface Exited {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** CLI processes started by `startCli` that have not ended. */
const running = new Set<ChildProcess>();
// a test that timed out leaves its crawl running, and the crawl's pipes would keep this file's
// process alive until the test runner's watchdog: what is left at the file's end is killed
after(() => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts the CLI as a child process; `exited` settles when it ends, however it ends, and all its
 * output has been read. One still running when the test file's tests have all ended (a test timed
 * out) is killed then.
 */
export function startCli(args: string[]): { child: ChildProcess; exited: Promise<Exited> } {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.on('exit', () => running.delete(child));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<Exited>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, exited };
}

export function exportPageRecords(dataDir: string): PageRecord[] {
  const r = spawnSync(process.execPath, [CLI, 'export', 'page-records', '--data', dataDir], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`export failed (${r.status}): ${r.stderr}`);
  return r.stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as PageRecord);
}

/** URLs the server answered with a final status (not 429/503), robots.txt excluded. */
export function finallyFetchedUrls(log: RequestLogEntry[], port: number): Set<string> {
  const urls = new Set<string>();
  for (const e of log) {
    if (e.path === '/robots.txt' || e.status === 0 || e.status === 429 || e.status === 503) continue;
    urls.add(`http://${e.host}:${port}${e.path}`);
  }
  return urls;
}

/** Counts page records per URL. */
export function countByUrl(records: readonly { url: string }[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of records) counts.set(r.url, (counts.get(r.url) ?? 0) + 1);
  return counts;
}

/** Runs the independent WARC validator over every file; returns its combined output and status. */
export function warcioCheck(warcDir: string): { status: number | null; output: string; files: string[] } {
  const files = readdirSync(warcDir)
    .filter((f) => f.endsWith('.warc.gz'))
    .map((f) => join(warcDir, f));
  const r = warcio(['check', '-v', ...files]);
  return { status: r.status, output: `${r.stdout}${r.stderr}`, files };
}

const execFileAsync = promisify(execFile);

/**
 * Runs a command to its end without blocking the event loop (a test's synthetic web serves from
 * this process); never rejects: a failure is a code other than 0 (-1 when it did not run or
 * timed out after 180 s) with the error's message after its stderr.
 */
export async function sh(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await execFileAsync(file, args, { encoding: 'utf8', timeout: 180_000, maxBuffer: 64 * 2 ** 20 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string; message: string };
    const code = typeof e.code === 'number' ? e.code : -1;
    return { code, stdout: e.stdout ?? '', stderr: `${e.stderr ?? ''}\n${e.message}` };
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** When each page (`host` + path) first answered 200, by the server's log; robots.txt excluded. */
export function firstFetchedAt(log: readonly RequestLogEntry[]): Map<string, number> {
  const at = new Map<string, number>();
  for (const e of log)
    if (e.status === 200 && e.path !== '/robots.txt')
      at.set(`${e.host}${e.path}`, Math.min(at.get(`${e.host}${e.path}`) ?? Infinity, e.end));
  return at;
}

/**
 * A site whose home page links `n` pages (`/p0.html`…) that link nowhere: a seed unless `seed` is
 * false, served on `address` when given (else the web's default one).
 */
export function flatSite(host: string, n: number, o: { seed?: boolean; address?: string } = {}): SiteSpec {
  const paths = Array.from({ length: n }, (_, i) => `/p${i}.html`);
  return {
    host,
    seed: o.seed ?? true,
    ...(o.address ? { address: o.address } : {}),
    pages: {
      '/': { title: host, links: paths },
      ...Object.fromEntries(paths.map((p) => [p, { title: `${host} ${p}`, links: [] }])),
    },
  };
}
