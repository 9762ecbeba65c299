import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../core/logger.js';
import { stringSerde } from '../../core/serde.js';
import type { EngineHealth } from '../../runtime/engine.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { readTopic } from '../../runtime/engines/embedded/topic-reader.js';
import { startOpsServer } from '../../runtime/ops-server.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { openRocks } from '../../state/rocks.js';
import { RocksKeyValueStore } from '../../state/rocks-store.js';
import { keyOn, oneSerde, POISONED, quarantineTopology, STORE, word } from './quarantine-topology.js';

async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`${what} did not happen within 60 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

for (const failIn of ['punctuator', 'init'] as const) {
  test(`a task whose ${failIn} throws is quarantined alone on the embedded engine: the other partitions go on, /healthz stays 200 and names it, nothing of it is committed`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-quarantine-'));
    try {
      const engine = new EmbeddedEngine(quarantineTopology(failIn, 'quarantine'), {
        dataDir: dir,
        commitIntervalMs: 20,
        logger: silentLogger,
      });
      await engine.start();
      const ops = await startOpsServer({ engine, port: 0, host: '127.0.0.1' });
      try {
        await until('a quarantine', () => (engine.health().quarantined?.length ?? 0) > 0);
        await engine.produce(
          'words',
          [0, 1, 2, 3].map((p) => word(keyOn(p))),
        );
        await until('idle', () => engine.isIdle());

        const health = engine.health();
        assert.equal(health.live, true);
        assert.equal(health.state, 'running');
        assert.deepEqual(
          health.quarantined?.map((q) => ({ task: q.task, partition: q.partition, during: q.during, code: q.code })),
          [{ task: `0_${POISONED}`, partition: POISONED, during: failIn, code: 'CS_STORE' }],
        );
        assert.deepEqual(
          engine.taskStatus().map((t) => [t.task, t.state]),
          [
            ['0_0', 'running'],
            ['0_1', 'quarantined'],
            ['0_2', 'running'],
            ['0_3', 'running'],
          ],
        );
        const healthz = await fetch(`http://${ops.address}/healthz`);
        assert.equal(healthz.status, 200);
        const body = (await healthz.json()) as EngineHealth & { warnings?: string[] };
        assert.ok(
          body.warnings?.some((w) => w.startsWith(`task 0_${POISONED} quarantined: its ${failIn} threw CS_STORE`)),
          JSON.stringify(body),
        );
        const metrics = await (await fetch(`http://${ops.address}/metrics`)).text();
        assert.match(metrics, /^crawlstream_tasks_quarantined 1$/m);
      } finally {
        await ops.close();
        await engine.stop();
      }
      await engine.done;

      const forwarded: string[] = [];
      await readTopic(dir, 'marked', (r) => forwarded.push(r.key));
      assert.deepEqual(
        forwarded.sort(),
        [keyOn(0), keyOn(2), keyOn(3)].sort(),
        'the quarantined partition processed nothing',
      );
      const db = await openRocks(new TaskDirectory(dir).task({ subtopology: 0, partition: POISONED }).live);
      try {
        const store = new RocksKeyValueStore(STORE, db, stringSerde, oneSerde);
        assert.deepEqual([...store.entries()], [], 'the punctuator’s write before it threw was not committed');
      } finally {
        await db.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
