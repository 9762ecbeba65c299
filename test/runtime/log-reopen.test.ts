import { test } from 'node:test';
import assert from 'node:assert/strict';
import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { isCrawlError } from '../../core/errors.js';
import { EmbeddedLog } from '../../runtime/engines/embedded/log-store.js';
import { fill, tempSmallDisk } from '../small-disk.js';

const append = (key: string, bytes = 16) => [
  { topic: 't', partition: 0, records: [{ key: Buffer.from(key), value: Buffer.alloc(bytes, 0x61), timestamp: 1 }] },
];
const position = (offset: number) => [{ group: 'g', topic: 't', partition: 0, offset }];
const isDiskFull = (err: unknown) => isCrawlError(err) && err.code === 'CS_DISK_FULL';

test(
  'a log whose commit failed on a full disk refuses writes until it is reopened; reopened once space returns, it holds every commit that succeeded and none of the failed one, and the same commit then succeeds',
  { timeout: 60_000, skip: process.getuid?.() === 0 ? false : 'mounting a small filesystem needs root' },
  async (t) => {
    let log: EmbeddedLog | undefined;
    // smaller than a WAL's preallocated block, so the WAL cannot hold space in reserve
    const dir = tempSmallDisk(t, 'crawlstream-log-reopen-', '4m', () => log?.close());
    log = await EmbeddedLog.open(join(dir, 'log'));
    log.ensureTopic('t', 1);
    log.commit(append('a'), position(1));
    const filler = join(dir, 'filler');
    fill(filler);
    assert.throws(() => log!.commit(append('b', 64 * 1024), position(2)), isDiskFull);
    assert.equal(log.endOffset('t', 0), 1, 'a failed commit moved the end');
    unlinkSync(filler);
    // space is back, but the database that failed still refuses writes: the binding has no resume
    assert.throws(() => log!.commit(append('b', 64 * 1024), position(2)), isDiskFull);

    // full again: the reopen fails, and can be tried again
    fill(filler);
    await assert.rejects(log.reopen(), isDiskFull);
    unlinkSync(filler);
    await log.reopen();
    assert.deepEqual(
      log.read('t', 0, 0, 10).map((r) => r.key.toString()),
      ['a'],
    );
    assert.equal(log.committedPosition('g', 't', 0), 1);
    log.commit(append('b', 64 * 1024), position(2));
    await log.close();
    log = await EmbeddedLog.open(join(dir, 'log'));
    log.ensureTopic('t', 1);
    assert.deepEqual(
      log.read('t', 0, 0, 10).map((r) => `${r.offset}:${r.key.toString()}`),
      ['0:a', '1:b'],
    );
    assert.equal(log.committedPosition('g', 't', 0), 2);
  },
);
