import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { taskIdString } from '../../core/ids.js';
import { stringSerde } from '../../core/serde.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import type { Engine, QueryAnswer } from '../../runtime/engine.js';
import { startOpsServer } from '../../runtime/ops-server.js';
import { siteStatusReply } from '../../runtime/status-routes.js';
import { partitionFor } from '../../runtime/partitioner.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';

/**
 * Counts records per key and answers, as the crawl's frontier does, query `site` of processor
 * `frontier`: which task saw the key, and how often. Knows nothing of the engine running it.
 */
class Counter implements Processor<string, LinkBatch> {
  private readonly counts = new Map<string, number>();

  init(context: ProcessorContext): void {
    context.registerQuery('site', (key) => ({ partition: context.taskId.partition, seen: this.counts.get(key) ?? 0 }));
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    this.counts.set(record.key, (this.counts.get(record.key) ?? 0) + 1);
  }
}

function counting(): Topology {
  return new Topology('query')
    .addTopic({ name: 'in', partitions: 3, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('in-source', 'in')
    .addProcessor('frontier', () => new Counter() as Processor, ['in-source']);
}

async function getJson(address: string, p: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://${address}${p}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test('a processor query runs on the task owning the key, through Engine.query and /status/site', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-query-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const engine = new EmbeddedEngine(counting(), { dataDir: dir, commitIntervalMs: 20 });
  t.after(() => engine.stop().catch(() => undefined));
  const ops = await startOpsServer({ engine, port: 0, host: '127.0.0.1' });
  t.after(() => ops.close());

  const before = engine.query({ processor: 'frontier', query: 'site', key: 'a.test' });
  assert.equal(before.kind, 'unavailable', 'an engine not started answers nothing');

  await engine.start();
  const sites = ['a.test', 'b.test', 'c.test', 'd.test', 'a.test', 'a.test', 'c.test'];
  await engine.produce(
    'in',
    sites.map((s) => ({ key: s, value: { site: s, sourceUrl: null, discoveredAt: 1, links: [] }, timestamp: 1 })),
  );
  while (!engine.isIdle()) await new Promise((r) => setTimeout(r, 10));

  for (const [site, seen] of [
    ['a.test', 3],
    ['b.test', 1],
    ['c.test', 2],
    ['e.test', 0],
  ] as const) {
    const partition = partitionFor(Buffer.from(site), 3);
    const answer = engine.query({ processor: 'frontier', query: 'site', key: site });
    assert.deepEqual(answer, {
      kind: 'answered',
      task: taskIdString({ subtopology: 0, partition }),
      partition,
      value: { partition, seen },
    });
  }
  assert.deepEqual(engine.query({ processor: 'frontier', query: 'nothing', key: 'a.test' }), {
    kind: 'unknown',
    reason: 'processor frontier has no query nothing',
  });
  assert.equal(engine.query({ processor: 'parser', query: 'site', key: 'a.test' }).kind, 'unknown');

  const site = await getJson(ops.address, '/status/site/A.test');
  assert.equal(site.status, 200);
  assert.equal(site.body['site'], 'a.test');
  assert.deepEqual(site.body['status'], { partition: partitionFor(Buffer.from('a.test'), 3), seen: 3 });
  assert.equal((await getJson(ops.address, '/status/site/not_a_domain')).status, 400);
  assert.equal((await getJson(ops.address, '/status/site/localhost')).status, 400);

  const status = await getJson(ops.address, '/status');
  assert.equal(status.status, 200);
  assert.equal(status.body['engine'], 'embedded');
  assert.deepEqual(
    (status.body['tasks'] as { task: string; state: string; processors: string[] }[]).map((t) => [
      t.task,
      t.state,
      t.processors.join(),
    ]),
    [
      ['0_0', 'running', 'frontier'],
      ['0_1', 'running', 'frontier'],
      ['0_2', 'running', 'frontier'],
    ],
  );
  const totals = status.body['totals'] as Record<string, unknown>;
  assert.equal(totals['recordsProcessed'], sites.length);
  assert.deepEqual(totals['tasksByState'], { running: 3 });

  await engine.stop();
  const after = engine.query({ processor: 'frontier', query: 'site', key: 'a.test' });
  assert.equal(after.kind, 'unavailable', 'a stopped engine answers nothing');
  assert.equal((await getJson(ops.address, '/status/site/a.test')).status, 503);
});

test('/status/site answers 421 naming the partition when another instance owns it, 503 while restoring', () => {
  const stub = (answer: QueryAnswer): Engine => ({ name: 'kafka', query: () => answer }) as unknown as Engine;
  const notOwned = siteStatusReply(stub({ kind: 'not-owned', partition: 3, partitions: 4, owned: [0, 1] }), 'Ex.COM');
  assert.equal(notOwned.status, 421);
  assert.deepEqual(notOwned.body, {
    engine: 'kafka',
    site: 'ex.com',
    owned: false,
    partition: 3,
    partitions: 4,
    ownedHere: [0, 1],
    error: 'partition 3 of ex.com is not owned by this instance; ask the instance that owns it',
  });
  const restoring = siteStatusReply(
    stub({ kind: 'unavailable', partition: 2, reason: 'task 1_2 is restoring' }),
    'ex.com',
  );
  assert.equal(restoring.status, 503);
  assert.equal((restoring.body as { error: string }).error, 'task 1_2 is restoring');
  assert.equal(siteStatusReply(stub({ kind: 'unknown', reason: 'no processor named frontier' }), 'ex.com').status, 404);
  assert.equal(siteStatusReply(stub({ kind: 'unknown', reason: 'x' }), 'http%3A%2F%2Fex.com').status, 400);
});
