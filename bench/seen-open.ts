import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openRocks } from '../state/rocks.js';
import { RocksKeyValueStore } from '../state/rocks-store.js';
import { bufferSerde } from '../core/serde.js';
import { SeenSet } from '../state/seen-set.js';
import { figure, machineLine } from './machine.js';

// Opening one partition's seen-set over a RocksDB that already holds N fingerprints (written by
// `build`, through SeenSet.admit with the default exact-layer pacing, so runs and blocks are as a
// crawl leaves them):
//   node dist/bench/seen-open.js build <dir> <millions>   extends the store to N M fingerprints
//   node dist/bench/seen-open.js open <dir>               init(), warming, admits while and after
// `open` runs on code with or without `warm()` (pairing with the code before it): there init()
// is the whole load. Where the seen-set has `runsRead`, the runs are read first as the frontier
// reads them for a link batch that comes before they are (20 ms slices, a turn of the event loop
// between); SEEN_OPEN_RUNS=force has the first check read them at once instead.
const BATCH = 1_000;
const P = 0.01;
const EXPECTED = 1_000_000;

/** The i-th fingerprint: distinct for i < 2^32 (the finalizer of murmur3 is a bijection). */
function fingerprint(i: number, out: Buffer, at: number): void {
  out.writeUInt32BE(mix(i), at);
  out.writeUInt32BE(mix(i ^ 0x5bd1e995), at + 4);
}

function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A batch of BATCH fingerprints: `seenShare` of them stored ids in [0, stored), the rest from `fresh` on. */
function batch(stored: number, fresh: number, seenShare: number, salt: number): Buffer[] {
  const out: Buffer[] = [];
  for (let j = 0; j < BATCH; j++) {
    const b = Buffer.allocUnsafe(8);
    const seen = j < BATCH * seenShare;
    fingerprint(seen ? mix(salt * BATCH + j) % stored : fresh + j, b, 0);
    out.push(b);
  }
  return out;
}

const ms = () => performance.now();

const [mode, dir, millions] = process.argv.slice(2);
if ((mode !== 'build' && mode !== 'open') || dir === undefined) {
  console.error('usage: seen-open.js build <dir> <millions> | open <dir>');
  process.exit(2);
}
console.log(machineLine());
if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
const db = await openRocks(join(dir, 'db'));
const store = new RocksKeyValueStore<Buffer, Buffer>('frontier-seen', db, bufferSerde, bufferSerde);
let offset = Number(store.get(Buffer.from('bench-offset'))?.readBigUInt64BE(0) ?? 0n);
const commit = () => {
  const o = Buffer.alloc(8);
  o.writeBigUInt64BE(BigInt(++offset));
  store.put(Buffer.from('bench-offset'), o);
  store.applyCommitted(offset);
};
const seen = new SeenSet(store, { expectedCount: EXPECTED, falsePositiveRate: P });
const t0 = ms();
seen.init();
const initMs = ms() - t0;
const count = seen.stats().count;
const warmable = seen as SeenSet & { warm?: (budgetMs: number) => boolean; runsRead?: boolean };
const sliced = warmable.runsRead !== undefined && process.env.SEEN_OPEN_RUNS !== 'force';

if (mode === 'build') {
  warmable.warm?.(Infinity);
  const target = Number(millions) * 1_000_000;
  const buf = Buffer.allocUnsafe(8 * BATCH);
  const t = ms();
  for (let i = count; i < target; i += BATCH) {
    const n = Math.min(BATCH, target - i);
    for (let j = 0; j < n; j++) fingerprint(i + j, buf, 8 * j);
    seen.admitPacked(buf.subarray(0, 8 * n));
    if ((i / BATCH) % 20 === 19) commit();
  }
  commit();
  const s = seen.stats();
  figure(`built to`, s.count, `fingerprints in ${((ms() - t) / 1000).toFixed(1)} s`);
  figure('  of them in runs (unmerged)', s.exact.unmerged, 'fingerprints');
} else {
  figure(`SeenSet.init() at ${(count / 1e6).toFixed(0)} M stored fingerprints`, initMs, 'ms');
  const stored = count;
  let fresh = 2 ** 31;
  let salt = 0;
  let admitMs = 0;
  let admitted = 0;
  if (warmable.warm !== undefined) {
    let t = ms();
    if (sliced) {
      // as frontier-processor.ts's admitWhenRunsRead: slices with a turn of the event loop between
      let slices = 0;
      let longest = 0;
      let cpu = 0;
      while (warmable.runsRead !== true) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        const s = ms();
        warmable.warm(20);
        const slice = ms() - s;
        cpu += slice;
        longest = Math.max(longest, slice);
        slices++;
      }
      figure('  runs read in 20 ms slices (wall)', ms() - t, 'ms');
      figure('    slices / CPU in them / longest', slices, `slices / ${cpu.toFixed(0)} ms / ${longest.toFixed(1)} ms`);
      t = ms();
      seen.has(batch(stored, fresh, 1, salt++).slice(0, 1));
      figure('  then the first check', ms() - t, 'ms');
    } else {
      // a check before any warm step reads the runs at once (one fingerprint: one block read besides)
      seen.has(batch(stored, fresh, 1, salt++).slice(0, 1));
      figure('  first check before any warm step: reads every run into RAM', ms() - t, 'ms');
    }
    const first = batch(stored, fresh, 0.75, salt++);
    fresh += BATCH;
    t = ms();
    seen.admit(first);
    figure('  then the first admit of 1,000 (75 % seen, block cache cold)', ms() - t, 'ms');
    // then as the frontier runs it: a 5 ms slice, then a batch, until warm
    let slices = 0;
    let warmMs = 0;
    let longest = 0;
    for (;;) {
      t = ms();
      const done = warmable.warm(5);
      const slice = ms() - t;
      warmMs += slice;
      longest = Math.max(longest, slice);
      slices++;
      if (done) break;
      t = ms();
      seen.admit(batch(stored, fresh, 0.75, salt++));
      fresh += BATCH;
      admitMs += ms() - t;
      admitted += BATCH;
      if (salt % 20 === 0) commit();
    }
    figure('  warming to full speed, in 5 ms slices (CPU, admits excluded)', warmMs / 1000, 's');
    figure('  slices / longest slice', slices, `slices / ${longest.toFixed(1)} ms`);
    figure('  SeenSet.admit while warming, 75 % seen', (1000 * admitted) / Math.max(admitMs, 1e-9), 'checks/s');
  }
  admitMs = 0;
  admitted = 0;
  for (let k = 0; k < 200; k++) {
    const b = batch(stored, fresh, 0.75, salt++);
    fresh += BATCH;
    const t = ms();
    seen.admit(b);
    admitMs += ms() - t;
    admitted += BATCH;
    if (k % 20 === 19) commit();
  }
  figure('  SeenSet.admit once warm, 75 % seen', (1000 * admitted) / admitMs, 'checks/s');
  store.discardPending();
}
await db.close();
