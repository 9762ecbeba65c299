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

test('the image runs the CLI with huge-page-backed allocations and carries the Avro schemas it reads at run time', () => {
  const dockerfile = readFileSync(`${DEPLOY}Dockerfile`, 'utf8');
  assert.match(dockerfile, /ENTRYPOINT \["node", "dist\/cli\/main\.js"\]/);
  assert.match(dockerfile, /^ENV GLIBC_TUNABLES=glibc\.malloc\.hugetlb=1$/m);
  assert.match(dockerfile, /COPY schemas schemas\nUSER node/);
  for (const { file, doc } of all.filter((x) => ['StatefulSet', 'Deployment'].includes(x.doc.kind))) {
    assert.match(doc.spec.template.spec.containers[0].image, /^crawlstream:\d+\.\d+\.\d+$/, file);
  }
});

test('the image build copies every source folder the TypeScript build compiles', () => {
  const dockerfile = readFileSync(`${DEPLOY}Dockerfile`, 'utf8');
  const tsconfig = JSON.parse(readFileSync(`${DEPLOY}../tsconfig.json`, 'utf8')) as { include: string[] };
  assert.ok(tsconfig.include.length >= 8, tsconfig.include.join());
  for (const folder of tsconfig.include) {
    assert.match(dockerfile, new RegExp(`^COPY ${folder} ${folder}$`, 'm'), `the image build lacks ${folder}/`);
  }
});
