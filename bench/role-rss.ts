import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { parseRunArgs } from '../cli/run-options.js';
import { SyntheticWeb } from '../synthetic-web/synthetic-web.js';
import { prose, type PageSpec, type SiteSpec } from '../synthetic-web/sites.js';
import { figure, machineLine } from './machine.js';
import { configuredTerms, MiB, quantityBytes, sizing, type SizedRole } from './role-memory.js';

// Peak RSS of each role when one pod holds twice its tasks, as the survivor of a failover does: one
// `crawlstream run --role R` process per role, with the arguments of deploy/R.yaml, on the Kafka
// engine, each alone in its consumer groups, over topics of 2 × ceil(partitions / replicas)
// partitions (deploy/topics.yaml, the manifests' replicas): 4, where a pod normally holds 2. They
// crawl a loopback synthetic web of SITES sites × PAGES pages of ~PAGE_KB KiB until 99 % of its
// pages are fetched (or LIMIT_S); VmHWM of each process is read from /proc. Then the memory the
// settings bound but a short crawl does not fill (bench/role-memory.ts), and the requests and
// limits the sizing rule gives beside the manifests' own.
//
// Needs a broker and registry: `eval "$(bash scripts/kafka/start.sh)"` exports CRAWLSTREAM_BROKERS
// and CRAWLSTREAM_REGISTRY. Each run has its own --app-id, so it starts from empty topics.
const BROKERS = process.env['CRAWLSTREAM_BROKERS'];
const REGISTRY = process.env['CRAWLSTREAM_REGISTRY'];
const SITES = Number(process.env['ROLE_RSS_SITES'] ?? 4_000);
const PAGES = Number(process.env['ROLE_RSS_PAGES'] ?? 9);
const PAGE_KB = Number(process.env['ROLE_RSS_PAGE_KB'] ?? 16);
const LIMIT_S = Number(process.env['ROLE_RSS_SECONDS'] ?? 600);
const ROLES: readonly SizedRole[] = ['frontier', 'parser', 'fetcher'];
const DEPLOY = join(import.meta.dirname, '..', '..', 'deploy');
const CLI = join(import.meta.dirname, '..', 'cli', 'main.js');
const RUN_ID = Date.now().toString(36);

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- manifests are read as free-form YAML
type Doc = Record<string, any>;
const load = (file: string): Doc[] =>
  parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8')).map((d) => d.toJS() as Doc);

function syntheticSites(): SiteSpec[] {
  const name = (i: number) => `r${String(i).padStart(5, '0')}-${RUN_ID}.test`;
  return Array.from({ length: SITES }, (_, i) => {
    const paths = Array.from({ length: PAGES - 1 }, (_, j) => `/page-${j}.html`);
    const others = [1, 17, 331].map((d) => `http://${name((i + d) % SITES)}:{{PORT}}/`);
    const pages: Record<string, PageSpec> = { '/': { title: `${name(i)} home`, links: [...paths, ...others] } };
    for (const p of paths) {
      const paragraphs: string[] = [];
      for (let k = 0; k * 1.9 < PAGE_KB; k++) paragraphs.push(`<p>${prose(`${name(i)}${p}#${k}`, 250)}</p>`);
      pages[p] = { title: `${name(i)} ${p}`, links: ['/', paths[0]!], html: paragraphs.join('\n') };
    }
    return { host: name(i), seed: true, pages };
  });
}

/** Resident and peak resident MiB of a live process. */
function rss(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'latin1');
  const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { now: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

interface Pod {
  role: SizedRole;
  replicas: number;
  args: string[];
  requests: string;
  limits: string;
}

function pods(): Pod[] {
  const config = load('config.yaml').find((d) => d.kind === 'ConfigMap')!;
  return ROLES.map((role) => {
    const workload = load(`${role}.yaml`).find((d) => ['StatefulSet', 'Deployment'].includes(d.kind))!;
    const container = workload.spec.template.spec.containers[0] as Doc;
    const args = (container.args as string[]).map((a) =>
      a.replace(/\$\(([A-Z_]+)\)/g, (_, v: string) =>
        v === 'CRAWLSTREAM_BROKERS' ? BROKERS! : v === 'CRAWLSTREAM_REGISTRY' ? REGISTRY! : (config.data[v] as string),
      ),
    );
    return {
      role,
      replicas: workload.spec.replicas as number,
      args,
      requests: container.resources.requests.memory as string,
      limits: container.resources.limits.memory as string,
    };
  });
}

/** The manifest's arguments for this machine: a data dir of its own, metrics on loopback, the test web's names. */
function localArgs(pod: Pod, dir: string): string[] {
  const out = [...pod.args];
  const set = (flag: string, value: string) => {
    const i = out.indexOf(flag);
    if (i < 0) out.push(flag, value);
    else out[i + 1] = value;
  };
  set('--data', join(dir, pod.role));
  set('--metrics-port', '0');
  set('--metrics-host', '127.0.0.1');
  // loopback: every host on 127.0.0.1, so the per-IP limit is lifted as in bench/crawl.ts
  out.push(
    '--app-id',
    `rss-${RUN_ID}`,
    '--quiet',
    '--log-level',
    'warn',
    '--no-system-dns',
    '--resolve',
    '*.test=127.0.0.1',
  );
  out.push('--allow-ip', '127.0.0.1/32', '--ip-concurrency', '100000', '--ip-gap', '0');
  return out;
}

async function main(): Promise<void> {
  if (!BROKERS || !REGISTRY)
    throw new Error('set CRAWLSTREAM_BROKERS and CRAWLSTREAM_REGISTRY (eval "$(bash scripts/kafka/start.sh)")');
  process.stdout.write(`${machineLine()}\n`);
  // the data topics' partitions (dead letters and the like have one)
  const partitions = Math.max(
    ...load('topics.yaml')
      .filter((d) => d?.kind === 'KafkaTopic')
      .map((d) => d.spec.partitions as number),
  );
  const all = pods();
  const held = Math.max(...all.map((p) => Math.min(partitions, 2 * Math.ceil(partitions / p.replicas))));
  for (const p of all)
    process.stdout.write(
      `${p.role}: ${p.replicas} replicas over ${partitions} partitions, ${Math.ceil(partitions / p.replicas)} a pod; this run: ${held}\n`,
    );

  const sites = syntheticSites();
  const web = await SyntheticWeb.start({ sites });
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-role-rss-'));
  const seeds = join(dir, 'seeds.txt');
  writeFileSync(seeds, `${web.seedUrls().join('\n')}\n`);
  const total = SITES * PAGES;
  const kafka = ['--brokers', BROKERS, '--app-id', `rss-${RUN_ID}`];
  execFileSync(process.execPath, [CLI, 'topics', 'create', ...kafka, '--partitions', String(held)], {
    stdio: 'inherit',
  });
  execFileSync(process.execPath, [CLI, 'inject', '--seeds', seeds, ...kafka, '--registry', REGISTRY], {
    stdio: 'inherit',
  });
  process.stdout.write(`web: ${SITES} sites × ${PAGES} pages = ${total} pages of ~${PAGE_KB} KiB\n`);

  const children = new Map<SizedRole, ChildProcess>();
  const peak = new Map<SizedRole, number>();
  for (const p of all) {
    const args = localArgs(p, dir);
    process.stdout.write(`  ${p.role}: crawlstream ${args.join(' ')}\n`);
    children.set(p.role, spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'inherit'] }));
  }
  const exited = Promise.race([...children.values()].map((c) => new Promise((r) => c.once('exit', r))));
  let stopped = false;
  void exited.then(() => (stopped = true));
  const started = performance.now();
  let nextLine = 10;
  let pages = 0;
  try {
    while (!stopped) {
      await new Promise((r) => setTimeout(r, 500));
      const s = (performance.now() - started) / 1000;
      for (const [role, c] of children) {
        try {
          peak.set(role, Math.max(peak.get(role) ?? 0, rss(c.pid!).peak));
        } catch {
          // exited between two reads
        }
      }
      pages = web.requests().filter((e) => e.status === 200 && e.path !== '/robots.txt').length;
      if (s >= nextLine) {
        nextLine += 10;
        const now = [...children].map(([role, c]) => `${role} ${Math.round(rss(c.pid!).now)}`).join(', ');
        process.stdout.write(`  ${Math.round(s)} s: ${pages} pages; RSS MiB ${now}\n`);
      }
      if (pages >= 0.99 * total || s > LIMIT_S) break;
    }
    if (stopped) throw new Error('a role process exited before the crawl was done');
    if (pages < 0.99 * total)
      process.stdout.write(`99 % of pages NOT reached within ${LIMIT_S} s; figures at the stop\n`);
  } finally {
    await Promise.all(
      [...children.values()].map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
          }),
      ),
    );
    await web.close();
    rmSync(dir, { recursive: true, force: true });
  }
  figure('pages fetched', pages, `of ${total}`);
  figure('time', (performance.now() - started) / 1000, 's');
  for (const p of all) {
    const measured = peak.get(p.role) ?? 0;
    const config = parseRunArgs(localArgs(p, dir).slice(1)).crawl.config;
    const terms = configuredTerms(p.role, config, held);
    const { request, limit } = sizing(measured * MiB, terms);
    figure(`${p.role} peak RSS holding ${held} partitions`, measured, 'MiB');
    for (const t of terms) figure(`  + ${t.what}`, t.bytes / MiB, 'MiB');
    process.stdout.write(
      `  rule: request ${request / MiB} Mi, limit ${limit / MiB} Mi; manifest: request ${p.requests} (${quantityBytes(p.requests) >= request ? 'ok' : 'too small'}), limit ${p.limits} (${quantityBytes(p.limits) >= limit ? 'ok' : 'too small'})\n`,
    );
  }
}

await main();
