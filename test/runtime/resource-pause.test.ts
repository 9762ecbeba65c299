import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { M } from '../../core/metric-catalogue.js';
import { silentLogger } from '../../core/logger.js';
import { stringSerde } from '../../core/serde.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import { readTopic } from '../../runtime/engines/embedded/topic-reader.js';
import { deadLetterTopicOf } from '../../runtime/dead-letter.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import { fill, mountSmallDisk, unmount } from '../small-disk.js';

const APP = 'pause';
const root = process.getuid?.() === 0;

/**
 * Writes each word into a file of its own in `dir` (a new file needs a new page: a full tmpfs
 * refuses it) and forwards it; a full disk is CS_DISK_FULL, with the empty file removed.
 */
class WriteWord implements Processor<string, LinkBatch, string, LinkBatch> {
  private ctx!: ProcessorContext<string, LinkBatch>;
  constructor(private readonly dir: string) {}

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    const file = join(this.dir, record.key);
    const fd = openSync(file, 'w');
    try {
      writeSync(fd, Buffer.from(record.key));
    } catch (err) {
      unlinkSync(file);
      throw new CrawlError('CS_DISK_FULL', `disk full at ${this.dir}: ${String(err)}`);
    } finally {
      closeSync(fd);
    }
    this.ctx.forward(record);
  }
}

const topology = (dir: string) =>
  new Topology(APP)
    .addTopic({ name: 'words', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'written', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('append', () => new WriteWord(dir) as Processor, ['words-source'])
    .addSink('written-sink', 'written', 'append');

const word = (w: string): StreamRecord<string, LinkBatch> => ({
  key: w,
  value: { site: w, sourceUrl: null, discoveredAt: 1, links: [] },
  timestamp: 1_700_000_000_000,
});

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (!ok()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function keys(dataDir: string, topic: string): Promise<string[]> {
  const out: string[] = [];
  await readTopic(dataDir, topic, (r) => out.push(r.key));
  return out;
}

test(
  'a processor failing with CS_DISK_FULL pauses its task at that record, survives a restart while paused, and resumes once space returns: each record once, none dead-lettered',
  { timeout: 300_000, skip: root ? false : 'mounting a small filesystem needs root' },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'crawlstream-pause-'));
    const disk = join(dir, 'disk');
    const data = join(dir, 'data');
    mountSmallDisk(disk, '1m');
    let engine: EmbeddedEngine | undefined;
    t.after(async () => {
      await engine?.stop();
      unmount(disk);
      rmSync(dir, { recursive: true, force: true });
    });
    const filler = join(disk, 'filler');
    // a and b fit; then the disk is full for c, d and e
    const first = new EmbeddedEngine(topology(disk), { dataDir: data, commitIntervalMs: 20, logger: silentLogger });
    engine = first;
    await first.start();
    await first.produce('words', ['a', 'b'].map(word));
    await until('a and b are written', () => first.isIdle());
    fill(filler);
    await first.produce('words', ['c', 'd', 'e'].map(word));
    await until('the task pauses', () => first.health().reason?.startsWith('paused:') === true);
    const paused = first.health();
    assert.match(paused.reason!, /disk full at /);
    assert.equal(paused.live, true);
    assert.equal(paused.ready, false);
    assert.equal(paused.pending, undefined, 'a paused task is no stall: nothing is pending');
    assert.equal(first.metrics.gauge(M.tasksPaused), 1);
    // stopped while paused: c is not taken, so the next run starts at it
    await first.stop();

    const second = new EmbeddedEngine(topology(disk), { dataDir: data, commitIntervalMs: 20, logger: silentLogger });
    engine = second;
    await second.start();
    await until('the restarted task pauses at c', () => second.health().reason?.startsWith('paused:') === true);
    unlinkSync(filler);
    await until('the task resumes and catches up', () => second.isIdle());
    assert.equal(second.health().reason, undefined);
    assert.equal(second.health().ready, true);
    assert.equal(second.metrics.gauge(M.tasksPaused), 0);
    await second.stop();
    const words = readdirSync(disk).sort();
    assert.deepEqual(words, ['a', 'b', 'c', 'd', 'e']);
    for (const w of words) assert.equal(readFileSync(join(disk, w), 'utf8'), w);
    assert.deepEqual(await keys(data, 'written'), ['a', 'b', 'c', 'd', 'e']);
    assert.deepEqual(await keys(data, deadLetterTopicOf(APP)), []);
  },
);
