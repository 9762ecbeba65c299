import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRocks } from '../state/rocks.js';
import { frontierStores, DUE_STORE, HISTORY_STORE, META_STORE } from '../processors/frontier/frontier-stores.js';
import { RecrawlSchedule, type DueStore, type HistoryStore } from '../processors/frontier/recrawl-schedule.js';
import type { MetaStore } from '../processors/frontier/frontier-stores.js';
import { validateCrawlConfig } from '../processors/common/crawl-config.js';
import type { ChangeloggedStore } from '../state/state-store.js';
import type { PageRecord, SiteState } from '../schemas/types.js';
import { RefetchPlanner } from '../processors/frontier/refetch-planner.js';
import { emptySiteState } from '../processors/frontier/site-policy.js';
import { figure, machineLine } from './machine.js';
import { buildStores } from '../runtime/task-state.js';

// The recrawl schedule of one frontier partition on RocksDB: N URLs recorded (history + due
// index), committed every 10,000 as the engine commits; then the due scan at steady state (the
// punctuator takes 1,000 due URLs a second) and the RAM the schedule holds (none per URL: only
// RocksDB's own caches grow, reported as RSS).
const N = Number(process.env['RECRAWL_BENCH_URLS'] ?? 2_000_000);
const COMMIT_EVERY = 10_000;
const DUE_BATCH = 1_000;
// a host's revisit budget: half of one fetch a second
const BUDGET_PER_MS = 0.5 / 1000;

const config = validateCrawlConfig({ recrawlMinMs: 3_600_000, recrawlMaxMs: 30 * 86_400_000 });

function page(i: number, fetchTime: number): PageRecord {
  return {
    url: `https://site${i % 10_000}.example/section/${i}/page.html`,
    canonicalUrl: null,
    site: `site${i % 10_000}.example`,
    host: `site${i % 10_000}.example`,
    fetchTime,
    status: 200,
    contentType: 'text/html',
    contentLength: 20_000,
    payloadDigest: `sha1:${i.toString(32).padStart(32, 'A')}`,
    simhash: Buffer.alloc(8, i & 0xff),
    duplicateOf: null,
    warcFile: null,
    warcOffset: null,
    warcLength: null,
    outlinkCount: 20,
    depth: 3,
    errorCode: null,
    redirectTarget: null,
    charset: 'UTF-8',
    language: null,
    noindex: false,
    kind: 'PAGE',
    visit: 0,
    changed: false,
    notModified: false,
    previousFetchTime: null,
    etag: `"${i.toString(36)}"`,
    lastModified: 'Tue, 01 Dec 2026 10:00:00 GMT',
    parserVersion: 1,
    reparsed: false,
    warcUri: null,
  };
}

console.log(machineLine());
const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-recrawl-'));
try {
  const db = await openRocks(join(dir, 'db'));
  const built = buildStores({ subtopology: 0, partition: 0 }, frontierStores(), { db, storeDir: () => dir }).stores;
  const open = <S>(name: string) => built.get(name) as S;
  const history = open<HistoryStore>(HISTORY_STORE);
  const due = open<DueStore>(DUE_STORE);
  const meta = open<MetaStore>(META_STORE);
  const stores = [history, due, meta] as unknown as ChangeloggedStore[];
  let offset = 0;
  const commit = () => {
    offset++;
    for (const s of stores) s.applyCommitted(offset);
  };
  const schedule = new RecrawlSchedule(history, due, meta, config);
  // the optimal policy's planner, over site states held in a Map (its cost is part of a visit)
  const siteStates = new Map<string, SiteState>();
  const planner = new RefetchPlanner(config, {
    ratesOf: (site) => {
      let s = siteStates.get(site);
      if (s === undefined) siteStates.set(site, (s = emptySiteState(site)));
      return s;
    },
    ratesChanged: () => undefined,
  });
  const rss0 = process.memoryUsage().rss;
  // fetch times spread over a day, so due times spread too
  const t0 = Date.UTC(2026, 11, 1);
  let start = performance.now();
  for (let i = 0; i < N; i++) {
    {
      const p = page(i, (t0 + (i * 86_400_000) / N) | 0);
      schedule.recordVisit(p, (previous, changed) => planner.plan(p, previous, changed, 1, BUDGET_PER_MS));
    }
    if (i % COMMIT_EVERY === COMMIT_EVERY - 1) commit();
  }
  commit();
  const recordSeconds = (performance.now() - start) / 1000;
  figure(
    `recordVisit, first visits (history + due index, commits included), ${N.toLocaleString('en-US')} URLs`,
    N / recordSeconds,
    'visits/s',
  );
  figure('RSS growth while recording', (process.memoryUsage().rss - rss0) / 2 ** 20, 'MiB');

  // revisits: the same URLs again, a day later (a due entry moved per visit)
  const M = Math.min(N, 500_000);
  start = performance.now();
  for (let i = 0; i < M; i++) {
    {
      const p = { ...page(i, t0 + 86_400_000 + i), notModified: i % 2 === 0 };
      schedule.recordVisit(p, (previous, changed) => planner.plan(p, previous, changed, 1, BUDGET_PER_MS));
    }
    if (i % COMMIT_EVERY === COMMIT_EVERY - 1) commit();
  }
  commit();
  figure('recordVisit, revisits (history read, due entry moved)', M / ((performance.now() - start) / 1000), 'visits/s');

  // the due scan: everything first recorded is due by t0 + 31 days + 1 day
  const scanAt = t0 + 32 * 86_400_000;
  let taken = 0;
  let scans = 0;
  start = performance.now();
  while (taken < 500_000) {
    const got = schedule.takeDue(scanAt, DUE_BATCH);
    commit();
    if (got.length === 0) break;
    taken += got.length;
    scans++;
  }
  const scanSeconds = (performance.now() - start) / 1000;
  figure('takeDue scan (batches of 1,000, commits included)', taken / scanSeconds, 'due URLs/s');
  figure('takeDue, one punctuation of 1,000 due URLs', (scanSeconds / scans) * 1000, 'ms');
  start = performance.now();
  for (let i = 0; i < 1_000; i++) schedule.nextDueAt();
  figure('nextDueAt (the idle check)', ((performance.now() - start) / 1_000) * 1000, 'µs/call');
  figure('RSS after the scan', process.memoryUsage().rss / 2 ** 20, 'MiB');
  await db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
