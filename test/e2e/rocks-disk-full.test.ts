import { test } from 'node:test';
import assert from 'node:assert/strict';
import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { readTopic } from '../../runtime/engines/embedded/topic-reader.js';
import { deadLetterTopicOf } from '../../runtime/dead-letter.js';
import { APPLICATION_ID } from '../../topology/application-id.js';
import {
  countByUrl,
  crawlArgs,
  exportPageRecords,
  finallyFetchedUrls,
  removeDir,
  sleep,
  startCli,
  tempDir,
  writeSeeds,
} from './harness.js';
import { fill, mountSmallDisk, unmount } from '../small-disk.js';

interface Health {
  status: string;
  live: boolean;
  ready: boolean;
  reason?: string;
}

/**
 * The embedded engine's RocksDB disk fills while the crawl runs: a commit's write fails (the
 * log's kept segments or its fsynced batch, or a task's stores applying a commit), which RocksDB
 * then refuses for good until the database is reopened. The task pauses instead of the engine stopping, and once space
 * returns every fetched page is recorded exactly once.
 */
for (const { which, sub } of [
  { which: "the embedded log's", sub: 'log' },
  { which: "the tasks' stores'", sub: 'state' },
]) {
  test(
    `${which} disk filling mid-crawl pauses it (live, not ready, a gauge says so) without stopping the engine, and once space returns every fetched page is recorded exactly once`,
    { timeout: 300_000, skip: process.getuid?.() !== 0 ? 'mounting a small filesystem needs root' : false },
    async (t) => {
      const web = await SyntheticWeb.start();
      const dir = tempDir(`rocks-full-${sub}`);
      const data = join(dir, 'data');
      // only this RocksDB's directory is small: the WARCs and the other database stay on the ordinary
      // disk. Smaller than a WAL's preallocated block (1.1 memtables), which would otherwise keep
      // taking writes for megabytes after the disk is full (a whole crawl writes about 1 MiB)
      const disk = join(data, sub);
      mountSmallDisk(disk, '4m');
      let started: ReturnType<typeof startCli> | undefined;
      t.after(async () => {
        // a failed assertion leaves the crawl running, and its open files keep the disk mounted
        if (started !== undefined && started.child.exitCode === null && started.child.signalCode === null) {
          started.child.kill('SIGKILL');
          await started.exited;
        }
        unmount(disk);
        await web.close();
        removeDir(dir);
      });
      const seeds = writeSeeds(dir, web.seedUrls());
      const crawl = startCli(
        crawlArgs(seeds, data, [
          '--fetch-timeout',
          '3000',
          '--metrics-port',
          '0',
          '--log-format',
          'json',
          '--stall-timeout',
          '10000',
        ]),
      );
      started = crawl;
      let stderr = '';
      let address: string | undefined;
      crawl.child.stderr!.on('data', (d: Buffer) => {
        stderr += d.toString();
        address ??= /"address":"([^"]+)"/.exec(stderr)?.[1];
      });
      let ended = false;
      void crawl.exited.then(() => (ended = true));

      // mid-crawl: the server has answered some pages, and there are more to fetch
      while (!ended && web.requests().length < 30) await sleep(20);
      assert.equal(ended, false, `the crawl ended before the disk was filled\n${stderr}`);
      const fillers: string[] = [];
      /** Fills the disk again: closing a database that failed may give back some of its space. */
      const topUp = () => {
        const filler = join(disk, `filler-${fillers.length}`);
        fill(filler);
        fillers.push(filler);
      };
      topUp();
      const filledAt = web.requests().length;

      let paused: Health | undefined;
      let gauge = false;
      while (!ended && (paused === undefined || !gauge)) {
        if (address !== undefined) {
          try {
            const health = (await (await fetch(`http://${address}/healthz`)).json()) as Health;
            if (health.reason?.startsWith('paused:')) paused = health;
            const metrics = await (await fetch(`http://${address}/metrics`)).text();
            gauge = /^crawlstream_tasks_paused\{reason="disk-full"\} [1-9]\d*$/m.test(metrics);
          } catch {
            // the process is gone: `ended` says so
          }
        }
        await sleep(100);
      }
      if (ended) stderr += `\nexited ${JSON.stringify(await crawl.exited.then((r) => [r.code, r.signal]))}`;
      assert.ok(paused, `/healthz never said paused; the crawl ended: ${ended}\n${stderr}`);
      assert.ok(gauge, 'crawlstream_tasks_paused{reason="disk-full"} never rose above 0');
      // the log's disk also holds its kept segments (records stored apart, pages among them): a
      // commit writes them before its RocksDB batch, so either may meet the full disk first
      assert.match(
        paused.reason!,
        sub === 'log'
          ? /RocksDB .*No space left on device|kept segments .*disk full/
          : /RocksDB .*No space left on device/,
      );
      assert.equal(paused.live, true, 'a paused engine must stay live: a restart frees no disk');
      assert.equal(paused.ready, false, 'a paused engine is not ready');

      // several retries while the disk stays full: still live, not ready, not exited
      const pausedAt = Date.now();
      while (Date.now() - pausedAt < 7_000) {
        const health = await fetch(`http://${address}/healthz`).catch(async (err: unknown) => {
          const r = await crawl.exited;
          assert.fail(`the crawl exited (${r.code}/${r.signal}) while paused: ${String(err)}\n${stderr}`);
        });
        const body = (await health.json()) as Health;
        assert.equal(health.status, 200, `/healthz failed while paused: ${JSON.stringify(body)}\n${stderr}`);
        assert.match(body.reason ?? '', /^paused: /, `no longer paused with the disk full: ${JSON.stringify(body)}`);
        assert.equal((await fetch(`http://${address}/readyz`)).status, 503, '/readyz answered 200 while paused');
        for (let i = 0; i < 5; i++) {
          topUp();
          await sleep(100);
        }
      }
      assert.equal(ended, false, `the crawl ended while its RocksDB disk was full\n${stderr}`);

      for (const filler of fillers) unlinkSync(filler);
      const run = await crawl.exited;
      assert.equal(run.code, 0, `crawl exited ${run.code}\n${stderr}`);
      t.diagnostic(`${filledAt} requests when the disk was filled, ${web.requests().length} in all`);

      const lines = stderr.split('\n').filter((l) => l.trim() !== '');
      // the log's pause names RocksDB or, when the kept segments met the full disk first, those
      const pauseLines = lines.filter((l) => / paused: (RocksDB .* failed at |kept segments in .* disk full)/.test(l));
      assert.ok(pauseLines.length > 0, `no line says what paused:\n${stderr}`);
      const who = pauseLines.map((l) => /"msg":"(.+?) paused: /.exec(l)?.[1]);
      assert.equal(new Set(who).size, who.length, `more than one pause line for one pause:\n${pauseLines.join('\n')}`);
      t.diagnostic(`paused: ${who.join(', ')}`);
      assert.ok(
        lines.some((l) => / resumed after \d+ s paused \(disk-full\)/.test(l)),
        `no line says the crawl resumed:\n${stderr}`,
      );

      let deadLetters = 0;
      await readTopic(data, deadLetterTopicOf(APPLICATION_ID), () => deadLetters++);
      assert.equal(deadLetters, 0, 'records were dead-lettered');

      const counts = countByUrl(exportPageRecords(data));
      assert.deepEqual(
        [...counts].filter(([, n]) => n !== 1),
        [],
        'a URL has more than one page record',
      );
      assert.deepEqual(
        new Set(counts.keys()),
        finallyFetchedUrls(web.requests(), web.port),
        'fetched pages and page records differ',
      );
      assert.ok(counts.size > 40, `only ${counts.size} pages recorded`);
    },
  );
}
