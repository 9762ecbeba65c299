import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readdirSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { readTopic } from '../../runtime/engines/embedded/topic-reader.js';
import { deadLetterTopicOf } from '../../runtime/dead-letter.js';
import { APPLICATION_ID } from '../../topology/application-id.js';
import { isDefect, readWarcFile } from '../../processors/parser/warc-reader.js';
import {
  countByUrl,
  crawlArgs,
  exportPageRecords,
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

test(
  'a full WARC disk pauses the parser (live, not ready, a gauge says so), nothing is dead-lettered, and once space returns every page is archived and recorded once',
  { timeout: 300_000, skip: process.getuid?.() !== 0 ? 'mounting a small filesystem needs root' : false },
  async (t) => {
    const web = await SyntheticWeb.start();
    const dir = tempDir('disk-full');
    const data = join(dir, 'data');
    const warcDir = join(data, 'warc');
    // the WARC disk alone is small: state and topics stay on the ordinary disk
    mountSmallDisk(warcDir, '20m');
    t.after(async () => {
      unmount(warcDir);
      await web.close();
      removeDir(dir);
    });
    const filler = join(warcDir, 'filler');
    fill(filler);

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
    let stderr = '';
    let address: string | undefined;
    crawl.child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      address ??= /"address":"([^"]+)"/.exec(stderr)?.[1];
    });
    let ended = false;
    void crawl.exited.then(() => (ended = true));

    // the pause shows in /healthz and in the gauge
    let paused: Health | undefined;
    let gauge = false;
    while (!ended && (paused === undefined || !gauge)) {
      if (address !== undefined) {
        const health = (await (await fetch(`http://${address}/healthz`)).json()) as Health;
        if (health.reason?.startsWith('paused:')) paused = health;
        const metrics = await (await fetch(`http://${address}/metrics`)).text();
        gauge = /^crawlstream_tasks_paused\{reason="disk-full"\} [1-9]\d*$/m.test(metrics);
      }
      await sleep(200);
    }
    assert.ok(paused, `/healthz never said paused; the crawl ended: ${ended}\n${stderr}`);
    assert.ok(gauge, 'crawlstream_tasks_paused{reason="disk-full"} never rose above 0');
    assert.match(paused.reason!, new RegExp(`disk full at ${warcDir}`));
    assert.equal(paused.live, true, 'a paused engine must stay live: a restart frees no disk');
    assert.equal(paused.ready, false, 'a paused engine is not ready');

    // past --stall-timeout the pause is still no stall: /healthz stays 200, /readyz 503
    const pausedAt = Date.now();
    while (Date.now() - pausedAt < 12_000) {
      const health = await fetch(`http://${address}/healthz`);
      const body = (await health.json()) as Health;
      assert.equal(health.status, 200, `/healthz failed while paused: ${JSON.stringify(body)}`);
      assert.equal((await fetch(`http://${address}/readyz`)).status, 503, '/readyz answered 200 while paused');
      await sleep(500);
    }
    assert.equal(ended, false, 'the crawl ended while its WARC disk was full');

    unlinkSync(filler);
    const run = await crawl.exited;
    assert.equal(run.code, 0, `crawl exited ${run.code}\n${stderr}`);

    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    const pauseLines = lines.filter((l) => / paused: disk full at /.test(l));
    const tasks = new Set(pauseLines.map((l) => /task (\S+) paused/.exec(l)?.[1]));
    assert.equal(pauseLines.length, tasks.size, `more than one pause line per task:\n${pauseLines.join('\n')}`);
    assert.ok(
      lines.some((l) => / resumed after \d+ s paused \(disk-full\)/.test(l)),
      `no line says a task resumed:\n${stderr}`,
    );

    let deadLetters = 0;
    await readTopic(data, deadLetterTopicOf(APPLICATION_ID), () => deadLetters++);
    assert.equal(deadLetters, 0, 'records were dead-lettered');

    const records = exportPageRecords(data);
    assert.ok(records.length > 20, `${records.length} page records`);
    assert.deepEqual(
      [...countByUrl(records)].filter(([, n]) => n !== 1),
      [],
      'a URL has more than one page record',
    );
    // each fetch is archived once: a retried record would repeat its fetch's URI and WARC-Date
    const fetches = new Map<string, number>();
    const at = new Map<string, string>();
    const files = readdirSync(warcDir).filter((f) => f.endsWith('.warc.gz'));
    for (const f of files)
      for (const r of readWarcFile(join(warcDir, f))) {
        assert.ok(!isDefect(r), `${f}: ${JSON.stringify(r)}`);
        if (r.type !== 'response' && r.type !== 'revisit' && r.type !== 'metadata') continue;
        const uri = r.fields.get('warc-target-uri')!;
        at.set(`${f}@${r.offset}`, uri);
        if (r.type === 'metadata' && r.fields.has('warc-concurrent-to')) continue;
        const key = `${uri} ${r.fields.get('warc-date')}`;
        fetches.set(key, (fetches.get(key) ?? 0) + 1);
      }
    assert.deepEqual(
      [...fetches].filter(([, n]) => n !== 1),
      [],
      'a fetch is archived more than once',
    );
    const archived = records.filter((r) => r.warcFile !== null);
    assert.ok(archived.length > 20, `${archived.length} archived page records`);
    for (const r of archived)
      assert.equal(at.get(`${r.warcFile}@${r.warcOffset}`), r.url, `${r.url}: no record at its WARC location`);
  },
);

test(
  'a crawl started on a full data disk waits, live and paused, instead of failing, and crawls once space is freed',
  { timeout: 300_000, skip: process.getuid?.() !== 0 ? 'mounting a small filesystem needs root' : false },
  async (t) => {
    const web = await SyntheticWeb.start();
    const dir = tempDir('state-disk-full');
    const data = join(dir, 'data');
    mountSmallDisk(data, '64m');
    t.after(async () => {
      unmount(data);
      await web.close();
      removeDir(dir);
    });
    const filler = join(data, 'filler');
    fill(filler);
    const seeds = writeSeeds(dir, web.seedUrls());
    const crawl = startCli(crawlArgs(seeds, data, ['--metrics-port', '0', '--log-format', 'json']));
    let stderr = '';
    let address: string | undefined;
    crawl.child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      address ??= /"address":"([^"]+)"/.exec(stderr)?.[1];
    });
    let ended = false;
    void crawl.exited.then(() => (ended = true));
    let paused: { status: number; body: Health } | undefined;
    while (!ended && paused === undefined) {
      if (address !== undefined) {
        const res = await fetch(`http://${address}/healthz`);
        const body = (await res.json()) as Health;
        if (body.reason?.startsWith('paused:')) paused = { status: res.status, body };
      }
      await sleep(200);
    }
    assert.ok(paused, `/healthz never said paused; the crawl ended: ${ended}\n${stderr}`);
    assert.equal(paused.status, 200, 'waiting for space, the instance must stay live');
    assert.match(paused.body.reason!, /disk full/);
    assert.equal(paused.body.ready, false);

    unlinkSync(filler);
    const run = await crawl.exited;
    assert.equal(run.code, 0, `crawl exited ${run.code}\n${stderr}`);
    assert.ok(exportPageRecords(data).length > 20, 'the crawl recorded too few pages');
  },
);

// keeps the helpers of this file honest: a mount point left behind would fill /tmp with dirs
test('fill leaves a small filesystem without room for one byte', { skip: process.getuid?.() !== 0 }, (t) => {
  const dir = mkdtempSync('/tmp/crawlstream-fill-');
  mountSmallDisk(dir, '1m');
  t.after(() => {
    unmount(dir);
    rmdirSync(dir);
  });
  fill(join(dir, 'filler'));
  const fd = openSync(join(dir, 'more'), 'w');
  try {
    assert.throws(() => writeSync(fd, Buffer.from('x')), /ENOSPC/);
  } finally {
    closeSync(fd);
  }
});
