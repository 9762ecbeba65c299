import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { parseRunArgs, type Role } from '../../cli/run-options.js';
import { parseCrawlArgs } from '../../cli/options.js';
import { topicManifest } from '../../cli/topics.js';
import { topicDefinitions } from '../../runtime/engines/kafka/topics.js';
import { crawlTopology } from '../../topology/crawl-topology.js';
import { dashboardJson } from '../../cli/dashboard.js';
import { METRICS, type MetricId } from '../../core/metric-catalogue.js';
import {
  configuredTerms,
  MEASURED_PEAK_MIB,
  MiB,
  quantityBytes,
  sizing,
  type SizedRole,
} from '../../bench/role-memory.js';

// Offline validation of deploy/: no cluster, no network; the manifests are read as data.
const DEPLOY = fileURLToPath(new URL('../../../deploy/', import.meta.url));

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- manifests are walked as free-form YAML
type Doc = Record<string, any>;

function load(file: string): Doc[] {
  const docs = parseAllDocuments(readFileSync(`${DEPLOY}${file}`, 'utf8'));
  const out: Doc[] = [];
  for (const d of docs) {
    assert.deepEqual(
      d.errors.map((e) => e.message),
      [],
      `${file}: YAML errors`,
    );
    const value = d.toJS() as Doc | null;
    if (value !== null) out.push(value);
  }
  return out;
}

const all = readdirSync(DEPLOY)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => load(f).map((doc) => ({ file: f, doc })));
const configMap = all.find((x) => x.doc.kind === 'ConfigMap')?.doc;

/** Expands `$(VAR)` the way the kubelet does, from the ConfigMap the container imports. */
function expand(arg: string): string {
  return arg.replace(/\$\(([A-Z_]+)\)/g, (_, name: string) => {
    const value = configMap?.data?.[name];
    assert.equal(typeof value, 'string', `$(${name}) is not defined in the ConfigMap`);
    return value as string;
  });
}

test('every manifest is well-formed: apiVersion, kind, a DNS-1123 name, labels', () => {
  assert.ok(all.length >= 8, `only ${all.length} documents`);
  for (const { file, doc } of all) {
    assert.equal(typeof doc.apiVersion, 'string', `${file}: apiVersion`);
    assert.equal(typeof doc.kind, 'string', `${file}: kind`);
    assert.match(
      doc.metadata?.name ?? '',
      /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/,
      `${file}: metadata.name ${doc.metadata?.name}`,
    );
  }
});

test("stateful roles are StatefulSets with a volume at --data; the fetcher is a Deployment; args pass run's own validation", () => {
  const expected: Record<Exclude<Role, 'all'>, string> = {
    frontier: 'StatefulSet',
    parser: 'StatefulSet',
    fetcher: 'Deployment',
  };
  for (const [role, kind] of Object.entries(expected)) {
    const workloads = all.filter(
      (x) =>
        ['StatefulSet', 'Deployment'].includes(x.doc.kind) &&
        x.doc.spec.template.spec.containers.some((c: Doc) => c.args?.[2] === role),
    );
    assert.equal(workloads.length, 1, `${role}: ${workloads.length} workloads`);
    const { file, doc } = workloads[0]!;
    assert.equal(doc.kind, kind, `${file}: ${role} must be a ${kind}`);
    const spec = doc.spec;
    // selector must select the pod template's labels
    for (const [k, v] of Object.entries(spec.selector.matchLabels))
      assert.equal(spec.template.metadata.labels[k], v, `${file}: selector ${k}`);
    assert.ok(spec.template.spec.terminationGracePeriodSeconds >= 10, `${file}: SIGTERM needs time to commit`);
    const [container] = spec.template.spec.containers as Doc[];
    assert.ok(container, `${file}: no container`);
    assert.equal(container.args[0], 'run', `${file}: the container runs 'crawlstream run'`);
    assert.ok(
      container.envFrom?.some((e: Doc) => e.configMapRef?.name === configMap?.metadata.name),
      `${file}: imports the ConfigMap`,
    );
    const cmd = parseRunArgs(container.args.slice(1).map(expand));
    assert.equal(cmd.role, role);
    assert.ok(cmd.registryUrl.startsWith('http'), `${file}: --registry`);
    const mount = (container.volumeMounts as Doc[] | undefined)?.find((m) => m.mountPath === cmd.crawl.dataDir);
    assert.ok(mount, `${file}: nothing mounted at --data ${cmd.crawl.dataDir}`);
    if (kind === 'StatefulSet') {
      assert.ok(
        spec.volumeClaimTemplates.some((v: Doc) => v.metadata.name === mount.name),
        `${file}: --data must be a persistent volume claim`,
      );
      const service = all.find((x) => x.doc.kind === 'Service' && x.doc.metadata.name === spec.serviceName);
      assert.ok(service, `${file}: serviceName ${spec.serviceName} has no Service`);
      assert.equal(service.doc.spec.clusterIP, 'None', `${file}: the governing Service must be headless`);
      for (const [k, v] of Object.entries(service.doc.spec.selector))
        assert.equal(spec.template.metadata.labels[k], v, `${service.file}: selector ${k}`);
      assert.ok(spec.replicas <= 4, `${file}: more replicas than partitions`);
    } else {
      assert.ok(
        spec.template.spec.volumes.some((v: Doc) => v.name === mount.name && v.emptyDir !== undefined),
        `${file}: a fetcher's --data is scratch space`,
      );
    }
  }
});

test("topics.yaml declares exactly the topology's topics, partitions and configs (regenerate with `crawlstream topics manifest`)", () => {
  const crawl = parseCrawlArgs(['--data', tmpdir()]);
  const defs = topicDefinitions(
    crawlTopology({ config: crawl.config, partitions: crawl.partitions, warcDir: tmpdir() }),
  );
  const topics = all.filter((x) => x.doc.kind === 'KafkaTopic').map((x) => x.doc);
  assert.deepEqual(topics.map((t) => t.metadata.name).sort(), defs.map((d) => d.name).sort());
  for (const d of defs) {
    const t = topics.find((x) => x.metadata.name === d.name)!;
    assert.equal(t.spec.partitions, d.partitions, d.name);
    for (const [k, v] of Object.entries(d.config)) assert.equal(t.spec.config[k], v, `${d.name} ${k}`);
  }
  assert.equal(
    readFileSync(`${DEPLOY}topics.yaml`, 'utf8').trimEnd(),
    topicManifest(defs),
    'deploy/topics.yaml is not what `crawlstream topics manifest` prints',
  );
});

// what the image's build copies and installs (the Avro schemas among it) is production-install.test.ts's
test("the image runs the CLI with the bin's node flags and huge-page-backed allocations", () => {
  const dockerfile = readFileSync(`${DEPLOY}Dockerfile`, 'utf8');
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile);
  assert.ok(entry, 'an ENTRYPOINT');
  // the node flags the npm bin starts with, from its first line: `#!/usr/bin/env -S node FLAGS`
  const shebang = readFileSync(new URL('../../../cli/main.ts', import.meta.url), 'utf8').split('\n', 1)[0]!;
  const flags = /^#!\/usr\/bin\/env -S node((?: --[a-z-]+=\S+)*)$/.exec(shebang);
  assert.ok(flags, `cli/main.ts starts with a #! line that runs node with flags: ${shebang}`);
  const nodeFlags = flags[1]!.trim().split(' ');
  assert.ok(nodeFlags.includes('--max-semi-space-size=64'), 'a 64 MiB young generation');
  assert.deepEqual(
    JSON.parse(entry[1]!),
    ['node', ...nodeFlags, 'dist/cli/main.js'],
    'the image starts node as the bin does',
  );
  assert.match(dockerfile, /^ENV GLIBC_TUNABLES=glibc\.malloc\.hugetlb=1$/m);
  for (const { file, doc } of all.filter((x) => ['StatefulSet', 'Deployment'].includes(x.doc.kind))) {
    assert.match(doc.spec.template.spec.containers[0].image, /^crawlstream:\d+\.\d+\.\d+$/, file);
  }
});

// --- operability: the ops endpoints, probes, security context, spreading, PDBs, PodMonitor, dashboard

const workloads = all.filter((x) => ['StatefulSet', 'Deployment'].includes(x.doc.kind));

/** Whether a `matchLabels` selector selects a pod carrying `labels`. */
function selects(matchLabels: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  const entries = Object.entries(matchLabels ?? {});
  return entries.length > 0 && entries.every(([k, v]) => labels[k] === v);
}

const podLabels = (doc: Doc): Record<string, string> => doc.spec.template.metadata.labels;

test('every workload serves /metrics, /healthz and /readyz on a named port, probed there; liveness never waits for a restore', () => {
  assert.equal(workloads.length, 3);
  for (const { file, doc } of workloads) {
    const [container] = doc.spec.template.spec.containers as Doc[];
    const cmd = parseRunArgs((container!.args as string[]).slice(1).map(expand));
    assert.deepEqual(
      { port: cmd.crawl.ops?.port, host: cmd.crawl.ops?.host },
      { port: 9464, host: '0.0.0.0' },
      `${file}: --metrics-port 9464 --metrics-host 0.0.0.0`,
    );
    const port = (container!.ports as Doc[] | undefined)?.find((p) => p.name === 'metrics');
    assert.ok(port, `${file}: no container port named metrics`);
    assert.equal(
      port.containerPort,
      cmd.crawl.ops!.port,
      `${file}: the metrics port is where the endpoints are served`,
    );
    const probe = (name: string, path: string): Doc => {
      const p = container![name] as Doc | undefined;
      assert.ok(p, `${file}: no ${name}`);
      assert.equal(p.httpGet?.path, path, `${file}: ${name} path`);
      assert.ok(
        p.httpGet.port === 'metrics' || p.httpGet.port === cmd.crawl.ops!.port,
        `${file}: ${name} on port ${p.httpGet.port}`,
      );
      return p;
    };
    const liveness = probe('livenessProbe', '/healthz');
    const readiness = probe('readinessProbe', '/readyz');
    // a restore of minutes shows on /readyz only; a restart for it would start the restore over
    if (container!.startupProbe !== undefined) probe('startupProbe', '/healthz');
    // liveness tolerates a busy event loop (a compaction, a GC pause) for half a minute at least
    assert.ok(
      (liveness.periodSeconds ?? 10) * (liveness.failureThreshold ?? 3) >= 30,
      `${file}: liveness gives up after less than 30 s`,
    );
    assert.ok((liveness.timeoutSeconds ?? 1) >= 2, `${file}: liveness timeout`);
    assert.ok((readiness.periodSeconds ?? 10) <= 30, `${file}: readiness notices a restored pod late`);
  }
  const dockerfile = readFileSync(`${DEPLOY}Dockerfile`, 'utf8');
  assert.match(dockerfile, /^EXPOSE 9464$/m);
});

test("pods run as the image's node user with the data volume group-writable, spread over nodes by role", () => {
  // node:* images create `node` as uid/gid 1000; the image runs as that user
  const dockerfile = readFileSync(`${DEPLOY}Dockerfile`, 'utf8');
  assert.match(dockerfile, /^FROM node:\S+$/m);
  assert.match(dockerfile, /^USER node$/m);
  for (const { file, doc } of workloads) {
    const pod = doc.spec.template.spec;
    const sc = pod.securityContext as Doc | undefined;
    assert.ok(sc, `${file}: no pod securityContext`);
    assert.equal(sc.runAsUser, 1000, `${file}: runAsUser`);
    assert.equal(sc.runAsNonRoot, true, `${file}: runAsNonRoot`);
    assert.equal(sc.fsGroup, 1000, `${file}: fsGroup makes the state volume writable by uid 1000`);
    assert.notEqual(pod.containers[0].securityContext?.allowPrivilegeEscalation, true, file);
    const terms = pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution as Doc[] | undefined;
    assert.ok(terms?.length, `${file}: no preferred pod anti-affinity`);
    const own = terms.find(
      (t) =>
        t.podAffinityTerm.topologyKey === 'kubernetes.io/hostname' &&
        selects(t.podAffinityTerm.labelSelector?.matchLabels, podLabels(doc)),
    );
    assert.ok(own, `${file}: anti-affinity by hostname against its own pods`);
    assert.ok('app.kubernetes.io/component' in own.podAffinityTerm.labelSelector.matchLabels, `${file}: by role`);
    assert.ok(own.weight >= 1 && own.weight <= 100, `${file}: weight`);
  }
});

test('a PodDisruptionBudget of maxUnavailable 1 per workload, selecting its pods and no other', () => {
  const pdbs = all.filter((x) => x.doc.kind === 'PodDisruptionBudget');
  assert.equal(pdbs.length, workloads.length);
  for (const { file, doc } of workloads) {
    const mine = pdbs.filter((p) => selects(p.doc.spec.selector?.matchLabels, podLabels(doc)));
    assert.equal(mine.length, 1, `${file}: ${mine.length} PodDisruptionBudgets select its pods`);
    const pdb = mine[0]!.doc;
    assert.equal(pdb.apiVersion, 'policy/v1');
    assert.equal(pdb.spec.maxUnavailable, 1, `${file}: maxUnavailable`);
    assert.equal(pdb.spec.minAvailable, undefined, `${file}: maxUnavailable, not minAvailable`);
    for (const other of workloads.filter((w) => w !== workloads.find((x) => x.doc === doc)))
      assert.ok(!selects(pdb.spec.selector.matchLabels, podLabels(other.doc)), `${file}'s PDB selects ${other.file}`);
  }
});

test('one PodMonitor scrapes /metrics on the metrics port of every workload, labelled by role', () => {
  const monitors = all.filter((x) => x.doc.kind === 'PodMonitor');
  assert.equal(monitors.length, 1);
  const { file, doc } = monitors[0]!;
  assert.equal(doc.apiVersion, 'monitoring.coreos.com/v1');
  for (const w of workloads) {
    assert.ok(selects(doc.spec.selector?.matchLabels, podLabels(w.doc)), `${file} does not select ${w.file}'s pods`);
    assert.ok(
      w.doc.spec.template.spec.containers[0].ports.some((p: Doc) => p.name === 'metrics'),
      `${w.file}: no port named metrics to scrape`,
    );
  }
  const endpoints = doc.spec.podMetricsEndpoints as Doc[];
  assert.equal(endpoints.length, 1);
  const [endpoint] = endpoints;
  assert.equal(endpoint!.port, 'metrics');
  assert.equal(endpoint!.path, '/metrics');
  // the dashboard splits lag and restores `by (component)`
  assert.ok(
    endpoint!.relabelings?.some(
      (r: Doc) =>
        r.targetLabel === 'component' &&
        r.sourceLabels?.includes('__meta_kubernetes_pod_label_app_kubernetes_io_component'),
    ),
    `${file}: no component label`,
  );
});

const dashboardText = readFileSync(`${DEPLOY}grafana-dashboard.json`, 'utf8');
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Grafana's JSON model is walked as data
const dashboard = JSON.parse(dashboardText) as Record<string, any>;
const graphs = (dashboard.panels as Doc[]).filter((p) => p.type !== 'row');
const exprs = graphs.flatMap((p) => (p.targets as Doc[]).map((t) => t.expr as string));

test('deploy/grafana-dashboard.json is what `crawlstream dashboard` prints (regenerate it when the catalogue changes)', () => {
  assert.equal(
    dashboardText.trimEnd(),
    dashboardJson(),
    'deploy/grafana-dashboard.json is stale: crawlstream dashboard > deploy/grafana-dashboard.json',
  );
  assert.ok(
    dashboard.__inputs.some((i: Doc) => i.name === 'DS_PROMETHEUS' && i.pluginId === 'prometheus'),
    'the data source is the import input DS_PROMETHEUS',
  );
  for (const p of graphs) {
    assert.deepEqual(p.datasource, { type: 'prometheus', uid: '${DS_PROMETHEUS}' }, p.title);
    for (const t of p.targets) assert.equal(t.datasource.uid, '${DS_PROMETHEUS}', p.title);
  }
  const ids = (dashboard.panels as Doc[]).map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
});

test('the dashboard graphs every catalogue metric in a row per catalogue panel, and nothing outside the catalogue', () => {
  const rows = (dashboard.panels as Doc[]).filter((p) => p.type === 'row').map((p) => p.title as string);
  assert.equal(rows.length, 1 + new Set(Object.values(METRICS).map((m) => m.panel)).size, rows.join());
  const exported = new Set<string>();
  for (const [id, m] of Object.entries(METRICS) as [MetricId, (typeof METRICS)[MetricId]][]) {
    const series = m.type === 'counter' ? `${m.name}_total` : m.type === 'histogram' ? `${m.name}_bucket` : m.name;
    exported.add(series);
    const uses = exprs.filter((e) => new RegExp(`\\b${series}\\b`).test(e));
    assert.ok(uses.length > 0, `${id} (${series}) is on no graph`);
    // its own graph, titled with its help
    const own = graphs.find((p) => p.title === m.help);
    assert.ok(own, `${id}: no graph titled ${JSON.stringify(m.help)}`);
    const ownExprs = (own.targets as Doc[]).map((t) => t.expr as string);
    if (m.type === 'counter') {
      const rate = `rate(${series}[5m])`;
      assert.deepEqual(
        ownExprs,
        [m.labels.length > 0 ? `sum by (${m.labels.join(', ')}) (${rate})` : `sum(${rate})`],
        id,
      );
    } else if (m.type === 'gauge') {
      // a process's own reading (a clock) per instance: a sum over instances means nothing
      assert.deepEqual(ownExprs, ['perProcess' in m ? series : `sum(${series})`], id);
    } else {
      assert.deepEqual(
        ownExprs,
        [0.5, 0.99].map((q) => `histogram_quantile(${q}, sum by (le) (rate(${series}[5m])))`),
        id,
      );
    }
  }
  for (const e of exprs)
    for (const name of e.match(/\bcrawlstream_[a-z_]+/g) ?? [])
      assert.ok(exported.has(name), `${JSON.stringify(e)} reads ${name}, which crawlstream does not export`);
});

test('the dashboard has throughput, errors, politeness, lag, commit latency and restore graphs', () => {
  const expect: [RegExp, MetricId[]][] = [
    [/throughput/i, ['pages_fetched']],
    [/errors/i, ['fetch_errors', 'parser_errors']],
    [/politeness/i, ['politeness_delay']],
    [/lag/i, ['consumer_lag']],
    [/commit latency/i, ['commit_duration']],
    [/restore/i, ['tasks_restoring']],
  ];
  for (const [title, ids] of expect) {
    const panel = graphs.find((p) => title.test(p.title));
    assert.ok(panel, `no graph titled ${title}`);
    const text = (panel.targets as Doc[]).map((t) => t.expr).join('\n');
    for (const id of ids) assert.ok(text.includes(METRICS[id].name), `${panel.title} does not show ${id}`);
  }
});

test("memory requests and limits follow the sizing rule for a pod holding twice its partitions (a failed peer's too)", () => {
  const partitions = Math.max(
    ...all.filter((x) => x.doc.kind === 'KafkaTopic').map((x) => x.doc.spec.partitions as number),
  );
  const sized = new Set<string>();
  for (const { file, doc } of workloads) {
    const container = doc.spec.template.spec.containers[0] as Doc;
    const cmd = parseRunArgs((container.args as string[]).slice(1).map(expand));
    assert.notEqual(cmd.role, 'all', `${file}: one role a pod`);
    const role = cmd.role as SizedRole;
    sized.add(role);
    // the parse pool's size must not follow the node's cores (os.availableParallelism ignores the CPU limit)
    if (role === 'parser') assert.ok(container.args.includes('--threads'), `${file}: --threads`);
    const held = Math.min(partitions, 2 * Math.ceil(partitions / (doc.spec.replicas as number)));
    const want = sizing(MEASURED_PEAK_MIB[role] * MiB, configuredTerms(role, cmd.crawl.config, held));
    const { requests, limits } = container.resources as { requests: Doc; limits: Doc };
    const request = quantityBytes(requests.memory as string);
    const limit = quantityBytes(limits.memory as string);
    assert.ok(MEASURED_PEAK_MIB[role] > 0, `${role}: no measured figure (bench/role-memory.ts)`);
    assert.ok(request >= want.request, `${file}: memory request ${requests.memory} < ${want.request / MiB}Mi`);
    assert.ok(limit >= want.limit, `${file}: memory limit ${limits.memory} < ${want.limit / MiB}Mi`);
    // not far above the rule either: an oversized limit hides a leak and wastes the node
    assert.ok(
      limit <= want.limit * 1.5,
      `${file}: memory limit ${limits.memory} far above the rule's ${want.limit / MiB}Mi`,
    );
    assert.ok(request <= limit, `${file}: request above limit`);
  }
  assert.deepEqual([...sized].sort(), ['fetcher', 'frontier', 'parser']);
  // the rule moves with the settings: twice the block cache needs a larger limit than the manifest's
  const frontier = workloads.find(({ doc }) => doc.spec.template.spec.containers[0].args[2] === 'frontier')!;
  const args = (frontier.doc.spec.template.spec.containers[0].args as string[]).slice(1).map(expand);
  const bigger = parseRunArgs([...args, '--seen-block-cache', String(1024 * MiB)]).crawl.config;
  const limit = quantityBytes(frontier.doc.spec.template.spec.containers[0].resources.limits.memory);
  assert.ok(sizing(MEASURED_PEAK_MIB.frontier * MiB, configuredTerms('frontier', bigger, partitions)).limit > limit);
});
