import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SyntheticWeb } from '../synthetic-web/synthetic-web.js';
import type { PageSpec, SiteSpec } from '../synthetic-web/sites.js';
import { checkPoliteness, formatPolitenessReport } from '../synthetic-web/politeness.js';
import { machineLine } from './machine.js';

// A continuous crawl for a set time (`node dist/bench/soak.js SECONDS`, default 600): `crawlstream
// crawl` as its own process, with recrawl on (--recrawl-min 10 --recrawl-max 120), against a
// loopback synthetic web of SITES sites × PAGES pages that it fetches over and over. Every few
// seconds it samples the crawler's RSS (/proc) and, from its /metrics, heap used, external memory
// and each cache's bytes (crawlstream_cache_bytes{cache}). At the end it prints the curve's shape
// (peak RSS of the last third over the middle third's peak: a fixed set of URLs should level off),
// the warnings the crawler printed on stderr, and the politeness judge's verdict on the server's log.
const SECONDS = Number(process.argv[2] ?? 600);
const SITES = Number(process.env['SOAK_SITES'] ?? 100);
const PAGES = Number(process.env['SOAK_PAGES'] ?? 21);
const SAMPLE_S = Number(process.env['SOAK_SAMPLE_SECONDS'] ?? 5);
/** Extra crawl flags, e.g. `--seen-block-cache 1048576`. */
const EXTRA = (process.env['SOAK_ARGS'] ?? '').split(' ').filter(Boolean);
/** Node flags for the crawler, e.g. `--heapsnapshot-signal=SIGUSR2` (see SOAK_SNAPSHOT_SECONDS). */
const NODE_ARGS = (process.env['SOAK_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
/**
 * With SOAK_SNAPSHOT_SECONDS=N, the crawler writes a V8 heap snapshot every N s into
 * SOAK_SNAPSHOT_DIR (default: a temporary directory, kept); compare them in Chrome DevTools'
 * Memory tab (Comparison view) or with a script over the JSON.
 */
const SNAPSHOT_S = Number(process.env['SOAK_SNAPSHOT_SECONDS'] ?? 0);
/** A CSV of every sample is written here when set. */
const CSV = process.env['SOAK_CSV'];
const MiB = 2 ** 20;

if (!Number.isInteger(SECONDS) || SECONDS < 30)
  throw new Error(`soak time must be a whole number ≥ 30 s, got ${SECONDS}`);

/** A web of SITES hosts, each a home page linking its PAGES - 1 pages and three other hosts' homes; each page links home and the next page. */
function soakSites(): SiteSpec[] {
  const name = (i: number) => `soak${String(i).padStart(4, '0')}.test`;
  return Array.from({ length: SITES }, (_, i) => {
    // pages are named in letters: numbered ones would share one URL template, and the frontier
    // admits only a dozen URLs of a template per site
    const paths = Array.from({ length: PAGES - 1 }, (_, j) => `/page-${letters(j)}.html`);
    const others = [1, 7, 31].map((d) => `http://${name((i + d) % SITES)}:{{PORT}}/`);
    const pages: Record<string, PageSpec> = { '/': { title: `${name(i)} home`, links: [...paths, ...others] } };
    for (const [j, p] of paths.entries())
      pages[p] = { title: `${name(i)} ${p}`, links: ['/', paths[(j + 1) % paths.length]!] };
    return { host: name(i), seed: true, pages };
  });
}

/** `j` in base 26 with letters: a, b, …, z, ba, bb, … */
function letters(j: number): string {
  let out = '';
  do {
    out = String.fromCharCode(97 + (j % 26)) + out;
    j = Math.floor(j / 26);
  } while (j > 0);
  return out;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'latin1');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

interface Sample {
  s: number;
  rss: number;
  heapUsed: number;
  external: number;
  fetches: number;
  caches: Record<string, number>;
}

/** The values of the samples of one family in a Prometheus text exposition, by their label text. */
function family(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const cut = rest.lastIndexOf(' ');
    out.set(rest.slice(0, cut).trim(), Number(rest.slice(cut + 1)));
  }
  return out;
}

async function scrape(port: number): Promise<Omit<Sample, 's' | 'rss'> | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(3_000) });
    const text = await res.text();
    const one = (name: string) => [...family(text, name).values()].reduce((a, b) => a + b, 0);
    const caches: Record<string, number> = {};
    for (const [labels, v] of family(text, 'crawlstream_cache_bytes'))
      caches[/cache="([^"]*)"/.exec(labels)?.[1] ?? labels] = v / MiB;
    return {
      heapUsed: one('nodejs_heap_size_used_bytes') / MiB,
      external: one('nodejs_external_memory_bytes') / MiB,
      fetches: one('crawlstream_fetches_total'),
      caches,
    };
  } catch {
    return undefined;
  }
}

const peak = (xs: readonly Sample[], f: (s: Sample) => number) => xs.reduce((m, x) => Math.max(m, f(x)), 0);
const fmt = (n: number) => n.toFixed(1);

async function main(): Promise<void> {
  process.stdout.write(`${machineLine()}\n`);
  const sites = soakSites();
  const server = await SyntheticWeb.start({ sites });
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-soak-'));
  const snapshots = process.env['SOAK_SNAPSHOT_DIR'] ?? join(dir, 'snapshots');
  mkdirSync(snapshots, { recursive: true });
  const seeds = join(dir, 'seeds.txt');
  writeFileSync(seeds, `${server.seedUrls().join('\n')}\n`);
  const port = await freePort();
  const args = [
    'crawl',
    '--seeds',
    seeds,
    '--data',
    join(dir, 'data'),
    // the bench stops it (SIGTERM) at SECONDS: its shutdown is not part of the curve
    '--duration',
    String(SECONDS + 60),
    '--recrawl-min',
    '10',
    '--recrawl-max',
    '120',
    '--metrics-port',
    String(port),
    '--quiet',
    '--resolve',
    '*.test=127.0.0.1',
    '--allow-ip',
    '127.0.0.1/32',
    // every host is on 127.0.0.1: the per-IP limit is lifted so each host's own gap paces it
    '--ip-concurrency',
    '100000',
    '--ip-gap',
    '0',
    ...EXTRA,
  ];
  const nodeArgs = SNAPSHOT_S > 0 ? [...NODE_ARGS, '--heapsnapshot-signal=SIGUSR2'] : NODE_ARGS;
  process.stdout.write(
    `web: ${SITES} sites × ${PAGES} pages = ${SITES * PAGES} URLs, ${SECONDS} s; ${args.join(' ')}\n`,
  );
  const cli = join(import.meta.dirname, '..', 'cli', 'main.js');
  const child = spawn(process.execPath, [...nodeArgs, cli, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: snapshots,
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    process.stderr.write(d);
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  let running = true;
  void exited.then(() => (running = false));
  if (CSV) writeFileSync(CSV, 's,rss_mib,heap_used_mib,external_mib,fetches,caches\n');

  const samples: Sample[] = [];
  const started = performance.now();
  let nextSnapshot = SNAPSHOT_S;
  let nextLine = 60;
  while (running) {
    await Promise.race([exited, new Promise((r) => setTimeout(r, SAMPLE_S * 1000))]);
    if (!running) break;
    const s = (performance.now() - started) / 1000;
    if (s >= SECONDS) {
      child.kill('SIGTERM');
      break;
    }
    let rss: number;
    try {
      rss = rssMiB(child.pid!);
    } catch {
      break;
    }
    const m = await scrape(port);
    if (m === undefined) continue;
    const sample = { s, rss, ...m };
    samples.push(sample);
    const caches = Object.entries(m.caches)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}=${fmt(v)}`)
      .join(' ');
    if (CSV)
      appendFileSync(CSV, `${s.toFixed(0)},${fmt(rss)},${fmt(m.heapUsed)},${fmt(m.external)},${m.fetches},${caches}\n`);
    if (s >= nextLine) {
      process.stdout.write(
        `  ${Math.round(s)} s: ${m.fetches} fetches, RSS ${fmt(rss)} MiB, heap ${fmt(m.heapUsed)} MiB, external ${fmt(m.external)} MiB; caches MiB: ${caches}\n`,
      );
      nextLine += 60;
    }
    if (SNAPSHOT_S > 0 && s >= nextSnapshot) {
      child.kill('SIGUSR2');
      nextSnapshot += SNAPSHOT_S;
    }
  }
  const code = await exited;
  const log = server.requests();
  await server.close();
  const report = checkPoliteness(log, sites, { userAgent: 'crawlstream' });

  const third = Math.max(...samples.map((x) => x.s), 0) / 3;
  const middle = samples.filter((x) => x.s >= third && x.s < 2 * third);
  const last = samples.filter((x) => x.s >= 2 * third);
  const fetches = samples.at(-1)?.fetches ?? 0;
  process.stdout.write(
    `crawler exited ${code}; ${samples.length} samples; ${fetches} fetches, ${log.length} requests served\n`,
  );
  for (const [name, f] of [
    ['RSS', (x: Sample) => x.rss],
    ['heap used', (x: Sample) => x.heapUsed],
    ['external', (x: Sample) => x.external],
  ] as const)
    process.stdout.write(
      `${name} MiB: first third peak ${fmt(
        peak(
          samples.filter((x) => x.s < third),
          f,
        ),
      )}, middle third peak ${fmt(peak(middle, f))}, last third peak ${fmt(peak(last, f))}\n`,
    );
  const cacheNames = [...new Set(samples.flatMap((x) => Object.keys(x.caches)))].sort();
  for (const c of cacheNames)
    process.stdout.write(
      `cache ${c} MiB: middle third peak ${fmt(peak(middle, (x) => x.caches[c] ?? 0))}, last third peak ${fmt(peak(last, (x) => x.caches[c] ?? 0))}\n`,
    );
  const ratio =
    peak(last, (x) => x.rss) /
    Math.max(
      1,
      peak(middle, (x) => x.rss),
    );
  process.stdout.write(`RSS last third / middle third (peaks): ${ratio.toFixed(3)} (done when ≤ 1.05)\n`);
  // how the crawl went: requests a minute, and each host's pace (gaps between its requests)
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const byHost = new Map<string, number[]>();
  for (const e of log) byHost.set(e.host, [...(byHost.get(e.host) ?? []), e.start]);
  const gaps = [...byHost.values()].flatMap((t) => t.slice(1).map((x, i) => x - t[i]!));
  const statuses = new Map<number, number>();
  for (const e of log) statuses.set(e.status, (statuses.get(e.status) ?? 0) + 1);
  process.stdout.write(
    `requests: ${(log.length / (SECONDS / 60)).toFixed(0)} a minute over ${byHost.size} hosts; median gap between a host's requests ${(median(gaps) / 1000).toFixed(1)} s, median response ${median(log.map((e) => e.end - e.start)).toFixed(0)} ms; by status ${JSON.stringify(Object.fromEntries(statuses))}\n`,
  );
  const warnings = stderr.split('\n').filter((l) => /warning/i.test(l));
  process.stdout.write(`warnings on stderr: ${warnings.length}\n`);
  for (const w of warnings.slice(0, 10)) process.stdout.write(`  ${w}\n`);
  process.stdout.write(
    `politeness violations: ${report.violations.length} in the server log of ${log.length} requests\n`,
  );
  if (report.violations.length > 0) process.stdout.write(`${formatPolitenessReport(report)}\n`);
  if (SNAPSHOT_S > 0) process.stdout.write(`heap snapshots in ${snapshots}\n`);
  rmSync(join(dir, 'data'), { recursive: true, force: true });
  if (SNAPSHOT_S === 0 || process.env['SOAK_SNAPSHOT_DIR'] !== undefined) rmSync(dir, { recursive: true, force: true });
}

await main();
