import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringSerde } from '../../core/serde.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { startOpsServer } from '../../runtime/ops-server.js';
import type { Processor } from '../../runtime/processor.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import { seedBatches } from '../../cli/crawl.js';
import { M } from '../../core/metric-catalogue.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import type { PageSpec, SiteSpec } from '../../synthetic-web/sites.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';

/** A processor whose every call hangs (a fetch that never answers, a lock never released) until the test lets go. */
class Hang implements Processor<string, LinkBatch> {
  static started = 0;
  static readonly held: (() => void)[] = [];
  process(): Promise<void> {
    Hang.started++;
    return new Promise<void>((resolve) => Hang.held.push(resolve));
  }
  /** Lets every held call end, so the engine can stop. */
  static release(): void {
    for (const r of Hang.held.splice(0)) r();
  }
}

function hanging(): Topology {
  return new Topology('hang')
    .addTopic({ name: 'in', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('in-source', 'in')
    .addProcessor('hang', () => new Hang() as Processor, ['in-source']);
}

async function healthz(address: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://${address}/healthz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const STALL_MS = 300;

test('an embedded engine whose processor never finishes a record turns /healthz 503 once the stall limit passes, naming the work pending; idle, it stays 200', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-stall-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const engine = new EmbeddedEngine(hanging(), { dataDir: dir, commitIntervalMs: 20 });
  // a stop waits for records in flight: let the held ones end first
  t.after(async () => {
    Hang.release();
    await engine.stop().catch(() => undefined);
  });
  const ops = await startOpsServer({ engine, port: 0, host: '127.0.0.1', stallMs: STALL_MS });
  t.after(() => ops.close());
  await engine.start();

  // nothing to do for several stall limits: idle is not stalled
  for (let i = 0; i < 8; i++) {
    const idle = await healthz(ops.address);
    assert.equal(idle.status, 200, JSON.stringify(idle.body));
    assert.equal(idle.body['pending'], undefined);
    await sleep(STALL_MS / 2);
  }

  const batch = (site: string): LinkBatch => ({ site, sourceUrl: null, discoveredAt: 1, links: [] });
  await engine.produce(
    'in',
    ['a', 'b', 'c'].map((k) => ({ key: k, value: batch(k), timestamp: 1 })),
  );
  let last: { status: number; body: Record<string, unknown> } | undefined;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    last = await healthz(ops.address);
    if (last.status === 503) break;
    await sleep(20);
  }
  assert.equal(last?.status, 503, `never unhealthy: ${JSON.stringify(last?.body)}`);
  assert.equal(Hang.started, 1, 'the first record hangs and holds the others back');
  assert.match(String(last.body['reason']), /^stalled: no progress for \d+ s with work pending/);
  assert.equal(last.body['pending'], '2 input records not yet taken, 1 in flight');
  assert.ok((last.body['stuckMs'] as number) >= STALL_MS, JSON.stringify(last.body));
  // stalled is not failed: the engine still runs, and /readyz (restored and running) still says so
  assert.equal(last.body['live'], true);
  assert.equal(last.body['state'], 'running');
  assert.equal((await fetch(`http://${ops.address}/readyz`)).status, 200);
});

/** A site of `n` pages in a chain: each page links to the next, so one host always has the next URL queued. */
function chain(host: string, n: number): SiteSpec {
  const pages: Record<string, PageSpec> = {};
  for (let i = 0; i < n; i++)
    pages[i === 0 ? '/' : `/p${i}.html`] = { title: `${host} ${i}`, links: [`/p${i + 1}.html`] };
  return { host, seed: true, robots: { status: 200, body: 'User-agent: *\nDisallow:\n' }, pages };
}

test('a crawl whose only host waits out its politeness gap is not stalled: /healthz stays 200 through every gap', async (t) => {
  const GAP_MS = 4_000;
  const LIMIT_MS = 2_000;
  const web = await SyntheticWeb.start({ sites: [chain('gap.test', 3)] });
  t.after(() => web.close());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-gap-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = validateCrawlConfig({
    minDelayMs: GAP_MS,
    resolve: ['*.test=127.0.0.1'],
    allowIps: ['127.0.0.1/32'],
  });
  const topology = crawlTopology({ config, partitions: 1, warcDir: path.join(dir, 'warc') });
  const engine = new EmbeddedEngine(topology, { dataDir: dir });
  t.after(() => engine.stop().catch(() => undefined));
  const ops = await startOpsServer({ engine, port: 0, host: '127.0.0.1', stallMs: LIMIT_MS });
  t.after(() => ops.close());
  await engine.start();
  const now = Date.now();
  await engine.produce(
    TOPICS.links,
    seedBatches(web.seedUrls(), now, (l) => assert.fail(l)).map((b) => ({ key: b.site, value: b, timestamp: now })),
  );

  // probe until every page is fetched and the engine is idle
  const probes: { at: number; status: number; body: Record<string, unknown>; queued: number }[] = [];
  const pages = () => web.requests().filter((r) => r.path !== '/robots.txt').length;
  const deadline = Date.now() + 120_000;
  while (!(pages() >= 4 && engine.isIdle()) && Date.now() < deadline) {
    const { status, body } = await healthz(ops.address);
    probes.push({ at: Date.now(), status, body, queued: engine.metrics.gauge(M.frontierQueuedUrls) });
    await sleep(100);
  }
  assert.equal(pages(), 4, 'every page of the chain fetched, and the 404 its last one links to');
  const unhealthy = probes.filter((p) => p.status !== 200);
  assert.deepEqual(unhealthy, [], 'a politeness wait made /healthz fail');

  // not a vacuous pass: the host did wait longer than the stall limit, with a URL queued, under probes
  const starts = web.requests().map((r) => r.start);
  let waitedUnderProbe = 0;
  for (let i = 1; i < starts.length; i++) {
    if (starts[i]! - starts[i - 1]! < 1.5 * LIMIT_MS) continue;
    const during = probes.filter((p) => p.at > starts[i - 1]! + LIMIT_MS && p.at < starts[i]! && p.queued > 0);
    if (during.length > 0) waitedUnderProbe++;
  }
  assert.ok(waitedUnderProbe >= 2, `probes past the stall limit inside a politeness gap: ${waitedUnderProbe}`);
});
