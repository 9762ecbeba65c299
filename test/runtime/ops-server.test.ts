import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { stringSerde } from '../../core/serde.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { startOpsServer } from '../../runtime/ops-server.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import { parseExposition, sampleSum } from '../python/prometheus.js';

/**
 * Forwards every record; its punctuator throws a topology bug once `broken` is set, which fails
 * the engine (any other error would only quarantine the task: task-quarantine.test.ts).
 */
class Relay implements Processor<string, LinkBatch, string, LinkBatch> {
  static broken = false;
  private ctx!: ProcessorContext<string, LinkBatch>;

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
    context.schedule(20, () => {
      if (Relay.broken) throw new CrawlError('CS_TOPOLOGY', 'a punctuator broke');
    });
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    this.ctx.forward(record);
  }
}

function relay(): Topology {
  return new Topology('ops')
    .addTopic({ name: 'in', partitions: 2, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'out', partitions: 2, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('in-source', 'in')
    .addProcessor('relay', () => new Relay() as Processor, ['in-source'])
    .addSink('out-sink', 'out', 'relay');
}

async function get(
  address: string,
  path: string,
  accept?: string,
): Promise<{ status: number; type: string; body: string }> {
  const res = await fetch(`http://${address}${path}`, accept ? { headers: { accept } } : {});
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
}

/** Polls `check` until it holds; fails after a minute (a correctness bound, not a timing claim). */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`never happened: ${what}`);
}

test('the ops endpoints: not ready before start, ready after, metrics parse, unhealthy once the engine fails', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-ops-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  Relay.broken = false;
  const engine = new EmbeddedEngine(relay(), { dataDir: dir, commitIntervalMs: 20 });
  // a failed assertion must not leave the engine's timers holding the test process open
  t.after(() => engine.stop().catch(() => undefined));
  const ops = await startOpsServer({ engine, port: 0, host: '127.0.0.1', stateDir: new TaskDirectory(dir).root });
  t.after(() => ops.close());

  assert.equal((await get(ops.address, '/healthz')).status, 200);
  const before = await get(ops.address, '/readyz');
  assert.equal(before.status, 503, before.body);

  await engine.start();
  const ready = await get(ops.address, '/readyz');
  assert.equal(ready.status, 200, ready.body);
  assert.equal((JSON.parse(ready.body) as { tasks: number }).tasks, 2);

  const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
  await engine.produce(
    'in',
    words.map((w) => ({ key: w, value: { site: w, sourceUrl: null, discoveredAt: 1, links: [] }, timestamp: 1 })),
  );
  await until('every record processed', async () =>
    (await get(ops.address, '/metrics')).body.includes(
      `crawlstream_records_processed_total{topic="in"} ${words.length}\n`,
    ),
  );

  const text = await get(ops.address, '/metrics');
  assert.match(text.type, /^text\/plain; version=0\.0\.4/);
  const families = parseExposition(text.body);
  const processed = families.find((f) => f.name === 'crawlstream_records_processed')!;
  assert.equal(processed.type, 'counter');
  assert.deepEqual(
    processed.samples.map((s) => [s.labels['topic'], s.value]),
    [['in', words.length]],
  );
  assert.ok(sampleSum(families, 'crawlstream_commits_total') > 0, 'commits counted');
  assert.ok(sampleSum(families, 'crawlstream_commit_duration_seconds_count') > 0, 'commit durations observed');
  assert.equal(sampleSum(families, 'crawlstream_tasks_running'), 2);
  // the process's plan, though no processor here sizes a cache by it: the engine's log is claimed in it
  const plan = Object.fromEntries(
    families.find((f) => f.name === 'crawlstream_memory_budget_bytes')!.samples.map((s) => [s.labels['part'], s.value]),
  );
  assert.equal(plan['total'], 0);
  assert.ok(plan['claimed']! >= 2 ** 20, `claimed ${plan['claimed']}`);
  assert.ok(
    families.some((f) => f.name === 'process_cpu_seconds'),
    'default process metrics are exported',
  );
  for (const f of families)
    for (const s of f.samples) {
      assert.ok(!('host' in s.labels) && !('url' in s.labels), `${s.name} has a high-cardinality label`);
    }

  const open = await get(ops.address, '/metrics', 'application/openmetrics-text; version=1.0.0');
  assert.match(open.type, /^application\/openmetrics-text/);
  assert.match(open.body, /# EOF\n$/);
  assert.equal(
    sampleSum(parseExposition(open.body, 'openmetrics'), 'crawlstream_records_processed_total'),
    words.length,
  );

  assert.equal((await get(ops.address, '/nothing')).status, 404);

  // measured in the background (disk-usage.ts): a scrape reads the last figure, so it comes
  await until('state on disk measured', async () =>
    /\ncrawlstream_state_disk_bytes [1-9]/.test((await get(ops.address, '/metrics')).body),
  );

  Relay.broken = true;
  await assert.rejects(engine.done, /a punctuator broke/);
  const health = await get(ops.address, '/healthz');
  assert.equal(health.status, 503, health.body);
  assert.equal((await get(ops.address, '/readyz')).status, 503);
});
