import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KafkaChangelogSource } from '../../runtime/engines/kafka/kafka-changelog-source.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { CLI, removeDir, sleep, startCli, tempDir } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { LOOPBACK_WEB_ARGS, runArgs } from './page-records.js';

const run = promisify(execFile);

test(
  "a Kafka changelog's tombstone retention is its topic's delete.retention.ms, Kafka's one day when not set",
  { timeout: 120_000 },
  async () => {
    const { brokers } = kafkaInfra();
    const id = randomUUID().slice(0, 8);
    // not named *-changelog: topics.test reads every changelog on the shared broker as the default app's
    const set = `tombstone-retention-set-${id}`;
    const unset = `tombstone-retention-unset-${id}`;
    const port = new KafkaPort([brokers], `tombstone-retention-${id}`);
    const admin = await port.admin();
    try {
      await admin.createTopics([
        { name: set, partitions: 1, config: { 'cleanup.policy': 'compact', 'delete.retention.ms': '1234' } },
        { name: unset, partitions: 1, config: { 'cleanup.policy': 'compact' } },
      ]);
      const source = new KafkaChangelogSource(port, admin, false);
      assert.equal(await source.tombstoneRetentionMs(set), 1234);
      assert.equal(await source.tombstoneRetentionMs(unset), 86_400_000);
    } finally {
      await admin.close();
      await port.close();
    }
  },
);

test(
  'run removes a task directory no partition of it uses once --state-cleanup-delay has passed, and keeps its own',
  { timeout: 300_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    const appId = `cleanup-${Date.now().toString(36)}`;
    const dir = tempDir('kafka-state-cleanup');
    const data = join(dir, 'data');
    try {
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', appId]);
      // a task this topology has no longer (an upgrade renumbered it), unused for an hour
      const gone = new TaskDirectory(data).task({ subtopology: 9, partition: 9 });
      mkdirSync(gone.live, { recursive: true });
      writeFileSync(join(gone.live, 'CURRENT'), 'x');
      const then = new Date(Date.now() - 3_600_000);
      for (const path of [join(gone.live, 'CURRENT'), gone.live, gone.path]) utimesSync(path, then, then);
      const instance = startCli(
        runArgs('all', data, brokers, registry, [...LOOPBACK_WEB_ARGS, '--state-cleanup-delay', '0'], appId),
      );
      let stderr = '';
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      try {
        const until = Date.now() + 120_000;
        while (
          Date.now() < until &&
          instance.child.exitCode === null &&
          !/removed the local state of task 9_9/.test(stderr)
        )
          await sleep(200);
        // its own tasks run meanwhile: their directories stay however short the delay
        await sleep(2_500);
        instance.child.kill('SIGTERM');
        assert.equal((await instance.exited).code, 0, stderr.slice(-4000));
      } finally {
        instance.child.kill('SIGKILL');
      }
      assert.match(stderr, /removed the local state of task 9_9: not assigned to this member for over 0 ms/);
      assert.equal(existsSync(gone.path), false);
      const left = readdirSync(new TaskDirectory(data).root);
      assert.ok(left.length > 0 && left.every((name) => /^[0-9]_\d+$/.test(name) && name !== '9_9'), left.join(' '));
      assert.doesNotMatch(stderr, /removed the local state of task [0-8]_/);
    } finally {
      removeDir(dir);
    }
  },
);
