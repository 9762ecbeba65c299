import { Topology } from '../runtime/topology.js';
import { TOPICS } from './topics.js';
import { stringSerde } from '../runtime/serde.js';
import type { CrawlConfig } from '../processors/crawl-config.js';
import { FetcherProcessor, FETCHED_SINK, FETCH_RESULTS_SINK } from '../processors/fetcher/fetcher-processor.js';
import { FrontierProcessor, FETCH_REQUESTS_SINK } from '../processors/frontier/frontier-processor.js';
import { frontierStores, HOSTS_STORE, META_STORE, QUEUE_STORE, SEEN_STORE } from '../processors/frontier/frontier-stores.js';
import { LINKS_SINK, PAGE_RECORDS_SINK, ParserProcessor, RECORDED_STORE } from '../processors/parser/parser-processor.js';
import { warcStore } from '../processors/parser/warc-store.js';
import { dedupeStores } from '../processors/parser/dedupe.js';
import { keyValueStore } from '../state/store-builder.js';
import { bufferCodec } from '../state/state-store.js';

export const APPLICATION_ID = 'crawlstream';

export { TOPICS };

export interface CrawlTopologyOptions {
  readonly config: CrawlConfig;
  /** Partitions of every topic (and so tasks per stage). */
  readonly partitions: number;
  /** Where the parser writes WARC files. */
  readonly warcDir: string;
}

/**
 * The crawler's dataflow, declared once for every engine:
 *
 *   links ─┐
 *          ├─> frontier ──> fetch-requests ──> fetcher ──┬─> fetch-results ─> (frontier)
 *   fetch-results ┘                                     └─> fetched ──> parser ──┬─> page-records
 *                                                                                 └─> links ─> (frontier)
 */
export function crawlTopology({ config, partitions, warcDir }: CrawlTopologyOptions): Topology {
  const t = new Topology(APPLICATION_ID);
  const topic = (name: string, schema: Parameters<Topology['addTopic']>[0]['schema'], extra: { maxMessageBytes?: number; keep?: boolean } = {}) =>
    t.addTopic({ name, partitions, keySerde: stringSerde, schema, ...extra });
  topic(TOPICS.links, 'LinkBatch');
  topic(TOPICS.fetchRequests, 'FetchRequest');
  topic(TOPICS.fetchResults, 'FetchResult');
  topic(TOPICS.fetched, 'FetchedPage', { maxMessageBytes: config.maxBodyBytes + 1024 * 1024 });
  topic(TOPICS.pageRecords, 'PageRecord', { keep: true });
  topic(TOPICS.control, 'ControlCommand', { keep: true });

  t.addSource('links-source', TOPICS.links);
  t.addSource('fetch-results-source', TOPICS.fetchResults);
  t.addSource('control-source', TOPICS.control);
  // the frontier reads page records back to see which sites are mostly duplicates
  t.addSource('page-records-source', TOPICS.pageRecords);
  t.addProcessor('frontier', () => new FrontierProcessor(config), ['links-source', 'fetch-results-source', 'control-source', 'page-records-source']);
  t.addSink(FETCH_REQUESTS_SINK, TOPICS.fetchRequests, 'frontier');
  for (const store of frontierStores()) t.addStateStore(store, 'frontier');

  t.addSource('fetch-requests-source', TOPICS.fetchRequests);
  // leases are committed as taken, before the fetch: a crash loses the fetch, never repeats it;
  // the frontier's lease expiry redoes lost ones, after a full gap
  t.addProcessor('fetcher', () => new FetcherProcessor(config), ['fetch-requests-source'], { concurrency: config.fetchConcurrency, commitInputs: 'before' });
  t.addSink(FETCH_RESULTS_SINK, TOPICS.fetchResults, 'fetcher');
  t.addSink(FETCHED_SINK, TOPICS.fetched, 'fetcher');

  t.addSource('fetched-source', TOPICS.fetched);
  t.addProcessor('parser', () => new ParserProcessor(config), ['fetched-source']);
  t.addSink(PAGE_RECORDS_SINK, TOPICS.pageRecords, 'parser');
  t.addSink(LINKS_SINK, TOPICS.links, 'parser');
  t.addStateStore(keyValueStore(RECORDED_STORE, bufferCodec, bufferCodec), 'parser');
  t.addStateStore(warcStore(warcDir, config.warcMaxFileBytes), 'parser');
  // duplicates are found within a parser partition (one site's pages): see docs/SCHEMAS.md
  for (const store of dedupeStores()) t.addStateStore(store, 'parser');
  return t;
}

export { HOSTS_STORE, QUEUE_STORE, SEEN_STORE, META_STORE };
