import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SyntheticWeb } from '../synthetic-web/synthetic-web.js';
import { prose, type PageSpec, type SiteSpec } from '../synthetic-web/sites.js';
import { checkPoliteness } from '../synthetic-web/politeness.js';
import { figure, machineLine } from './machine.js';

// The whole crawl, end to end, on the embedded default: `crawlstream crawl` as its own process
// against a loopback synthetic web of SITES sites × PAGES pages (every host on 127.0.0.1, so the
// per-IP limit is lifted), served by this process. Figures are taken when 99 % of the pages have
// been fetched, from the server's log (pages, time) and the crawler's /proc entry (CPU of all its
// threads, RSS): pages/s, CPU ms per page, peak RSS; then the judge reads the whole log.
const SITES = Number(process.env['CRAWL_BENCH_SITES'] ?? 4_000);
const PAGES = Number(process.env['CRAWL_BENCH_PAGES'] ?? 9);
const LIMIT_S = Number(process.env['CRAWL_BENCH_SECONDS'] ?? 600);
/**
 * Pages of about this many KiB of HTML (distinct prose); 0 (default) keeps the ~1.5 KB pages the
 * figures in docs/BENCHMARKS.md were first taken with. The brief's web is ~100 KB a page.
 */
const PAGE_KB = Number(process.env['CRAWL_BENCH_PAGE_KB'] ?? 0);
const EXTRA = (process.env['CRAWL_BENCH_ARGS'] ?? '').split(' ').filter(Boolean);
/** Node flags for the crawler process, e.g. `--cpu-prof --cpu-prof-dir=DIR` for a profile. */
const NODE_ARGS = (process.env['CRAWL_BENCH_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
const CLK_TCK = 100;
/**
 * Kafka instead of the embedded engine: `run --role all` against these (start them with
 * scripts/kafka/start.sh); the broker's CPU is read from `<CRAWLSTREAM_KAFKA_RUN>/kafka.pid`.
 * Crawl state lives on the broker, so each run uses host names of its own.
 */
const BROKERS = process.env['CRAWL_BENCH_BROKERS'];
const REGISTRY = process.env['CRAWL_BENCH_REGISTRY'];
const RUN_ID = BROKERS === undefined ? '' : `-${Date.now().toString(36)}`;
const CLI = join(import.meta.dirname, '..', 'cli', 'main.js');

function syntheticSites(): SiteSpec[] {
  const name = (i: number) => `c${String(i).padStart(5, '0')}${RUN_ID}.test`;
  return Array.from({ length: SITES }, (_, i) => {
    const paths = Array.from({ length: PAGES - 1 }, (_, j) => `/page-${j}.html`);
    const others = [1, 17, 331].map((d) => `http://${name((i + d) % SITES)}:{{PORT}}/`);
    const pages: Record<string, PageSpec> = { '/': { title: `${name(i)} home`, links: [...paths, ...others] } };
    for (const p of paths)
      pages[p] = { title: `${name(i)} ${p}`, links: ['/', paths[0]!], html: filler(`${name(i)}${p}`) };
    return { host: name(i), seed: true, pages };
  });
}

/** About PAGE_KB KiB of paragraphs of prose seeded by `seed` ('' when PAGE_KB is 0). */
function filler(seed: string): string {
  const paragraphs: string[] = [];
  // 250 pseudo-words are ~1.9 KB
  for (let k = 0; k * 1.9 < PAGE_KB; k++) paragraphs.push(`<p>${prose(`${seed}#${k}`, 250)}</p>`);
  return paragraphs.join('\n');
}

/** CPU seconds (user + system, all threads) and resident MiB (now, peak) of a live process. */
function usage(pid: number): { cpuS: number; rssMiB: number; peakMiB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuS = (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  const status = readFileSync(`/proc/${pid}/status`, 'latin1');
  const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { cpuS, rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
}

async function main(): Promise<void> {
  process.stdout.write(`${machineLine()}\n`);
  const sites = syntheticSites();
  const server = await SyntheticWeb.start({ sites });
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-crawl-'));
  const seeds = join(dir, 'seeds.txt');
  writeFileSync(seeds, `${server.seedUrls().join('\n')}\n`);
  const total = SITES * PAGES;
  const loopback = [
    '--resolve',
    '*.test=127.0.0.1',
    '--allow-ip',
    '127.0.0.1/32',
    '--ip-concurrency',
    '100000',
    '--ip-gap',
    '0',
  ];
  const data = join(dir, 'data');
  let args: string[];
  let brokerPid: number | undefined;
  if (BROKERS === undefined) {
    args = ['crawl', '--seeds', seeds, '--data', data, '--until-idle', '--quiet', ...loopback, ...EXTRA];
  } else {
    if (REGISTRY === undefined) throw new Error('CRAWL_BENCH_REGISTRY is required with CRAWL_BENCH_BROKERS');
    const kafka = ['--brokers', BROKERS];
    execFileSync(process.execPath, [CLI, 'topics', 'create', ...kafka], { stdio: 'inherit' });
    execFileSync(process.execPath, [CLI, 'inject', '--seeds', seeds, ...kafka, '--registry', REGISTRY], {
      stdio: 'inherit',
    });
    args = ['run', '--role', 'all', '--data', data, ...kafka, '--registry', REGISTRY, '--quiet', '--no-system-dns'];
    args.push(...loopback, ...EXTRA);
    const pidFile = join(process.env['CRAWLSTREAM_KAFKA_RUN'] ?? join(process.cwd(), '.cache', 'run'), 'kafka.pid');
    if (existsSync(pidFile)) brokerPid = Number(readFileSync(pidFile, 'latin1').trim());
  }
  process.stdout.write(
    `web: ${SITES} sites × ${PAGES} pages = ${total} pages${PAGE_KB > 0 ? ` of ~${PAGE_KB} KiB` : ''}; ${args.join(' ')}\n`,
  );
  const child = spawn(process.execPath, [...NODE_ARGS, CLI, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  const brokerCpu0 = brokerPid === undefined ? 0 : usage(brokerPid).cpuS;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const serverCpu0 = process.cpuUsage();
  const started = performance.now();
  let at99: { s: number; pages: number; cpuS: number; peakMiB: number } | undefined;
  let last = usage(child.pid!);
  let nextLine = 10;
  for (;;) {
    const done = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(r, 500, false))]);
    if (done) break;
    last = usage(child.pid!);
    const s = (performance.now() - started) / 1000;
    const pages = server.requests().filter((e) => e.status === 200 && e.path !== '/robots.txt').length;
    if (s >= nextLine) {
      process.stdout.write(
        `  ${Math.round(s)} s: ${pages} pages, ${((last.cpuS * 1000) / Math.max(1, pages)).toFixed(2)} CPU ms/page, RSS ${Math.round(last.rssMiB)} MiB\n`,
      );
      nextLine += 10;
    }
    if (at99 === undefined && pages >= 0.99 * total) at99 = { s, pages, cpuS: last.cpuS, peakMiB: last.peakMiB };
    if (at99 !== undefined || s > LIMIT_S) {
      child.kill('SIGTERM');
      await exited;
      break;
    }
  }
  const serverCpu = process.cpuUsage(serverCpu0);
  const log = server.requests();
  await server.close();
  const report = checkPoliteness(log, sites, { userAgent: 'crawlstream' });
  rmSync(dir, { recursive: true, force: true });
  const end = at99 ?? {
    s: (performance.now() - started) / 1000,
    pages: log.filter((e) => e.status === 200 && e.path !== '/robots.txt').length,
    cpuS: last.cpuS,
    peakMiB: last.peakMiB,
  };
  if (at99 === undefined) process.stdout.write(`99 % of pages NOT reached within ${LIMIT_S} s; figures at the stop\n`);
  figure('pages fetched', end.pages, `of ${total}`);
  figure('time to 99 % of pages', end.s, 's');
  figure('pages/s', end.pages / end.s, 'pages/s');
  figure('crawler CPU per page', (end.cpuS * 1000) / end.pages, 'ms');
  figure('crawler CPU', end.cpuS / end.s, 'cores');
  figure('crawler peak RSS', end.peakMiB, 'MiB');
  figure('server CPU per request', (serverCpu.user + serverCpu.system) / 1000 / log.length, 'ms');
  if (brokerPid !== undefined)
    figure('broker CPU per page (whole run)', ((usage(brokerPid).cpuS - brokerCpu0) * 1000) / end.pages, 'ms');
  process.stdout.write(
    `politeness violations: ${report.violations.length} in the server log of ${log.length} requests\n`,
  );
}

await main();
