import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crawlerAddressArgs } from '../synthetic-web/addresses.js';
import { checkPoliteness } from '../synthetic-web/politeness.js';
import type { SiteSpec } from '../synthetic-web/sites.js';
import { SyntheticWeb, type SyntheticWebOptions } from '../synthetic-web/synthetic-web.js';
import { formatProfileSummary, profileFiles, summarizeProfile } from './cpu-profile.js';
import { measureCrawl, printRun, type CrawlRun } from './crawl-measure.js';
import { machineLine } from './machine.js';
import type { NaiveCrawlerConfig } from './naive-crawler.js';
import { processUsage } from './proc-usage.js';
import { benchCertificates, benchWeb, type BenchWebShape } from './real-pages-web.js';

// The whole crawl, end to end, on the embedded default: `crawlstream crawl` as its own process
// against a loopback synthetic web of SITES sites × PAGES pages, served by this process. Figures
// are taken when 99 % of the pages have been fetched, from the server's log (pages, time) and the
// crawler's /proc entry (CPU of all its threads and of each, RSS): pages/s, CPU ms per page, peak
// RSS; then the judge reads the whole log.
//
// CRAWL_BENCH_MODE=classic (default, #18): every host on 127.0.0.1 over http, ~1.5 KB pages, the
// per-IP limit lifted, so the crawl is CPU-bound. CRAWL_BENCH_MODE=real (#37): 24 KiB pages, half
// the hosts https-only, a robots.txt per origin, the hosts over one address per 8 of them (500 for
// 4,000 sites), the crawler's own defaults; and in the same sitting a naive impolite crawler
// (bench/naive-crawler.ts) on a fresh copy of the same web, with the ratio of the two.
const MODE = process.env['CRAWL_BENCH_MODE'] ?? 'classic';
const REAL = MODE === 'real';
const SITES = Number(process.env['CRAWL_BENCH_SITES'] ?? 4_000);
const PAGES = Number(process.env['CRAWL_BENCH_PAGES'] ?? 9);
const LIMIT_S = Number(process.env['CRAWL_BENCH_SECONDS'] ?? 600);
/** Pages of about this many KiB of HTML; 0 (classic default) keeps ~1.5 KB pages, real defaults to 24. */
const PAGE_KB = Number(process.env['CRAWL_BENCH_PAGE_KB'] ?? (REAL ? 24 : 0));
/** Loopback addresses the hosts are drawn over (real mode; default one per 8 sites). */
const ADDRESSES = Number(process.env['CRAWL_BENCH_ADDRESSES'] ?? Math.ceil(SITES / 8));
/** Share of https-only hosts (real mode). */
const HTTPS_SHARE = Number(process.env['CRAWL_BENCH_HTTPS_SHARE'] ?? 0.5);
/** Requests the naive crawler keeps in flight. */
const NAIVE_CONCURRENCY = Number(process.env['CRAWL_BENCH_NAIVE_CONCURRENCY'] ?? 128);
/** Which crawlers run, in this order, comma-separated: crawlstream, naive (default: both in real mode). */
const CRAWLERS = (process.env['CRAWL_BENCH_CRAWLERS'] ?? (REAL ? 'crawlstream,naive' : 'crawlstream')).split(',');
/**
 * How the crawlers trust the web's CA (real mode): `env` (default) adds it to Node's default store
 * (NODE_EXTRA_CA_CERTS), as the built-in roots serve a real crawl; `flag` passes `--ca-file` to
 * crawlstream and the PEM to the naive crawler's agent, which costs crawlstream a secure context
 * of all the roots per connection.
 */
const CA = process.env['CRAWL_BENCH_CA'] ?? 'env';
/** 1: profile the crawler (`--cpu-prof`, every thread) and print where its CPU went; slows it. */
const PROFILE = process.env['CRAWL_BENCH_PROFILE'] === '1';
const EXTRA = (process.env['CRAWL_BENCH_ARGS'] ?? '').split(' ').filter(Boolean);
/** Node flags for the crawler process, e.g. `--cpu-prof --cpu-prof-dir=DIR` for a profile. */
const NODE_ARGS = (process.env['CRAWL_BENCH_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
/** 1: keep the bench's directory (the crawler's data dir, each crawler's server log as JSON lines) and print where. */
const KEEP = process.env['CRAWL_BENCH_KEEP'] === '1';
/**
 * Kafka instead of the embedded engine: `run --role all` against these (start them with
 * scripts/kafka/start.sh); the broker's CPU is read from `<CRAWLSTREAM_KAFKA_RUN>/kafka.pid`.
 * Crawl state lives on the broker, so each run uses host names of its own.
 */
const BROKERS = process.env['CRAWL_BENCH_BROKERS'];
const REGISTRY = process.env['CRAWL_BENCH_REGISTRY'];
/**
 * On Kafka, `all` (default): one `run --role all` process; `split`: one process a role (frontier,
 * fetcher, parser), each with a data dir of its own, measured as one crawler. A `--metrics-port N`
 * in CRAWL_BENCH_ARGS goes to the frontier, N + 1 to the fetcher and N + 2 to the parser (0 to each).
 */
const ROLES = process.env['CRAWL_BENCH_KAFKA_ROLES'] ?? 'all';
/** On Kafka, an `--app-id` for the run's topics, groups and changelogs, apart from another crawl's on the broker. */
const APP_ID = process.env['CRAWL_BENCH_APP_ID'];
const SPLIT_ROLES = ['frontier', 'fetcher', 'parser'] as const;
const CLI = join(import.meta.dirname, '..', 'cli', 'main.js');
const NAIVE = join(import.meta.dirname, 'naive-crawler.js');

/** Checks the environment once, naming the variable and its value. */
function checkEnvironment(): void {
  const need = (ok: boolean, what: string, value: unknown) => {
    if (!ok) throw new Error(`${what}, got ${JSON.stringify(value)}`);
  };
  need(CA === 'env' || CA === 'flag', 'CRAWL_BENCH_CA must be env or flag', CA);
  need(MODE === 'classic' || MODE === 'real', 'CRAWL_BENCH_MODE must be classic or real', MODE);
  need(ROLES === 'all' || ROLES === 'split', 'CRAWL_BENCH_KAFKA_ROLES must be all or split', ROLES);
  need(ROLES === 'all' || BROKERS !== undefined, 'CRAWL_BENCH_KAFKA_ROLES=split needs CRAWL_BENCH_BROKERS', ROLES);
  need(Number.isInteger(SITES) && SITES >= 2, 'CRAWL_BENCH_SITES must be an integer ≥ 2', SITES);
  need(Number.isInteger(PAGES) && PAGES >= 2, 'CRAWL_BENCH_PAGES must be an integer ≥ 2', PAGES);
  need(LIMIT_S > 0, 'CRAWL_BENCH_SECONDS must be a positive number', LIMIT_S);
  need(PAGE_KB >= 0, 'CRAWL_BENCH_PAGE_KB must be a number ≥ 0', PAGE_KB);
  need(
    Number.isInteger(ADDRESSES) && ADDRESSES >= 1 && ADDRESSES <= 62_500,
    'CRAWL_BENCH_ADDRESSES must be an integer from 1 to 62,500',
    ADDRESSES,
  );
  need(HTTPS_SHARE >= 0 && HTTPS_SHARE <= 1, 'CRAWL_BENCH_HTTPS_SHARE must be a number from 0 to 1', HTTPS_SHARE);
  need(
    CRAWLERS.length > 0 && CRAWLERS.every((c) => c === 'crawlstream' || c === 'naive'),
    'CRAWL_BENCH_CRAWLERS must list crawlstream and/or naive, comma-separated',
    CRAWLERS.join(','),
  );
  need(
    Number.isInteger(NAIVE_CONCURRENCY) && NAIVE_CONCURRENCY >= 1,
    'CRAWL_BENCH_NAIVE_CONCURRENCY must be an integer ≥ 1',
    NAIVE_CONCURRENCY,
  );
}

async function main(): Promise<void> {
  checkEnvironment();
  process.stdout.write(`${machineLine()}\n`);
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-crawl-'));
  const shape: BenchWebShape = {
    sites: SITES,
    pages: PAGES,
    pageKb: PAGE_KB,
    addresses: REAL ? ADDRESSES : 0,
    httpsShare: REAL ? HTTPS_SHARE : 0,
    robots: REAL,
    ...(BROKERS === undefined ? {} : { hostSuffix: `-${Date.now().toString(36)}` }),
  };
  const { sites, httpsHosts, total } = benchWeb(shape);
  const certs = httpsHosts.size > 0 ? benchCertificates(httpsHosts) : undefined;
  const options: SyntheticWebOptions = { sites, ...(certs === undefined ? {} : { tls: certs.tls }) };

  // each crawler gets a fresh copy of the web: its own log, page counters from zero, new ports
  const fresh = async () => {
    const web = await SyntheticWeb.start(options);
    const seeds = sites.map((s) => (httpsHosts.has(s.host) ? web.httpsUrl(s.host) : web.url(s.host)));
    return { web, seeds };
  };
  const addressCount = new Set(sites.map((s) => s.address ?? '127.0.0.1')).size;
  process.stdout.write(
    `web: ${SITES} sites × ${PAGES} pages = ${total} pages${PAGE_KB > 0 ? ` of ~${PAGE_KB} KiB` : ''}, ` +
      `${httpsHosts.size} https-only hosts, ${addressCount} addresses, robots.txt ${REAL ? 'per origin' : 'absent (404)'}` +
      `${certs ? `; CA trusted by ${CA === 'env' ? 'NODE_EXTRA_CA_CERTS' : "--ca-file / the agent's ca"}` : ''}\n`,
  );
  const env: Record<string, string> = certs && CA === 'env' ? { NODE_EXTRA_CA_CERTS: certs.caFile } : {};
  const bench: Bench = { dir, sites, total, env, ...(certs === undefined ? {} : { certs }) };
  const runs = new Map<string, CrawlRun>();
  for (const crawler of CRAWLERS)
    runs.set(
      crawler,
      crawler === 'naive' ? await runNaive(bench, await fresh()) : await runCrawlstream(bench, await fresh()),
    );
  const crawl = runs.get('crawlstream');
  const naive = runs.get('naive');
  if (crawl !== undefined && naive !== undefined) printRatio(crawl, naive);
  if (KEEP) process.stdout.write(`kept: ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}

interface Bench {
  readonly dir: string;
  readonly sites: readonly SiteSpec[];
  readonly total: number;
  readonly env: Readonly<Record<string, string>>;
  readonly certs?: { caFile: string; caPem: string };
}

/** The node flags of the CLI's own first line (`#!/usr/bin/env -S node FLAGS`): crawlstream runs as its bin starts it. */
function binNodeFlags(): string[] {
  const first = readFileSync(CLI, 'utf8').split('\n', 1)[0]!;
  return /^#!\/usr\/bin\/env -S node(.*)$/.exec(first)?.[1]!.trim().split(/\s+/).filter(Boolean) ?? [];
}

/** Runs `crawlstream crawl` (or `run --role all` on Kafka) on `web`, then prints its figures, verdict and profile. */
async function runCrawlstream(bench: Bench, { web, seeds }: { web: SyntheticWeb; seeds: string[] }): Promise<CrawlRun> {
  const { dir, sites, certs } = bench;
  const seedFile = join(dir, 'seeds.txt');
  writeFileSync(seedFile, `${seeds.join('\n')}\n`);
  const where = REAL
    ? // the crawler's own per-IP limits: the hosts share addresses as on the real web
      [
        '--resolve',
        '*.test=127.0.0.1',
        ...crawlerAddressArgs(sites),
        ...(certs && CA === 'flag' ? ['--ca-file', certs.caFile] : []),
      ]
    : ['--resolve', '*.test=127.0.0.1', '--allow-ip', '127.0.0.1/32', '--ip-concurrency', '100000', '--ip-gap', '0'];
  const data = join(dir, 'data');
  let args: string[];
  let roles: { name: string; args: string[] }[] | undefined;
  let brokerPid: number | undefined;
  if (BROKERS === undefined) {
    args = ['crawl', '--seeds', seedFile, '--data', data, '--until-idle', '--quiet', ...where, ...EXTRA];
  } else {
    if (REGISTRY === undefined) throw new Error('CRAWL_BENCH_REGISTRY is required with CRAWL_BENCH_BROKERS');
    const kafka = ['--brokers', BROKERS, ...(APP_ID === undefined ? [] : ['--app-id', APP_ID])];
    execFileSync(process.execPath, [CLI, 'topics', 'create', ...kafka], { stdio: 'inherit' });
    execFileSync(process.execPath, [CLI, 'inject', '--seeds', seedFile, ...kafka, '--registry', REGISTRY], {
      stdio: 'inherit',
    });
    const common = [...kafka, '--registry', REGISTRY, '--quiet', '--no-system-dns', ...where];
    args = ['run', '--role', 'all', '--data', data, ...common, ...EXTRA];
    if (ROLES === 'split')
      roles = SPLIT_ROLES.map((role, i) => ({
        name: role,
        args: ['run', '--role', role, '--data', join(data, role), ...common, ...roleExtra(i)],
      }));
    const pidFile = join(process.env['CRAWLSTREAM_KAFKA_RUN'] ?? join(process.cwd(), '.cache', 'run'), 'kafka.pid');
    if (existsSync(pidFile)) brokerPid = Number(readFileSync(pidFile, 'latin1').trim());
  }
  if (roles === undefined) process.stdout.write(`crawler: crawlstream ${shownArgs(args)}\n`);
  else for (const r of roles) process.stdout.write(`crawler: crawlstream ${shownArgs(r.args)}\n`);
  const profileDir = join(dir, 'profile');
  const nodeArgs = [
    ...binNodeFlags(),
    ...NODE_ARGS,
    ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
  ];
  const brokerCpu0 = brokerPid === undefined ? 0 : processUsage(brokerPid).cpuS;
  const run = await measureCrawl({
    label: 'crawlstream',
    argv: [...nodeArgs, CLI, ...args],
    ...(roles === undefined
      ? {}
      : { processes: roles.map((r) => ({ name: r.name, argv: [...nodeArgs, CLI, ...r.args] })) }),
    env: bench.env,
    web,
    total: bench.total,
    limitS: LIMIT_S,
    progressS: 10,
  });
  const brokerCpuS = brokerPid === undefined ? 0 : processUsage(brokerPid).cpuS - brokerCpu0;
  await judgeAndPrint(run, web, sites, 'crawlstream', dir);
  if (brokerPid !== undefined)
    process.stdout.write(
      `crawlstream broker CPU per page (whole run): ${((brokerCpuS * 1000) / run.cpuPages).toFixed(2)} ms\n`,
    );
  if (PROFILE) {
    process.stdout.write('(figures of a profiled run: --cpu-prof slows the crawler)\n');
    for (const file of profileFiles([profileDir]))
      process.stdout.write(`${formatProfileSummary(summarizeProfile(file)).join('\n')}\n`);
  }
  return run;
}

/** Runs bench/naive-crawler.ts on `web`, then prints its figures and how impolite it was. */
async function runNaive(bench: Bench, { web, seeds }: { web: SyntheticWeb; seeds: string[] }): Promise<CrawlRun> {
  const config: NaiveCrawlerConfig = {
    seeds,
    addresses: Object.fromEntries(bench.sites.map((s) => [s.host, s.address ?? '127.0.0.1'])),
    caPem: bench.certs !== undefined && CA === 'flag' ? bench.certs.caPem : '',
    concurrency: NAIVE_CONCURRENCY,
  };
  const configFile = join(bench.dir, 'naive.json');
  writeFileSync(configFile, JSON.stringify(config));
  process.stdout.write(
    `crawler: naive (bench/naive-crawler.ts), ${NAIVE_CONCURRENCY} requests in flight, no robots.txt, no limits\n`,
  );
  const run = await measureCrawl({
    label: 'naive',
    argv: [NAIVE, configFile],
    env: bench.env,
    web,
    total: bench.total,
    limitS: LIMIT_S,
    progressS: 10,
  });
  await judgeAndPrint(run, web, bench.sites, 'naive-crawler', bench.dir);
  return run;
}

/** Closes `web`, prints `run`'s figures and the judge's verdict on the web's log (per address too in real mode). */
async function judgeAndPrint(
  run: CrawlRun,
  web: SyntheticWeb,
  sites: readonly SiteSpec[],
  userAgent: string,
  dir: string,
): Promise<void> {
  const log = web.requests();
  // kept with the data dir: one request a line, with the address it came in on
  if (KEEP)
    writeFileSync(
      join(dir, `${userAgent}-requests.jsonl`),
      log.map((r) => JSON.stringify({ ...r, ip: REAL ? web.ipOf(r.host) : '127.0.0.1' })).join('\n') + '\n',
    );
  const { http, https, resumed } = web.connections;
  await web.close();
  const report = checkPoliteness(log, sites, { userAgent, ...(REAL ? { ipOf: web.ipOf } : {}) });
  printRun(run);
  process.stdout.write(
    `${run.label} connections: ${http} http, ${https} https (${resumed} resumed a TLS session) for ${log.length} requests\n`,
  );
  process.stdout.write(
    `${run.label} politeness violations: ${report.violations.length} in the server log of ${log.length} requests${byKind(report.violations)}\n`,
  );
  if (userAgent !== 'crawlstream') return;
  for (const v of report.violations.slice(0, 3)) process.stdout.write(`  ${v.kind} ${v.host} #${v.seq}: ${v.detail}\n`);
}

/** ` (kind n, …)` of `violations`, most frequent first; '' when there are none. */
function byKind(violations: readonly { kind: string }[]): string {
  const counts = new Map<string, number>();
  for (const v of violations) counts.set(v.kind, (counts.get(v.kind) ?? 0) + 1);
  const kinds = [...counts].sort((a, b) => b[1] - a[1]).map(([kind, n]) => `${kind} ${n}`);
  return kinds.length === 0 ? '' : ` (${kinds.join(', ')})`;
}

/** CRAWL_BENCH_ARGS for the `i`-th role's process: a `--metrics-port N` becomes N + i (0, any free port, stays 0). */
function roleExtra(i: number): string[] {
  return EXTRA.map((a, j) => (EXTRA[j - 1] === '--metrics-port' && Number(a) !== 0 ? String(Number(a) + i) : a));
}

/** `args` for people: a run of --resolve and --allow-ip pairs comes to a count of them. */
function shownArgs(args: readonly string[]): string {
  const out: string[] = [];
  let rules = 0;
  for (let i = 0; i < args.length; i++) {
    if ((args[i] === '--resolve' || args[i] === '--allow-ip') && i + 1 < args.length) {
      rules++;
      if (rules <= 2) out.push(args[i]!, args[i + 1]!);
      i++;
    } else out.push(args[i]!);
  }
  return `${out.join(' ')}${rules > 2 ? ` (+ ${rules - 2} more --resolve/--allow-ip rules)` : ''}`;
}

function printRatio(crawl: CrawlRun, naive: CrawlRun): void {
  const rate = (r: CrawlRun) => r.pages / r.s;
  process.stdout.write(
    `crawlstream ÷ naive pages/s: ${(rate(crawl) / rate(naive)).toFixed(2)} × (#37 asks ≥ 0.5 ×); CPU per page ${(crawl.cpuS / crawl.pages / (naive.cpuS / naive.pages)).toFixed(1)} × the naive crawler's\n`,
  );
}

await main();
