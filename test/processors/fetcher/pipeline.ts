import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { validateCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import { FetcherProcessor, FETCHED_SINK, FETCH_RESULTS_SINK } from '../../../processors/fetcher/fetcher-processor.js';
import { EmbeddedEngine } from '../../../runtime/engines/embedded/embedded-engine.js';
import { readTopic } from '../../../runtime/engines/embedded/topic-reader.js';
import type { Engine } from '../../../runtime/engine.js';
import type { Processor } from '../../../runtime/processor.js';
import type { StreamRecord } from '../../../runtime/record.js';
import { stringSerde } from '../../../core/serde.js';
import { Topology } from '../../../runtime/topology.js';
import { addParser, parsedPageMaxBytes, TOPICS } from '../../../topology/crawl-topology.js';
import { seedBatches } from '../../../cli/crawl.js';
import type { FetchKind, FetchRequest, FetchResult, LinkBatch, PageRecord } from '../../../schemas/types.js';
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
  engine: Engine;
}

export const TOPIC = {
  requests: 'fetch-requests',
  results: 'fetch-results',
  fetched: 'fetched',
  parsed: 'parsed-pages',
  pages: 'page-records',
  content: 'page-content',
  links: 'links',
};

/**
 * The fetcher and parser stages of the crawl topology (`topology/crawl-topology.ts`), the parser
 * wired by the same `addParser`, on the embedded engine. Tests hand it leases and read what came out.
 */
export function fetchPipeline(
  config: CrawlConfig,
  warcDir: string,
  fetcher: () => FetcherProcessor = () => new FetcherProcessor(config),
): Topology {
  const t = new Topology('fetchtest');
  for (const [name, schema] of [
    [TOPIC.requests, 'FetchRequest'],
    [TOPIC.results, 'FetchResult'],
    [TOPIC.fetched, 'FetchedPage'],
    [TOPIC.parsed, 'ParsedPage'],
    [TOPIC.pages, 'PageRecord'],
    [TOPIC.content, 'PageContent'],
    [TOPIC.links, 'LinkBatch'],
  ] as const) {
    t.addTopic({
      name,
      partitions: 1,
      keySerde: stringSerde,
      schema,
      ...(name === TOPIC.parsed ? { maxMessageBytes: parsedPageMaxBytes(config) } : {}),
    });
  }
  t.addSource('requests', TOPIC.requests);
  t.addProcessor('fetcher', fetcher, ['requests'], {
    concurrency: config.fetchConcurrency,
    commitInputs: 'before',
  });
  t.addSink(FETCH_RESULTS_SINK, TOPIC.results, 'fetcher');
  t.addSink(FETCHED_SINK, TOPIC.fetched, 'fetcher');
  addParser(t, config, warcDir);
  return t;
}

/**
 * Runs `leases` through the fetcher and parser until the engine is idle (or `timeoutMs` passes, which
 * throws), stops it, and reads back results, page records, links and the WARC index.
 * `during` runs while the engine works (e.g. to sample memory).
 */
export async function runLeases(
  config: CrawlConfig,
  leases: FetchRequest[],
  options: { timeoutMs?: number; during?: () => void } = {},
): Promise<PipelineRun> {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-fetcher-'));
  const warcDir = join(dir, 'warc');
  const engine = new EmbeddedEngine(fetchPipeline(config, warcDir), {
    dataDir: join(dir, 'data'),
  });
  try {
    await engine.start();
    await engine.produce(
      TOPIC.requests,
      leases.map((l) => ({ key: l.site, value: l, timestamp: Date.now() })),
    );
    await untilIdle(engine, options.timeoutMs ?? 45_000, options.during);
    await engine.stop();
    await engine.done;
    const read = async <T>(topic: string): Promise<T[]> => {
      const out: T[] = [];
      await readTopic(join(dir, 'data'), topic, (r) => out.push(r.value as T));
      return out;
    };
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
      results: await read<FetchResult>(TOPIC.results),
      pageRecords: await read<PageRecord>(TOPIC.pages),
      links: await read<LinkBatch>(TOPIC.links),
      warc,
      warcRequests,
      deadLetters: engine.metrics.total('dead_letters'),
      engine,
    };
  } finally {
    await engine.stop().catch(() => undefined);
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
