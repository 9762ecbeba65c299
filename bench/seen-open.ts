import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openRocks } from '../state/rocks.js';
import { RocksKeyValueStore } from '../state/rocks-store.js';
import { bufferSerde } from '../core/serde.js';
import { SeenSet, type FingerprintStore } from '../state/seen-set.js';
import { figure, machineLine } from './machine.js';
import { loadSeenSet, syntheticFingerprint as fingerprint, mix } from './seen-load.js';
import { processUsage } from './proc-usage.js';
import { COUNT_KEY } from '../state/seen-layout.js';

// Opening one partition's seen-set over a RocksDB that already holds N fingerprints:
//   node dist/bench/seen-open.js build <dir> <millions>   extends the store to N M fingerprints
//                                                        through SeenSet.admit (runs and blocks as
//                                                        a crawl leaves them; hours past ~50 M)
//   node dist/bench/seen-open.js load <dir> <millions> [millions in runs]
//                                                        writes blocks and runs straight into an
//                                                        empty store (bench/seen-load.ts), minutes
//                                                        at hundreds of millions
//   node dist/bench/seen-open.js open <dir>               init(), warming, admits while and after
// `open` runs on code with or without `warm()` (pairing with the code before it): there init()
// is the whole load. Where the seen-set has `runsRead`, the runs are read first as the frontier
// reads them for a link batch that comes before they are (20 ms slices, a turn of the event loop
// between); SEEN_OPEN_RUNS=force has the first check read them at once instead.
// SEEN_OPEN_ADMIT_EVERY=k: one admit batch every k warm slices (default 1; at hundreds of millions
// the warming is ~10^5 slices). SEEN_OPEN_SWEEP=1: then admits a full sweep span of new
// fingerprints (the exact layer merges every block once within it), so the rate and the bytes
// written per admitted fingerprint include the merges, then the 75 %-seen mix again.
const BATCH = 1_000;
const P = 0.01;
const EXPECTED = 1_000_000;

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

const [mode, dir, millions, runMillions] = process.argv.slice(2);
if ((mode !== 'build' && mode !== 'open' && mode !== 'load') || dir === undefined) {
  console.error('usage: seen-open.js build <dir> <millions> | load <dir> <millions> [millions in runs] | open <dir>');
  process.exit(2);
}
console.log(machineLine());
if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
const db = await openRocks(join(dir, 'db'));
const rocks = new RocksKeyValueStore<Buffer, Buffer>('frontier-seen', db, bufferSerde, bufferSerde);
// bytes of values the seen-set writes (runs, merged blocks, its records): what its changelog carries
let written = 0;
const store: FingerprintStore = {
  get: (key) => rocks.get(key),
  getMany: (keys) => rocks.getMany(keys),
  put: (key, value) => {
    written += key.length + value.length;
    rocks.put(key, value);
  },
  delete: (key) => rocks.delete(key),
  range: (gte, lt, readAhead) => rocks.range(gte, lt, readAhead),
};
let offset = Number(store.get(Buffer.from('bench-offset'))?.readBigUInt64BE(0) ?? 0n);
const commit = () => {
  const o = Buffer.alloc(8);
  o.writeBigUInt64BE(BigInt(++offset));
  rocks.put(Buffer.from('bench-offset'), o);
  rocks.applyCommitted(offset);
};
if (mode === 'load') {
  if (rocks.get(COUNT_KEY) !== undefined) {
    console.error(`load: ${dir} already holds a seen-set; load writes into an empty one`);
    process.exit(2);
  }
  const total = Math.round(Number(millions) * 1e6);
  const inRuns = Math.round(Number(runMillions ?? 0) * 1e6);
  const t = ms();
  const { bits, blocks, runs } = loadSeenSet({
    fingerprint,
    total,
    inRuns,
    put: (key, value) => rocks.put(key, value),
    commit,
  });
  figure(
    `loaded ${total.toLocaleString('en-US')} fingerprints (${inRuns.toLocaleString('en-US')} in ${runs} runs), ${blocks.toLocaleString('en-US')} blocks at ${bits} bits, in`,
    (ms() - t) / 1000,
    's',
  );
  await db.close();
  process.exit(0);
}
// SEEN_OPEN_MAX_SWEEP: the exact layer's maxSweep (default 2^24), to weigh its RAM against its rewrites
const maxSweep = process.env.SEEN_OPEN_MAX_SWEEP === undefined ? undefined : Number(process.env.SEEN_OPEN_MAX_SWEEP);
const seen = new SeenSet(store, {
  expectedCount: EXPECTED,
  falsePositiveRate: P,
  ...(maxSweep === undefined ? {} : { exact: { maxSweep } }),
});
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
    const admitEvery = Number(process.env.SEEN_OPEN_ADMIT_EVERY ?? 1);
    const warmCpu = process.cpuUsage();
    for (;;) {
      t = ms();
      const done = warmable.warm(5);
      const slice = ms() - t;
      warmMs += slice;
      longest = Math.max(longest, slice);
      slices++;
      if (done) break;
      if (slices % admitEvery !== 0) continue;
      t = ms();
      seen.admit(batch(stored, fresh, 0.75, salt++));
      fresh += BATCH;
      admitMs += ms() - t;
      admitted += BATCH;
      if (salt % 20 === 0) commit();
    }
    figure('  warming to full speed, in 5 ms slices (CPU, admits excluded)', warmMs / 1000, 's');
    figure('    process CPU over the warming, admits and RocksDB threads included', cpuSeconds(warmCpu), 's');
    figure('  slices / longest slice', slices, `slices / ${longest.toFixed(1)} ms`);
    figure('  SeenSet.admit while warming, 75 % seen', (1000 * admitted) / Math.max(admitMs, 1e-9), 'checks/s');
  }
  admitMs = 0;
  admitted = 0;
  let answeredSeen = 0;
  for (let k = 0; k < 200; k++) {
    const b = batch(stored, fresh, 0.75, salt++);
    fresh += BATCH;
    const t = ms();
    for (const isNew of seen.admit(b)) if (!isNew) answeredSeen++;
    admitMs += ms() - t;
    admitted += BATCH;
    if (k % 20 === 19) commit();
  }
  figure('  SeenSet.admit once warm, 75 % seen', (1000 * admitted) / admitMs, 'checks/s');
  // the loaded or built fingerprints must be found: a wrong layout would answer "new"
  figure('    answered "seen"', (100 * answeredSeen) / admitted, '% (75 expected)');
  memory('once warm');
  if (process.env.SEEN_OPEN_SWEEP === '1') {
    // a full sweep span of new fingerprints: every block is merged once within it, so what it costs
    // is what an admit costs at this size, merges included (process CPU: RocksDB's threads too)
    const span = BATCH * Math.ceil(seen.stats().sweepSpan / BATCH);
    const sweepsBefore = seen.stats().exact.sweeps;
    // what making the batches costs the bench (outside the seen-set), measured apart and subtracted
    const making = process.cpuUsage();
    for (let k = 0; k < 2_000; k++) batch(stored, fresh + k * BATCH, 0, salt + k);
    const makingPerBatch = cpuSeconds(making) / 2_000;
    written = 0;
    const cpu = process.cpuUsage();
    const t = ms();
    for (let k = 0; k < span / BATCH; k++) {
      seen.admit(batch(stored, fresh, 0, salt++));
      fresh += BATCH;
      if (k % 20 === 19) commit();
    }
    commit();
    const spanCpu = cpuSeconds(cpu);
    const s = seen.stats();
    figure(`  admit ${span.toLocaleString('en-US')} new (a sweep span), process CPU`, span / spanCpu, 'links/CPU-s');
    figure(
      "    without the bench's making of its batches",
      span / (spanCpu - (makingPerBatch * span) / BATCH),
      `links/CPU-s (${((makingPerBatch * span) / BATCH).toFixed(1)} of ${spanCpu.toFixed(1)} CPU-s)`,
    );
    figure('    wall', span / ((ms() - t) / 1000), 'links/s');
    figure('    bytes written to the store (and its changelog) per admitted fingerprint', written / span, 'B');
    figure('    sweeps completed / blocks at', s.exact.sweeps - sweepsBefore, `/ ${s.exact.blockBits} bits`);
    figure(
      '    block cache hits',
      (100 * s.exact.blockCacheHits) / Math.max(1, s.exact.blockCacheHits + s.exact.blockCacheMisses),
      '%',
    );
    memory('after the sweep span');
    const mixCpu = process.cpuUsage();
    for (let k = 0; k < 1_000; k++) {
      seen.admit(batch(stored, fresh, 0.75, salt++));
      fresh += BATCH;
      if (k % 20 === 19) commit();
    }
    commit();
    const mixed = cpuSeconds(mixCpu);
    figure('  then admit 1,000,000, 75 % seen, process CPU', 1e6 / mixed, 'links/CPU-s');
    figure("    without the bench's making of its batches", 1e6 / (mixed - makingPerBatch * 1_000), 'links/CPU-s');
    const st = seen.stats();
    figure(
      '  filter',
      st.bloomBytes / 2 ** 20,
      `MiB in ${st.bloomSegments} segments, estimated false-positive rate ${(100 * st.estimatedFalsePositiveRate).toFixed(2)} %`,
    );
    figure(
      '  unmerged fingerprints in RAM',
      st.exact.ramBytes / 2 ** 20,
      `MiB (${st.exact.unmerged.toLocaleString('en-US')})`,
    );
  }
  rocks.discardPending();
}
await db.close();

function cpuSeconds(since: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1e6;
}

/** RSS now and its peak (VmHWM), from /proc on Linux. */
function memory(when: string): void {
  figure(`  RSS ${when}`, process.memoryUsage().rss / 2 ** 20, 'MiB');
  figure('    peak RSS so far', processUsage(process.pid).peakMiB, 'MiB');
  const m = process.memoryUsage();
  const r = db.memory();
  const mib = (b: number) => (b / 2 ** 20).toFixed(0);
  console.log(
    `    V8 heap used ${mib(m.heapUsed)} MiB, array buffers ${mib(m.arrayBuffers)} MiB; RocksDB memtables ${mib(r.memtables)}, block cache ${mib(r.blockCache)}, table readers ${mib(r.tableReaders)} MiB`,
  );
}
