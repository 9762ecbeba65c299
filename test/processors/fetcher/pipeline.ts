import type { Logger } from '../../../core/logger.js';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { M } from '../../../core/metric-catalogue.js';
import { validateCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import type { Engine } from '../../../runtime/engine.js';
import type { Processor } from '../../../runtime/processor.js';
import type { StreamRecord } from '../../../runtime/record.js';
import { TopologyTestDriver } from '../../../runtime/testing/topology-test-driver.js';
import { crawlTopology, TOPICS } from '../../../topology/crawl-topology.js';
import { seedBatches } from '../../../cli/crawl.js';
import type { FetchKind, FetchRequest, FetchResult, LinkBatch, PageRecord } from '../../../schemas/types.js';
import { ParserTasks } from '../parser/parser-tasks.js';
import { parseRecord, readAt } from '../parser/warc-helpers.js';
import { warcioIndex } from '../../python/warcio.js';

/** A crawl config for loopback tests: `*.test` → 127.0.0.1, only 127.0.0.1 allowed, no system DNS. */
export function loopbackConfig(overrides: Partial<CrawlConfig> = {}): CrawlConfig {
  return validateCrawlConfig({
    resolve: ['*.test=127.0.0.1'],
    allowIps: ['127.0.0.1/32'],
    systemDns: false,
    ...overrides,
  });
}

let leaseCounter = 0;

/** A lease as the frontier would issue it: due now, valid for a minute. */
export function lease(url: string, overrides: Partial<FetchRequest> = {}): FetchRequest {
  let host = '';
  try {
    host = new URL(url).hostname;
  } catch {
    // an unparsable URL keeps an empty host, as a lease for one would
  }
  const now = Date.now();
  return {
    leaseId: `test-${++leaseCounter}`,
    ownerEpoch: 1,
    url,
    host,
    site: host || 'invalid',
    kind: 'PAGE' as FetchKind,
    depth: 0,
    redirectHops: 0,
    attempt: 1,
    issuedAt: now,
    notBefore: 0,
    notAfter: now + 60_000,
    ifNoneMatch: null,
    ifModifiedSince: null,
    ...overrides,
  };
}

/** Everything one run of the fetcher → parser pipeline left behind. */
export interface PipelineRun {
  results: FetchResult[];
  pageRecords: PageRecord[];
  links: LinkBatch[];
  /** `warcio index` of every WARC file: offset, length, warc-type, warc-target-uri, http:status. */
  warc: Record<string, string>[];
  /** The HTTP request heads archived in WARC request records, as text. */
  warcRequests: string[];
  deadLetters: number;
}

export const TOPIC = {
  requests: TOPICS.fetchRequests,
  results: TOPICS.fetchResults,
  fetched: TOPICS.fetched,
};

/** The fetcher's processor name in the crawl topology. */
export const FETCHER = 'fetcher';

/**
 * The fetcher task of the crawl topology (`topology/crawl-topology.ts`) on the topology test
 * driver: the real StreamTask, its clock (which the fetcher does not read) set to now. The
 * fetcher itself is `driver.processor<FetcherProcessor>(FETCHER)`. The caller closes the driver.
 */
export async function fetcherDriver(
  config: CrawlConfig,
  dir?: string,
  /** Partition `partition` of `partitions`, sharing `inProcess` with other drivers (default: partition 0 of 1, alone). */
  place: { partition: number; partitions: number; inProcess?: Map<string, unknown>; logger?: Logger } = {
    partition: 0,
    partitions: 1,
  },
): Promise<TopologyTestDriver> {
  // the parser's WARC directory is never written: only the fetcher's sub-topology runs
  const topology = crawlTopology({
    config,
    partitions: place.partitions,
    warcDir: join(tmpdir(), 'crawlstream-no-warc'),
  });
  return TopologyTestDriver.open({
    topology,
    sourceTopic: TOPICS.fetchRequests,
    partition: place.partition,
    startTime: Date.now(),
    ...(dir === undefined ? {} : { dir }),
    ...(place.inProcess === undefined ? {} : { inProcess: place.inProcess }),
    ...(place.logger === undefined ? {} : { logger: place.logger }),
  });
}

/**
 * Runs `leases` through the fetcher and parser tasks of the crawl topology, each on the topology
 * test driver: the leases go through the engines' record loop (as many fetches at once as
 * `fetchConcurrency`), then every fetched page through the parser (`ParserTasks`); reads back
 * results, page records, links and the WARC index. Throws when the run takes longer than
 * `timeoutMs`. `during` runs every 100 ms while it works (e.g. to sample memory).
 */
export async function runLeases(
  config: CrawlConfig,
  leases: FetchRequest[],
  options: { timeoutMs?: number; during?: () => void } = {},
): Promise<PipelineRun> {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-fetcher-'));
  const sampler = options.during ? setInterval(options.during, 100) : undefined;
  let timer: NodeJS.Timeout | undefined;
  let fetcher: TopologyTestDriver | undefined;
  let parser: ParserTasks | undefined;
  try {
    const fetch = (fetcher = await fetcherDriver(config, join(dir, 'fetcher')));
    const parse = (parser = await ParserTasks.open(join(dir, 'parser'), 1, config));
    const timeoutMs = options.timeoutMs ?? 45_000;
    const run = async (): Promise<void> => {
      await fetch.pipeInputs(
        TOPIC.requests,
        leases.map((l) => ({ key: l.site, value: l })),
      );
      fetch.commit();
      for (const r of fetch.output(TOPIC.fetched)) parse.pipe(TOPIC.fetched, r.key, r.value);
      await parse.drainAhead(parse.lookahead);
      parse.commit();
    };
    await Promise.race([
      run(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`fetcher and parser not done after ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    // closing the parser closes its WARC files: the index reads them whole
    await parse.close();
    const warcDir = parse.warcDir;
    const warc: Record<string, string>[] = [];
    const warcRequests: string[] = [];
    for (const file of readdirSync(warcDir).filter((f) => f.endsWith('.warc.gz'))) {
      for (const r of warcioIndex(join(warcDir, file), [
        'warc-type',
        'warc-target-uri',
        'http:status',
        'warc-concurrent-to',
      ])) {
        warc.push(r);
        if (r['warc-type'] === 'request') {
          warcRequests.push(
            parseRecord(
              readAt(warcDir, { file, offset: Number(r['offset']), length: Number(r['length']) } as Parameters<
                typeof readAt
              >[1]),
            ).block.toString('latin1'),
          );
        }
      }
    }
    return {
      results: fetch.output<FetchResult>(TOPIC.results).map((r) => r.value!),
      pageRecords: parse.records,
      links: parse.links,
      warc,
      warcRequests,
      deadLetters: fetch.metrics.total(M.deadLetters) + parse.metrics.total(M.deadLetters),
    };
  } finally {
    clearTimeout(timer);
    clearInterval(sampler);
    await fetcher?.close();
    await parser?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Resolves once the engine has been idle on two checks in a row; throws after `timeoutMs`. */
export async function untilIdle(engine: Engine, timeoutMs: number, during?: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let idle = 0;
  while (idle < 2) {
    if (Date.now() > deadline) throw new Error(`engine not idle after ${timeoutMs} ms`);
    await sleep(100);
    during?.();
    idle = engine.isIdle() ? idle + 1 : 0;
  }
}

/** A processor that keeps every record it sees, for counting what flowed through a topic. */
export class Tap<V> implements Processor<string, V> {
  constructor(private readonly into: V[]) {}
  process(record: StreamRecord<string, V>): void {
    this.into.push(record.value);
  }
}

/** Records of a WARC index by type. */
export function byType(warc: Record<string, string>[], type: string): Record<string, string>[] {
  return warc.filter((r) => r['warc-type'] === type);
}

/**
 * The records that archive a fetch: responses, revisits, and the metadata records of fetches that
 * got no response — not the fetch-facts metadata record concurrent to each response or revisit.
 */
export function fetchRecords(warc: Record<string, string>[]): Record<string, string>[] {
  return warc.filter(
    (r) =>
      r['warc-type'] === 'response' ||
      r['warc-type'] === 'revisit' ||
      (r['warc-type'] === 'metadata' && !r['warc-concurrent-to']),
  );
}

/** The metadata records of fetches that got no response (not fetch facts, which are concurrent to a response). */
export function failedFetchRecords(warc: Record<string, string>[]): Record<string, string>[] {
  return fetchRecords(warc).filter((r) => r['warc-type'] === 'metadata');
}

/** Writes `urls` to the links topic as the crawl command seeds them (one batch per site), at `now`. */
export async function seedLinks(engine: Engine, urls: readonly string[], now: number): Promise<void> {
  await engine.produce(
    TOPICS.links,
    seedBatches(urls, now, () => undefined).map((b) => ({ key: b.site, value: b, timestamp: now })),
  );
}
