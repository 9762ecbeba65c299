import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isCrawlError } from '../../core/errors.js';
import { openRocks, type RocksPort } from '../../state/rocks.js';
import { corruptionsAtOpen, flushToSst, garbleSstMiddle } from './rocks-corruption.js';

const key = (i: number) => Buffer.from(`key-${String(i).padStart(6, '0')}`);

/** A closed RocksDB at `<tmp>/db` holding `count` keys of 100 bytes each, in an SST file. */
async function filledDb(count: number): Promise<{ tmp: string; dir: string }> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-rocks-corrupt-'));
  const dir = path.join(tmp, 'db');
  const db = await openRocks(dir);
  db.write(
    Array.from({ length: count }, (_, i) => ({ key: key(i), value: Buffer.alloc(100, i % 251) })),
    { sync: true },
  );
  await db.close();
  await flushToSst(dir);
  return { tmp, dir };
}

async function openFailure(dir: string): Promise<{ code: string; message: string }> {
  try {
    await (await openRocks(dir)).close();
  } catch (err) {
    assert.ok(isCrawlError(err), String(err));
    return { code: err.code, message: err.message };
  }
  return assert.fail('the RocksDB opened');
}

for (const [name, corrupt] of Object.entries(corruptionsAtOpen)) {
  test(`a RocksDB with ${name} fails to open with CS_STORE_CORRUPT, naming its path and RocksDB's words`, async () => {
    const { tmp, dir } = await filledDb(1000);
    try {
      corrupt(dir);
      const failure = await openFailure(dir);
      assert.equal(failure.code, 'CS_STORE_CORRUPT', failure.message);
      assert.ok(failure.message.startsWith(`cannot open RocksDB at ${dir}: its files are corrupt: `), failure.message);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
}

test('a RocksDB another owner holds fails to open with CS_STORE, not as corrupt', async () => {
  const { tmp, dir } = await filledDb(10);
  const held = await openRocks(dir);
  try {
    const failure = await openFailure(dir);
    assert.equal(failure.code, 'CS_STORE', failure.message);
  } finally {
    await held.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('a read of a garbled SST block throws CS_STORE_CORRUPT and tells onCorrupt once, with the path', async () => {
  const { tmp, dir } = await filledDb(20_000);
  garbleSstMiddle(dir);
  const told: string[] = [];
  let db: RocksPort | undefined;
  try {
    db = await openRocks(dir, undefined, undefined, (m) => told.push(m));
    for (let round = 0; round < 2; round++) {
      assert.throws(
        () => {
          for (const _ of db!.iterate(key(0), key(20_000))) void _;
        },
        (err: unknown) => isCrawlError(err) && err.code === 'CS_STORE_CORRUPT' && /Corruption:/.test(err.message),
      );
    }
    assert.equal(told.length, 1, told.join('\n'));
    assert.match(told[0]!, new RegExp(`^RocksDB read failed at ${dir}: Corruption: block checksum mismatch`));
  } finally {
    await db?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
