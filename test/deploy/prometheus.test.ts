import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { crawlArgs, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';

// A real Prometheus (Debian's package; scripts/prometheus.sh finds or installs it and test.sh sets
// CRAWLSTREAM_PROMETHEUS) scrapes a crawl of the synthetic web through the scrape configuration
// deploy/monitoring.yaml describes, and every query of deploy/grafana-dashboard.json must return
// a series from it.

const DEPLOY = fileURLToPath(new URL('../../../deploy/', import.meta.url));
/** Short enough for a few scrapes within a crawl of the synthetic web; the manifests' is 15 s. */
const SCRAPE_INTERVAL_S = 1;
/** The value of the pod label a PodMonitor relabels into `component`: the one process runs every role. */
const COMPONENT = 'crawl';

function prometheusBinary(): string {
  const given = process.env.CRAWLSTREAM_PROMETHEUS;
  if (given) return given;
  const found = spawnSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' });
  assert.ok(
    found.status === 0 && found.stdout.trim() !== '',
    "no Prometheus: run the tests through `npm test` (scripts/prometheus.sh installs Debian's package) or set CRAWLSTREAM_PROMETHEUS",
  );
  return found.stdout.trim();
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** `sourceLabels` → `source_labels`: a PodMonitor spells Prometheus' relabel fields in camelCase. */
const RELABEL_FIELDS: Record<string, string> = {
  sourceLabels: 'source_labels',
  targetLabel: 'target_label',
  separator: 'separator',
  regex: 'regex',
  modulus: 'modulus',
  replacement: 'replacement',
  action: 'action',
};

/**
 * The Prometheus scrape job equivalent to deploy/monitoring.yaml's PodMonitor, for one process on
 * loopback: the endpoint's path and relabelings as written there, the `metrics` port mapped to
 * `port`, the pod labels a crawlstream pod carries as the target's `__meta_kubernetes_pod_label_*`
 * labels (what the Operator's Kubernetes discovery gives). Only the interval is shortened. Fails
 * on any PodMonitor field it does not translate, so the two cannot drift apart silently.
 */
function scrapeConfigFromPodMonitor(podMonitor: Record<string, unknown>, port: number): Record<string, unknown> {
  assert.equal(podMonitor.kind, 'PodMonitor');
  const spec = podMonitor.spec as { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: unknown[] };
  assert.equal(spec.podMetricsEndpoints.length, 1, 'one metrics endpoint per pod');
  const endpoint = spec.podMetricsEndpoints[0] as Record<string, unknown>;
  const known = new Set(['port', 'path', 'interval', 'scrapeTimeout', 'relabelings']);
  for (const key of Object.keys(endpoint))
    assert.ok(known.has(key), `monitoring.yaml: endpoint field ${key} is not translated`);
  assert.equal(endpoint.port, 'metrics');
  const relabelings = ((endpoint.relabelings as Record<string, unknown>[] | undefined) ?? []).map((r) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => {
        assert.ok(k in RELABEL_FIELDS, `monitoring.yaml: relabeling field ${k} is not translated`);
        return [RELABEL_FIELDS[k], v];
      }),
    ),
  );
  const podLabels: Record<string, string> = { ...spec.selector.matchLabels, 'app.kubernetes.io/component': COMPONENT };
  const meta = Object.fromEntries(
    Object.entries(podLabels).map(([k, v]) => [`__meta_kubernetes_pod_label_${k.replace(/[^a-zA-Z0-9_]/g, '_')}`, v]),
  );
  return {
    job_name: `podMonitor/${(podMonitor.metadata as { name: string }).name}`,
    metrics_path: endpoint.path ?? '/metrics',
    scrape_interval: `${SCRAPE_INTERVAL_S}s`,
    scrape_timeout: `${SCRAPE_INTERVAL_S}s`,
    static_configs: [{ targets: [`127.0.0.1:${port}`], labels: meta }],
    relabel_configs: relabelings,
  };
}

/**
 * Every query of the dashboard with Grafana's variables replaced by concrete values: the rate
 * window and interval variables by a window holding several scrapes, template variables by the
 * `current` value the dashboard gives them (a data-source variable never appears in a query).
 */
function dashboardQueries(dashboard: {
  panels: { title: string; targets?: { expr: string; refId: string }[] }[];
  templating?: { list: { name: string; type: string; current?: { value?: string } }[] };
}): { panel: string; refId: string; expr: string }[] {
  const builtins: Record<string, string> = {
    __rate_interval: '5m',
    __interval: `${SCRAPE_INTERVAL_S}s`,
    __range: '5m',
    __interval_ms: String(SCRAPE_INTERVAL_S * 1000),
    __range_s: '300',
  };
  const vars: Record<string, string> = { ...builtins };
  for (const v of dashboard.templating?.list ?? []) {
    if (v.type !== 'datasource') vars[v.name] = v.current?.value ?? '.*';
  }
  const queries = dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      panel: p.title,
      refId: t.refId,
      expr: t.expr.replace(
        /\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]/g,
        (whole, a?: string, b?: string, c?: string) => {
          const name = a ?? b ?? c ?? '';
          assert.ok(name in vars, `unknown Grafana variable ${whole} in a query of panel ${p.title}`);
          return vars[name]!;
        },
      ),
    })),
  );
  return queries;
}

interface PromVector {
  status: string;
  data: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
  error?: string;
}

async function query(base: string, expr: string): Promise<PromVector> {
  const res = await fetch(`${base}/api/v1/query?${new URLSearchParams({ query: expr })}`);
  return (await res.json()) as PromVector;
}

async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      // not answering yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** Stops a child and waits for its end (SIGKILL after 10 s). */
async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const ended = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await ended;
  clearTimeout(timer);
}

test('the scrape job derived from monitoring.yaml copies the pod role into `component` and keeps the endpoint path', () => {
  const podMonitor = parse(readFileSync(join(DEPLOY, 'monitoring.yaml'), 'utf8')) as Record<string, unknown>;
  const job = scrapeConfigFromPodMonitor(podMonitor, 9464);
  assert.equal(job.metrics_path, '/metrics');
  assert.deepEqual(job.relabel_configs, [
    { source_labels: ['__meta_kubernetes_pod_label_app_kubernetes_io_component'], target_label: 'component' },
  ]);
  // a field the translation does not know fails instead of being dropped
  const spec = podMonitor.spec as { podMetricsEndpoints: Record<string, unknown>[] };
  spec.podMetricsEndpoints[0]!.honorLabels = true;
  assert.throws(() => scrapeConfigFromPodMonitor(podMonitor, 9464), /honorLabels is not translated/);
});

test(
  'a real Prometheus scraping a crawl as monitoring.yaml says returns a series for every query of the Grafana dashboard',
  { timeout: 300_000 },
  async () => {
    const binary = prometheusBinary();
    const dir = tempDir('prometheus');
    const web = await SyntheticWeb.start();
    let prometheus: ChildProcess | undefined;
    let crawl: ChildProcess | undefined;
    let promLog = '';
    try {
      const metricsPort = await freePort();
      let promPort = await freePort();
      while (promPort === metricsPort) promPort = await freePort();
      const podMonitor = parse(readFileSync(join(DEPLOY, 'monitoring.yaml'), 'utf8')) as Record<string, unknown>;
      const config = {
        global: { scrape_interval: `${SCRAPE_INTERVAL_S}s`, evaluation_interval: `${SCRAPE_INTERVAL_S}s` },
        scrape_configs: [scrapeConfigFromPodMonitor(podMonitor, metricsPort)],
      };
      const configFile = join(dir, 'prometheus.yml');
      writeFileSync(configFile, JSON.stringify(config, null, 2)); // JSON is YAML
      prometheus = spawn(
        binary,
        [
          `--config.file=${configFile}`,
          `--storage.tsdb.path=${join(dir, 'tsdb')}`,
          `--web.listen-address=127.0.0.1:${promPort}`,
          '--log.level=warn',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      prometheus.stdout!.on('data', (d: Buffer) => (promLog += d.toString()));
      prometheus.stderr!.on('data', (d: Buffer) => (promLog += d.toString()));
      const base = `http://127.0.0.1:${promPort}`;
      await until('Prometheus to be ready', 60_000, async () =>
        (await fetch(`${base}/-/ready`)).ok ? true : undefined,
      );

      const seeds = writeSeeds(dir, web.seedUrls());
      const args = crawlArgs(seeds, join(dir, 'data'), ['--metrics-port', String(metricsPort)]);
      const cli = startCli(args.filter((a) => a !== '--until-idle'));
      crawl = cli.child;
      // the crawl runs without --until-idle: its endpoint must stay up while the queries run (a gauge
      // of a vanished target goes stale), so it is stopped at the end. It has done its work once
      // pages were fetched and, by Prometheus' own samples, none for the last 5 s with no lease out
      await until('the crawl to go quiet', 240_000, async () => {
        if (crawl!.exitCode !== null) assert.fail(`the crawl exited:\n${(await cli.exited).stderr}`);
        const value = async (expr: string) => Number((await query(base, expr)).data.result[0]?.value[1] ?? NaN);
        const pages = await value('sum(crawlstream_pages_fetched_total)');
        const lately = await value('sum(changes(crawlstream_pages_fetched_total[5s]))');
        const leases = await value('sum(crawlstream_frontier_leases)');
        return pages > 20 && lately === 0 && leases === 0 ? true : undefined;
      });
      // then three more scrapes, all answered (`up` is 1 for an answered one)
      const quietAt = Date.now() / 1000;
      await until('three more scrapes', 60_000, async () => {
        const latest = Number((await query(base, 'timestamp(up)')).data.result[0]?.value[1] ?? 0);
        const answered = Number(
          (await query(base, `sum_over_time(up[${5 * SCRAPE_INTERVAL_S}s])`)).data.result[0]?.value[1] ?? 0,
        );
        return latest >= quietAt + 3 * SCRAPE_INTERVAL_S && answered >= 3 ? true : undefined;
      });

      // the relabeling of monitoring.yaml gave every series the pod's role
      const up = await query(base, 'up');
      assert.equal(up.data.result[0]?.metric.component, COMPONENT, JSON.stringify(up.data.result));

      const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'grafana-dashboard.json'), 'utf8')) as Parameters<
        typeof dashboardQueries
      >[0];
      const queries = dashboardQueries(dashboard);
      assert.ok(queries.length >= 80, `only ${queries.length} dashboard queries`);
      const empty: string[] = [];
      for (const q of queries) {
        const r = await query(base, q.expr);
        assert.equal(r.status, 'success', `${q.panel} ${q.refId}: ${q.expr}: ${r.error}`);
        assert.equal(r.data.resultType, 'vector', q.expr);
        if (r.data.result.length === 0) empty.push(`${q.panel} (${q.refId}): ${q.expr}`);
        for (const s of r.data.result) {
          // a `sum by (component)` must split by the role the relabeling gave
          if (/by \(component\)/.test(q.expr)) assert.equal(s.metric.component, COMPONENT, q.expr);
        }
      }
      assert.deepEqual(empty, [], `${empty.length} dashboard queries returned no series:\n${empty.join('\n')}`);
      // the crawl did its work: a query that is 0 everywhere would not show that
      const pages = await query(base, 'sum(crawlstream_pages_fetched_total)');
      assert.ok(Number(pages.data.result[0]?.value[1]) > 20, JSON.stringify(pages.data.result));
    } catch (e) {
      if (promLog) (e as Error).message += `\nPrometheus' log:\n${promLog.slice(-4000)}`;
      throw e;
    } finally {
      await stop(crawl);
      await stop(prometheus);
      await web.close();
      removeDir(dir);
    }
  },
);
