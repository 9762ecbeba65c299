import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRocks, type RocksWrite } from '../state/rocks.js';
import { EmbeddedLog } from '../runtime/engines/embedded/log-store.js';
import { figure, machineLine } from './machine.js';

// RocksPort and the embedded log: the two layers every commit of the embedded engine goes through.
const N = 200_000;
const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-store-'));
console.log(machineLine());
try {
  const db = await openRocks(join(dir, 'kv'));
  const key = (i: number) => Buffer.from(`k${String(i).padStart(10, '0')}`);
  const value = Buffer.alloc(100, 7);
  let t = performance.now();
  for (let i = 0; i < N; i += 1000) {
    const batch: RocksWrite[] = [];
    for (let j = i; j < i + 1000; j++) batch.push({ key: key(j), value });
    db.write(batch);
  }
  figure('rocks batched put (1000/batch, 100 B)', N / ((performance.now() - t) / 1000), 'puts/s');
  t = performance.now();
  for (let i = 0; i < N; i++) db.get(key((i * 7919) % N));
  figure('rocks synchronous random get', N / ((performance.now() - t) / 1000), 'gets/s');
  t = performance.now();
  for (let i = 0; i < N; i += 1000) db.getMany(Array.from({ length: 1000 }, (_, j) => key(((i + j) * 7919) % N)));
  figure('rocks getMany (1000 keys) random', N / ((performance.now() - t) / 1000), 'gets/s');
  await db.close();

  const log = await EmbeddedLog.open(join(dir, 'log'));
  log.ensureTopic('t', 4);
  const records = Array.from({ length: 250 }, (_, i) => ({
    key: Buffer.from(`site${i}`),
    value: Buffer.alloc(200, 1),
    timestamp: Date.now(),
  }));
  const commits = 400;
  t = performance.now();
  for (let c = 0; c < commits; c++) {
    log.commit(
      [0, 1, 2, 3].map((p) => ({ topic: 't', partition: p, records })),
      [{ group: 'g', topic: 't', partition: 0, offset: c }],
    );
  }
  const s = (performance.now() - t) / 1000;
  figure('embedded commit (1000 records of 200 B + positions, fsynced)', commits / s, 'commits/s');
  figure('embedded commit throughput', (commits * 1000) / s, 'records/s');
  t = performance.now();
  let read = 0;
  for (let p = 0; p < 4; p++) for (let o = 0; o < commits * 250; o += 500) read += log.read('t', p, o, 500).length;
  figure('embedded log read', read / ((performance.now() - t) / 1000), 'records/s');
  await log.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
