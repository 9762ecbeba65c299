import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, createWriteStream, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { deadLetterTopicOf } from '../../runtime/dead-letter.js';
import {
  CLI,
  countByUrl,
  finallyFetchedUrls,
  removeDir,
  sh,
  sleep,
  startCli,
  tempDir,
  writeSeeds,
} from '../e2e/harness.js';
import { fill, mountSmallDisk, unmount } from '../small-disk.js';
import { kafkaInfra } from './infra.js';
import { injectArgs, LOOPBACK_WEB_ARGS, pageRecordsOf, runArgs } from './page-records.js';

interface Health {
  status: string;
  live: boolean;
  ready: boolean;
  reason?: string;
}

/** A fresh application per run: its own topics, groups and transactional ids on a shared broker. */
const APP = `disk-full-${Date.now().toString(36)}`;

/**
 * The Kafka engine's task stores (`<data>/state`) are on a small disk that fills mid-crawl: a
 * task's RocksDB fails to apply a commit that Kafka already holds, and the stores cannot open
 * again while the disk stays full. The task pauses and is handed back instead of the process
 * stopping; once space returns its stores restore from the changelogs and the crawl completes.
 */
test(
  'a Kafka crawl whose task stores fill their disk mid-run pauses (live, not ready, a gauge says so) without stopping, and once space returns records every fetched page exactly once, politely, with no dead letter',
  { timeout: 600_000, skip: process.getuid?.() !== 0 ? 'mounting a small filesystem needs root' : false },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const web = await SyntheticWeb.start();
    const dir = tempDir('kafka-disk-full');
    const data = join(dir, 'data');
    // only the task stores are small: the WARCs and the cluster id stay on the ordinary disk. Smaller
    // than a WAL's preallocated block, which would otherwise keep taking writes after the disk is full
    const disk = join(data, 'state');
    mountSmallDisk(disk, '4m');
    let crawl: ReturnType<typeof startCli> | undefined;
    t.after(async () => {
      // a failed assertion leaves the crawl running, and its open files keep the disk mounted
      if (crawl !== undefined && crawl.child.exitCode === null && crawl.child.signalCode === null) {
        crawl.child.kill('SIGKILL');
        await crawl.exited;
      }
      unmount(disk);
      await web.close();
      removeDir(dir);
    });
    const created = await sh(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', APP]);
    assert.equal(created.code, 0, created.stderr);
    const seeds = writeSeeds(dir, web.seedUrls());
    const injected = await sh(process.execPath, [CLI, ...injectArgs(seeds, brokers, registry, APP)]);
    assert.equal(injected.code, 0, injected.stderr);

    crawl = startCli(
      runArgs(
        'all',
        data,
        brokers,
        registry,
        [...LOOPBACK_WEB_ARGS, '--fetch-timeout', '3000', '--session-timeout', '6000', '--log-format', 'json'],
        APP,
      ),
    );
    const started = crawl;
    const keep = process.env['CRAWLSTREAM_TEST_LOGS'];
    if (keep) started.child.stderr!.pipe(createWriteStream(join(keep, 'disk-full.log')));
    /** Where the test is, for a post-mortem of a run that times out (its diagnostics come at the end). */
    const note = (line: string): void => {
      if (keep) appendFileSync(join(keep, 'disk-full-test.log'), `${new Date().toISOString()} ${line}\n`);
    };
    let stderr = '';
    let address: string | undefined;
    started.child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      address ??= /"address":"([^"]+)"/.exec(stderr)?.[1];
    });
    let ended = false;
    void started.exited.then(() => (ended = true));
    /** How the crawl ended (call it only once it has: it waits for the exit). */
    const exitedHow = async (): Promise<string> => {
      const r = await started.exited;
      return `exited ${r.code}/${r.signal}\n${stderr.slice(-6000)}`;
    };

    // mid-crawl: every task runs, the server has answered some pages, and there are more to fetch
    const began = Date.now();
    const ready = async (): Promise<boolean> =>
      address !== undefined &&
      (await fetch(`http://${address}/readyz`).then(
        (r) => r.ok,
        () => false,
      ));
    while (!ended && (web.requests().length < 30 || !(await ready())) && Date.now() - began < 180_000) await sleep(100);
    if (ended) assert.fail(`the crawl ended before the disk was filled: ${await exitedHow()}`);
    assert.ok(web.requests().length >= 30, `the crawl did not start in 180 s\n${stderr.slice(-6000)}`);
    const fillers: string[] = [];
    /** Fills the disk again: a database that closes after a failure may give back some of its space. */
    const topUp = () => {
      const filler = join(disk, `filler-${fillers.length}`);
      fill(filler);
      fillers.push(filler);
    };
    topUp();
    const filledAt = web.requests().length;
    note(`filled at ${filledAt} requests`);

    let paused: Health | undefined;
    let gauge = false;
    while (!ended && (paused === undefined || !gauge)) {
      if (address !== undefined) {
        try {
          const health = (await (await fetch(`http://${address}/healthz`)).json()) as Health;
          if (health.reason?.startsWith('paused:')) paused = health;
          const metrics = await (await fetch(`http://${address}/metrics`)).text();
          gauge ||= /^crawlstream_tasks_paused\{reason="disk-full"\} [1-9]\d*$/m.test(metrics);
        } catch {
          // the process is gone: `ended` says so
        }
      }
      topUp();
      await sleep(100);
    }
    note(`paused: ${JSON.stringify(paused)}, gauge ${gauge}, ended ${ended}`);
    if (ended) assert.fail(`the crawl exited with its task stores' disk full: ${await exitedHow()}`);
    assert.ok(paused, `/healthz never said paused\n${stderr.slice(-6000)}`);
    assert.ok(gauge, 'crawlstream_tasks_paused{reason="disk-full"} never rose above 0');
    assert.match(paused.reason!, /No space left on device|disk full/);
    assert.equal(paused.live, true, 'a paused engine must stay live: a restart frees no disk');
    assert.equal(paused.ready, false, 'a paused engine is not ready');

    // several retries (and rejoins) while the disk stays full: still up
    const pausedAt = Date.now();
    while (Date.now() - pausedAt < 10_000) {
      const health = await fetch(`http://${address}/healthz`).catch(async (err: unknown) =>
        assert.fail(`the crawl exited while paused (${String(err)}): ${await exitedHow()}`),
      );
      assert.equal(health.status, 200, `/healthz failed while paused: ${await health.text()}`);
      for (let i = 0; i < 5; i++) {
        topUp();
        await sleep(100);
      }
    }
    if (ended) assert.fail(`the crawl ended while its task stores' disk was full: ${await exitedHow()}`);

    for (const filler of fillers) unlinkSync(filler);
    const freedAt = web.requests().length;
    note(`freed at ${freedAt} requests`);
    // done when the web has seen no request for 20 s (the slowest politeness wait of the test web is 2 s)
    let last = -1;
    let quietSince = Date.now();
    while (!ended && Date.now() - quietSince < 20_000 && Date.now() - began < 480_000) {
      await sleep(1000);
      const n = web.requests().length;
      if (n !== last) [last, quietSince] = [n, Date.now()];
    }
    if (ended) assert.fail(`the crawl exited after space returned: ${await exitedHow()}`);
    note(`quiet at ${web.requests().length} requests`);
    const health = (await (await fetch(`http://${address}/healthz`)).json()) as Health;
    assert.equal(health.reason?.startsWith('paused:') ?? false, false, `still paused: ${JSON.stringify(health)}`);
    started.child.kill('SIGTERM');
    const run = await started.exited;
    note(`exited ${run.code}/${run.signal}`);
    assert.equal(run.code, 0, `crawl exited ${run.code}/${run.signal}\n${stderr.slice(-6000)}`);
    t.diagnostic(
      `${filledAt} requests when the disk was filled, ${freedAt} when it was freed, ${web.requests().length} in all`,
    );

    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    const pauseLines = lines.filter((l) => /"msg":"task \d+_\d+ paused: /.test(l));
    assert.ok(pauseLines.length > 0, `no line says what paused:\n${stderr.slice(-6000)}`);
    const who = pauseLines.map((l) => /"msg":"(.+?) paused: /.exec(l)?.[1]);
    t.diagnostic(`paused: ${who.join(', ')}`);
    // filled while every task ran: a commit that Kafka holds failed to apply to a task's stores
    assert.ok(
      pauseLines.some((l) => / paused: RocksDB write failed at /.test(l)),
      `no task paused applying a commit:\n${pauseLines.join('\n')}`,
    );
    assert.ok(
      lines.some((l) => /task \d+_\d+ resumed after \d+ s paused \(disk-full\)/.test(l)),
      `no line says a task resumed:\n${stderr.slice(-6000)}`,
    );

    // no dead letter was ever written, committed or aborted
    const port = new KafkaPort([brokers], 'crawlstream-test');
    const admin = await port.admin();
    const letters = await admin
      .endOffsets(deadLetterTopicOf(APP))
      .finally(() => admin.close().then(() => port.close()));
    assert.deepEqual(
      [...letters.values()].filter((n) => n > 0),
      [],
      'records were dead-lettered',
    );

    const report = checkPoliteness(web.requests(), web.sites, { userAgent: 'crawlstream' });
    assert.deepEqual(report.violations, [], formatPolitenessReport(report));

    // a consumer we did not write: confluent-kafka (read_committed) + fastavro through the registry
    const counts = countByUrl(await pageRecordsOf(brokers, registry, `${APP}.page-records`));
    assert.deepEqual(
      [...counts].filter(([, n]) => n !== 1),
      [],
      'a URL has more than one committed page record',
    );
    assert.deepEqual(
      new Set(counts.keys()),
      finallyFetchedUrls(web.requests(), web.port),
      'fetched pages and committed page records differ',
    );
    assert.ok(counts.size > 40, `only ${counts.size} pages recorded`);
  },
);
