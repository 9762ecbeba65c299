import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { partitionFor } from '../../runtime/partitioner.js';
import { dumpStore } from '../../runtime/replay/dump.js';
import { TaskDirectory } from '../../runtime/task-directory.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { crawlTopology } from '../../topology/crawl-topology.js';
import { CLI, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { LOOPBACK_WEB_ARGS, runArgs } from './page-records.js';

const run = promisify(execFile);
const PAGES = ['/', '/a.html', '/b.html', '/c.html'];

test(
  "a frontier partition's state dir deleted after a Kafka crawl is rebuilt from its changelogs (read committed) equal entry for entry",
  { timeout: 180_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    // a host and page texts of its own: the changelogs may hold earlier runs' state, and a page whose
    // text was seen before is a copy whose links are not followed
    const site = `rebuild-${randomUUID().slice(0, 8)}.test`;
    const web = await SyntheticWeb.start({
      sites: [
        {
          host: site,
          seed: true,
          pages: {
            '/': { title: `Home ${site}`, links: ['/a.html', '/b.html'] },
            '/a.html': { title: `A ${site}`, links: ['/c.html'] },
            '/b.html': { title: `B ${site}`, links: ['/'] },
            '/c.html': { title: `C ${site}` },
          },
        },
      ],
    });
    const dir = tempDir('kafka-replay-rebuild');
    const data = join(dir, 'all');
    const topology = crawlTopology({ config: validateCrawlConfig({}), partitions: 4, warcDir: join(data, 'warc') });
    const subs = topology.build();
    const frontier = subs.find((s) => s.stores.some((b) => b.name === 'frontier-hosts'))!;
    const partition = partitionFor(Buffer.from(site), 4);
    let instance: ReturnType<typeof startCli> | undefined;
    let stderr = '';
    try {
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers]);
      const seeds = writeSeeds(dir, web.seedUrls());
      await run(process.execPath, [CLI, 'inject', '--seeds', seeds, '--brokers', brokers, '--registry', registry]);
      instance = startCli(runArgs('all', data, brokers, registry, [...LOOPBACK_WEB_ARGS, '--quiet']));
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const until = Date.now() + 90_000;
      const fetched = () => new Set(web.requests().map((e) => e.path));
      while (Date.now() < until && instance.child.exitCode === null && !PAGES.every((p) => fetched().has(p)))
        await sleep(500);
      assert.deepEqual(
        PAGES.filter((p) => !fetched().has(p)),
        [],
        `not fetched; the instance said:\n${stderr.slice(-4000)}`,
      );
      // a commit interval or two, so the last fetch's frontier writes are in the changelogs too
      await sleep(2_000);
      instance.child.kill('SIGTERM');
      const ended = await instance.exited;
      assert.equal(ended.code, 0, stderr.slice(-4000));

      /** Every changelogged store of every sub-topology at `partition`: store → entries, and the checkpoint line. */
      const dumps = async (): Promise<Map<string, { entries: string; checkpoint: string }>> => {
        const out = new Map<string, { entries: string; checkpoint: string }>();
        for (const sub of subs)
          for (const b of sub.stores.filter((s) => s.changelog)) {
            const lines: string[] = [];
            await dumpStore(topology, data, b.name, { partition }, (l) => lines.push(l));
            out.set(b.name, {
              entries: lines.filter((l) => !l.startsWith('checkpoint ')).join('\n'),
              checkpoint: lines.find((l) => l.startsWith('checkpoint '))!,
            });
          }
        return out;
      };
      const before = await dumps();
      assert.ok(
        before.get('frontier-hosts')!.entries.includes(Buffer.from(site).toString('hex')),
        `frontier-hosts partition ${partition} has no entry for ${site}`,
      );

      /** `replay SUB` of every store of `partition` on Kafka, as a user types it. */
      const replay = (sub: string) =>
        run(process.execPath, [
          CLI,
          'replay',
          sub,
          '--store',
          'all',
          '--partition',
          String(partition),
          '--brokers',
          brokers,
          '--data',
          data,
        ]);
      rmSync(new TaskDirectory(data).task({ subtopology: frontier.id, partition }).path, { recursive: true });
      const rebuilt = await replay('rebuild');
      t.diagnostic(
        rebuilt.stdout.split('\n').filter((l) => l.startsWith('rebuilt ')).length + ' store partitions rebuilt',
      );
      assert.match(rebuilt.stdout, new RegExp(`rebuilt\\s+frontier-hosts partition ${partition}: \\d+ records read`));

      const after = await dumps();
      for (const [store, b] of before) {
        assert.equal(after.get(store)!.entries, b.entries, `the entries of ${store} partition ${partition} differ`);
        // Kafka: the live copy's checkpoint is the offset after its last record (base + count at
        // commit), and so is the rebuild's, though the end offset (last stable offset) is one
        // further, past the commit marker. A copy could differ only if the changelog ended in
        // records no live copy applied (a stale copy: another instance wrote later; docs/REPLAY.md)
        assert.equal(after.get(store)!.checkpoint, b.checkpoint, `the checkpoint of ${store} partition ${partition}`);
      }

      const verified = await replay('verify');
      const lines = verified.stdout.trim().split('\n');
      assert.equal(lines.length, before.size, verified.stdout);
      for (const line of lines) assert.match(line, /^ok\s+.*\(current\)$/);
    } finally {
      instance?.child.kill('SIGKILL');
      await web.close();
      removeDir(dir);
    }
  },
);
