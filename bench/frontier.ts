import { M } from '../core/metric-catalogue.js';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metrics } from '../core/metrics.js';
import type { ConsumedRawRecord } from '../runtime/record.js';
import { TopologyTestDriver } from '../runtime/testing/topology-test-driver.js';
import { validateCrawlConfig } from '../processors/common/crawl-config.js';
import { crawlTopology, TOPICS } from '../topology/crawl-topology.js';
import { NO_ADDRESSES } from '../processors/frontier/host-addresses.js';
import type { FetchRequest, FetchResult, LinkBatch } from '../schemas/types.js';
import { packedFingerprints } from '../processors/common/fingerprint.js';
import { figure, machineLine } from './machine.js';
import { loadSeenSet, syntheticFingerprint } from './seen-load.js';
import { callingThreadCpuS, processUsage } from './proc-usage.js';
import { TaskDirectory } from '../runtime/task-directory.js';
import { RocksKeyValueStore } from '../state/rocks-store.js';
import { bufferSerde } from '../core/serde.js';
import { SEEN_STORE } from '../processors/frontier/frontier-stores.js';

// The frontier task alone on the topology test driver (the real StreamTask on real RocksDB
// stores), fed serialized records as the engine would: admit (seen-set, budgets, front queues)
// and dispatch (leases) rates on one core, and RSS with N URLs queued. A commit assembles the
// changelog records as an engine's does and drops them: appending them is the engine's cost,
// measured by bench/store.ts.
// "frontier CPU" counts what the frontier's task does (deserialize its input, process, forward
// and serialize its output, commit its stores), not the bench playing parser and fetchers
// (encoding link batches and fetch results, decoding fetch requests): those run in other tasks.
// "phase CPU" counts both, as this bench did before 2026-12.
// FRONTIER_BENCH_SEEN_MILLIONS=m: the partition's seen-set already holds m million fingerprints
// (synthetic, written straight into its store by bench/seen-load.ts, 8.4 M of them unmerged in runs
// when m ≥ 16.8): the task's opening, the filter's warming and every phase then run at that size
// `--rules`: the crawl runs with TEN_RULES, none of which refuses the bench's links (each is
// evaluated in full: every deny rule misses, the last allow rule matches); pair it with a run
// without, in one sitting (docs/BENCHMARKS.md)
const ARGS = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const RULES = process.argv.includes('--rules');
const N = Number(ARGS[0] ?? 10_000_000);
const HOSTS = Number(ARGS[1] ?? 100_000);
const TEN_RULES = {
  // regexes as deny rules, as crawls use them (session ids, comment replies, admin pages,
  // calendars); the allow side by host and SURT
  denyRules: [
    'host:*.ads.example',
    'host:tracker*.example',
    'surt:(example,site1,www,)/private/',
    'surt:http://cdn.example',
    're:[?&]replytocom=',
    're:/wp-(admin|login)/',
    're:\\.php\\?.*sid=',
    're:/calendar/[0-9]{4}/',
  ],
  allowRules: ['surt:(org,', 'host:*.example'],
};
const LINKS_PER_BATCH = 100;
const PRELOAD = Math.round(Number(process.env.FRONTIER_BENCH_SEEN_MILLIONS ?? 0) * 1e6);

console.log(machineLine());
const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-frontier-'));
try {
  // the seen-set sized for the N URLs it will hold, as a deployment would size it: an undersized
  // Bloom filter grows by segments at tighter rates (more bits per URL than one sized filter)
  const config = validateCrawlConfig({
    sitePageBudget: 1_000_000,
    activeHostSlots: HOSTS,
    ipConcurrency: 1_000_000,
    ipGapMs: 0,
    seenExpectedUrls: Math.max(N, 1_000_000),
    ...(RULES ? TEN_RULES : {}),
  });
  if (RULES)
    console.log(
      `rules: ${[...TEN_RULES.denyRules.map((r) => `--deny ${r}`), ...TEN_RULES.allowRules.map((r) => `--allow ${r}`)].join(' ')}`,
    );
  // no address lookups: the bench measures admit and dispatch, not DNS
  const metrics = new Metrics();
  const topology = crawlTopology({ config, partitions: 1, warcDir: join(dir, 'warc'), addressLookup: NO_ADDRESSES });
  const sent: Buffer[] = [];
  if (PRELOAD > 0) {
    const t = performance.now();
    const sub = topology.build().find((s) => s.sourceTopics.includes(TOPICS.links))!;
    const db = await new TaskDirectory(join(dir, 'task')).task({ subtopology: sub.id, partition: 0 }).openLive();
    const seenStore = new RocksKeyValueStore<Buffer, Buffer>(SEEN_STORE, db, bufferSerde, bufferSerde);
    let offset = 0;
    const loaded = loadSeenSet({
      fingerprint: syntheticFingerprint,
      total: PRELOAD,
      inRuns: PRELOAD >= 2 ** 24 ? 8_400_000 : 0,
      put: (key, value) => seenStore.put(key, value),
      commit: () => seenStore.applyCommitted(++offset),
    });
    await db.close();
    figure(
      `seen-set loaded with ${PRELOAD.toLocaleString('en-US')} fingerprints (${loaded.runs} runs, ${loaded.blocks.toLocaleString('en-US')} blocks), in`,
      (performance.now() - t) / 1000,
      's',
    );
  }
  const opening = performance.now();
  // outputs neither decoded nor kept (the fetchers' side decodes them, outside the frontier's
  // measure), changelogs not kept: memory holds what a frontier task holds
  const driver = await TopologyTestDriver.open({
    topology,
    sourceTopic: TOPICS.links,
    dir: join(dir, 'task'),
    // epoch milliseconds, as a crawl sees them (their varints are as long as a real crawl's)
    startTime: Date.UTC(2026, 10, 30),
    metrics,
    captureOutputs: false,
    keepChangelogs: false,
    onRawOutput: (topic, r) => {
      if (topic === TOPICS.fetchRequests && r.value) sent.push(r.value);
    },
  });
  const encode = (topic: string, key: string, value: unknown): ConsumedRawRecord => driver.encode(topic, key, value);
  figure("task open (its stores and every processor's init)", performance.now() - opening, 'ms');
  if (PRELOAD > 0) {
    // the frontier's punctuator fills the filter in 5 ms slices every 10 ms; until then every
    // check reads the exact layer. Measured apart from admit: a crawl admits meanwhile, slower
    const t = performance.now();
    const cpu = process.cpuUsage();
    do await driver.advanceWallClockTime(1_000, 10);
    while (metrics.gauge(M.seenSetWarming) > 0);
    const used = process.cpuUsage(cpu);
    figure('seen-set warmed by the punctuator, wall', (performance.now() - t) / 1000, 's');
    figure('  process CPU', (used.user + used.system) / 1e6, 's');
    figure('  RSS once warm', process.memoryUsage().rss / 2 ** 20, 'MiB');
  }
  // CPU seconds of the frontier's own work, summed over measured stretches
  let taskCpu = 0;
  // of which the frontier's own thread (the rest is RocksDB's flush and compaction threads)
  let threadCpu = 0;
  const measured = <T>(work: () => T): T => {
    const before = process.cpuUsage();
    const beforeThread = callingThreadCpuS();
    try {
      return work();
    } finally {
      const used = process.cpuUsage(before);
      taskCpu += (used.user + used.system) / 1e6;
      threadCpu += callingThreadCpuS() - beforeThread;
    }
  };

  // admit: N new URLs spread over HOSTS hosts of HOSTS sites, 100 links per record, committed
  // every 20,000 links; records are encoded (as the parser would: with the links' fingerprints)
  // in blocks outside the measure
  let t = performance.now();
  let cpu = process.cpuUsage();
  // admits `total` links, LINKS_PER_BATCH per record: the record starting at link i goes to site
  // `hostOf(i)`, link k is `urlOf(site, k)`; blocks of 200 records are encoded outside the measure,
  // then processed and committed inside it. `carried`: the batches carry their fingerprints, as
  // the parser's do (otherwise the frontier computes them)
  const BLOCK = 200;
  const admitAll = (
    total: number,
    hostOf: (i: number) => number,
    urlOf: (site: string, link: number) => string,
    carried = true,
  ): void => {
    for (let i = 0; i < total;) {
      const block: ConsumedRawRecord[] = [];
      for (let r = 0; r < BLOCK && i < total; r++, i += LINKS_PER_BATCH) {
        const h = hostOf(i);
        const site = `site${h}.example`;
        const batch: LinkBatch = {
          site,
          sourceUrl: `https://other${h}.example/`,
          discoveredAt: driver.now,
          links: [],
        };
        for (let j = 0; j < LINKS_PER_BATCH; j++)
          batch.links.push({ url: urlOf(site, i + j), depth: 2, redirectHops: 0 });
        if (carried) batch.fingerprints = packedFingerprints(batch.links.map((l) => l.url));
        block.push(encode(TOPICS.links, site, batch));
      }
      measured(() => {
        for (const raw of block) void driver.pipeRawInput(raw);
        driver.commit();
      });
    }
  };
  admitAll(
    N,
    (i) => (i / LINKS_PER_BATCH) % HOSTS,
    (site, link) => `https://www.${site}/p/${link}`,
  );
  let s = (performance.now() - t) / 1000;
  let used = process.cpuUsage(cpu);
  figure(`admit ${N.toLocaleString('en-US')} new links over ${HOSTS.toLocaleString('en-US')} hosts`, N / s, 'links/s');
  figure('admit frontier CPU', N / taskCpu, 'links/CPU-s');
  // a figure of links dropped (budgets, templates, trap rules) would be a cheaper path, not admit
  figure('  links admitted', metrics.total(M.urlsAdmitted), 'URLs');
  figure('  links refused by scope and filters', metrics.total(M.urlsRefused), 'URLs');
  figure('  links dropped by a rule', metrics.total(M.urlsDropped), 'URLs');
  figure("  of which on the frontier's thread", (100 * threadCpu) / taskCpu, '%');
  figure(
    "admit phase CPU (with encoding the input and fingerprinting its links, the parser's part)",
    N / ((used.user + used.system) / 1e6),
    'links/CPU-s',
  );
  if (global.gc) global.gc();
  if (process.env.HEAPSNAP) (await import('node:v8')).writeHeapSnapshot(process.env.HEAPSNAP);
  memoryFigures(`RSS with ${N.toLocaleString('en-US')} URLs queued`);
  // the task directory's layout is TaskDirectory's: count all of it (the RocksDB is nearly all)
  figure('RocksDB files on disk', dirBytes(join(dir, 'task')) / 2 ** 20, 'MiB');
  for (const prop of [
    'rocksdb.cur-size-all-mem-tables',
    'rocksdb.estimate-table-readers-mem',
    'rocksdb.block-cache-usage',
    'rocksdb.estimate-num-keys',
  ]) {
    const v = Number(driver.dbProperty(prop));
    if (Number.isFinite(v))
      figure(`  ${prop}`, prop.endsWith('keys') ? v : v / 2 ** 20, prop.endsWith('keys') ? 'keys' : 'MiB');
  }

  // the brief's mix: 3 of 4 links already known (each confirmed against the exact layer), 1 new
  const MIXED = Math.min(N, 1_000_000);
  let seed = 12345;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const rounds = Math.max(1, Math.floor(N / LINKS_PER_BATCH / HOSTS));
  let fresh = 0;
  taskCpu = 0;
  threadCpu = 0;
  let host = 0;
  admitAll(
    MIXED,
    () => (host = Math.floor(rand() * Math.min(HOSTS, N / LINKS_PER_BATCH))),
    (site, link) => {
      // a URL admitted above: record number host + HOSTS × round held /p/(that × 100 + 0..99)
      const old = (host + HOSTS * Math.floor(rand() * rounds)) * LINKS_PER_BATCH + Math.floor(rand() * LINKS_PER_BATCH);
      return link % 4 === 3 || old >= N ? `https://www.${site}/q/${fresh++}` : `https://www.${site}/p/${old}`;
    },
  );
  figure(
    `admit ${MIXED.toLocaleString('en-US')} links, ${((100 * (MIXED - fresh)) / MIXED).toFixed(0)} % already seen, frontier CPU`,
    MIXED / taskCpu,
    'links/CPU-s',
  );

  // new links to known hosts, from the parser (fingerprints carried) and from a producer that sends
  // none (older parsers, seeds): the frontier hashes each link itself
  for (const carried of [true, false]) {
    taskCpu = 0;
    threadCpu = 0;
    admitAll(
      MIXED,
      (i) => (i / LINKS_PER_BATCH) % HOSTS,
      (site, link) => `https://www.${site}/${carried ? 'r' : 's'}/${link}`,
      carried,
    );
    figure(
      `admit ${MIXED.toLocaleString('en-US')} new links to known hosts, ${carried ? 'fingerprints carried' : 'no fingerprints carried (the frontier hashes them)'}, frontier CPU`,
      MIXED / taskCpu,
      'links/CPU-s',
    );
  }

  // dispatch: every host due; lease, then answer each lease with a result, as fetchers would
  const DISPATCHES = Math.min(N, 1_000_000);
  let dispatched = 0;
  taskCpu = 0;
  threadCpu = 0;
  t = performance.now();
  cpu = process.cpuUsage();
  while (dispatched < DISPATCHES) {
    // the dispatch punctuator is synchronous (it runs before the first await); the promise only says it returned
    await measured(() => driver.advanceWallClockTime(60_000, 60_000));
    if (sent.length === 0) break;
    // the fetchers' side: read each request, answer it
    const results: ConsumedRawRecord[] = [];
    for (const raw of sent.splice(0)) {
      const r = driver.decodeValue<FetchRequest>(TOPICS.fetchRequests, raw);
      dispatched++;
      const result: FetchResult = {
        leaseId: r.leaseId,
        ownerEpoch: r.ownerEpoch,
        url: r.url,
        host: r.host,
        site: r.site,
        kind: r.kind,
        status: r.kind === 'ROBOTS' ? 404 : 200,
        startedAt: driver.now,
        durationMs: 50,
        errorCode: null,
        errorMessage: null,
        retryAfterMs: null,
        redirectTarget: null,
        robotsBody: null,
        remoteAddress: '192.0.2.1',
      };
      results.push(encode(TOPICS.fetchResults, r.site, result));
    }
    measured(() => {
      for (const raw of results) void driver.pipeRawInput(raw);
      driver.commit();
    });
  }
  s = (performance.now() - t) / 1000;
  used = process.cpuUsage(cpu);
  figure(`dispatch + complete ${dispatched.toLocaleString('en-US')} leases`, dispatched / s, 'URLs/s');
  figure('dispatch frontier CPU', dispatched / taskCpu, 'URLs/CPU-s');
  figure("  of which on the frontier's thread", (100 * threadCpu) / taskCpu, '%');
  figure("dispatch phase CPU (with the fetchers' side)", dispatched / ((used.user + used.system) / 1e6), 'URLs/CPU-s');
  memoryFigures('RSS after dispatch');
  // the task opens again over all of it (its stores stay open: what is timed is every processor's
  // init, the scans of host and site states included, as after a rebalance)
  driver.commit();
  t = performance.now();
  await driver.crash();
  figure(
    `task opened again over ${N.toLocaleString('en-US')} URLs on ${Math.min(HOSTS, Math.ceil(N / LINKS_PER_BATCH)).toLocaleString('en-US')} hosts (every processor's init)`,
    performance.now() - t,
    'ms',
  );
  await driver.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** Bytes of the files under `path`, in every folder below it. */
function dirBytes(path: string): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    total += entry.isDirectory() ? dirBytes(child) : statSync(child).size;
  }
  return total;
}

/** RSS now, its peak so far, and what V8 holds of it (heap used and reserved, external buffers). */
function memoryFigures(what: string): void {
  const mem = process.memoryUsage();
  figure(what, mem.rss / 2 ** 20, 'MiB');
  figure('  peak RSS so far', processUsage(process.pid).peakMiB, 'MiB');
  figure('  of which V8 heap used', mem.heapUsed / 2 ** 20, 'MiB');
  figure('  V8 heap reserved', mem.heapTotal / 2 ** 20, 'MiB');
  figure('  of which external (buffers)', mem.external / 2 ** 20, 'MiB');
}
