import { test } from 'node:test';
import assert from 'node:assert/strict';
import { partitionFor } from '../../runtime/partitioner.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { CLI, removeDir, sh, sleep, tempDir, writeSeeds } from '../e2e/harness.js';
import {
  awaitPhases,
  checkAgainstLog,
  EXPECTED_PHASE,
  statusCli,
  statusSeeds,
  statusSites,
} from '../e2e/status-web.js';
import { kafkaInfra } from './infra.js';
import { launchInstance, type Instance } from './instances.js';
import { injectArgs, LOOPBACK_WEB_ARGS, runArgs } from './page-records.js';

const APP = 'status';
const PARTITIONS = 4;

interface TaskRow {
  task: string;
  partition: number;
  processors: string[];
  state: string;
}

/** The frontier partitions an instance's /status lists as running. */
async function frontierPartitions(ops: string): Promise<number[]> {
  const r = await statusCli(ops, undefined, ['--json']);
  if (r.code !== 0) return [];
  return (JSON.parse(r.stdout) as { tasks: TaskRow[] }).tasks
    .filter((t) => t.processors.includes('frontier') && t.state === 'running')
    .map((t) => t.partition);
}

test(
  'on Kafka crawlstream status shows a queued, a backed-off and a robots-parked site from the instance owning its partition; another instance names the partition',
  { timeout: 420_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    const web = await SyntheticWeb.start({ sites: statusSites() });
    const dir = tempDir('kafka-status');
    const instances: Instance[] = [];
    const began = Date.now();
    try {
      const created = await sh(process.execPath, [
        CLI,
        'topics',
        'create',
        '--brokers',
        brokers,
        '--partitions',
        String(PARTITIONS),
        '--app-id',
        APP,
      ]);
      assert.equal(created.code, 0, created.stderr);
      const seeds = writeSeeds(dir, statusSeeds(web));
      const injected = await sh(process.execPath, [
        CLI,
        ...injectArgs(seeds, brokers, registry, APP),
        '--partitions',
        String(PARTITIONS),
      ]);
      assert.equal(injected.code, 0, injected.stderr);
      const common = runArgs(
        'all',
        '',
        brokers,
        registry,
        [...LOOPBACK_WEB_ARGS, '--quiet', '--threads', '1'],
        APP,
      ).slice(5);
      const a = launchInstance(instances, dir, 'a', 'all', common, began);
      const b = launchInstance(instances, dir, 'b', 'all', common, began);
      const alive = () => instances.every((i) => i.child.exitCode === null);
      const addresses = async (): Promise<string[]> => {
        while (a.ops === undefined || b.ops === undefined) {
          assert.ok(alive(), 'an instance exited');
          await sleep(200);
        }
        return [a.ops, b.ops];
      };

      // the two members split the frontier's partitions between them
      const deadline = Date.now() + 180_000;
      let split: number[][] = [];
      for (;;) {
        assert.ok(alive(), 'an instance exited');
        split = await Promise.all((await addresses()).map(frontierPartitions));
        if (split[0]!.length > 0 && split[1]!.length > 0 && split[0]!.length + split[1]!.length === PARTITIONS) break;
        assert.ok(Date.now() < deadline, `the frontier partitions never split: ${JSON.stringify(split)}`);
        await sleep(1_000);
      }

      // each site's state from whichever instance owns it now
      const owner = async (site: string): Promise<string> => {
        for (const ops of await addresses()) {
          const res = await fetch(`http://${ops}/status/site/${site}`).catch(() => undefined);
          if (res?.status === 200) return ops;
        }
        return (await addresses())[0]!;
      };
      const statuses = await awaitPhases(owner, alive, 180_000);
      // a fetcher reports times on the frontier's clock as its lease clock sees it, the least
      // transit of a lease early (processors/fetcher/lease-clock.ts; its next lease starts that much
      // later, so the gap holds at the wire): on Kafka a lease's transit is a commit interval and a
      // fetch wait, so the plan may show up to about a second before the server's time
      checkAgainstLog(statuses, web.requests(), 1_500);

      for (const site of Object.keys(EXPECTED_PHASE)) {
        const partition = partitionFor(Buffer.from(site), PARTITIONS);
        const [opsA, opsB] = await addresses();
        const answers = await Promise.all([opsA!, opsB!].map((ops) => statusCli(ops, site, ['--json'])));
        const owners = answers.filter((r) => r.code === 0);
        const others = answers.filter((r) => r.code === 3);
        assert.equal(owners.length, 1, `${site}: ${JSON.stringify(answers)}`);
        assert.equal(others.length, 1, `${site}: ${JSON.stringify(answers)}`);
        assert.equal((JSON.parse(owners[0]!.stdout) as { partition: number }).partition, partition);
        const refusal = JSON.parse(others[0]!.stdout) as { owned: boolean; partition: number; ownedHere: number[] };
        assert.equal(refusal.owned, false);
        assert.equal(refusal.partition, partition, `${site} is in partition ${partition}`);
        assert.ok(!refusal.ownedHere.includes(partition));
        // the same refusal as a person reads it: one line naming the partition
        const other = [opsA!, opsB!][answers.indexOf(others[0]!)]!;
        const table = await statusCli(other, site);
        assert.equal(table.code, 3);
        assert.match(
          table.stderr,
          new RegExp(`partition ${partition} of ${site.replace('.', '\\.')} is not owned by this instance`),
        );
        // and the owner lists that frontier partition in its /status
        const ownerOps = [opsA!, opsB!][answers.indexOf(owners[0]!)]!;
        assert.ok((await frontierPartitions(ownerOps)).includes(partition));
      }
      const all = await statusCli((await addresses())[0]!);
      assert.equal(all.code, 0, all.stderr);
      assert.match(all.stdout, /^engine kafka {2}instance \S+ {2}state running/);
    } finally {
      for (const i of instances) i.child.kill('SIGTERM');
      await Promise.all(instances.map((i) => i.exited));
      await web.close();
      removeDir(dir);
    }
  },
);
