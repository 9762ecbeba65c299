import { Topology } from '../runtime/topology.js';
import { TOPICS } from '../processors/common/topics.js';
import { stringSerde } from '../core/serde.js';
import type { CrawlConfig } from '../processors/common/crawl-config.js';
import {
  FetcherProcessor,
  FETCHED_SINK,
  FETCH_RESULTS_SINK,
  LEASES_WAITING,
} from '../processors/fetcher/fetcher-processor.js';
import { FrontierProcessor, FETCH_REQUESTS_SINK } from '../processors/frontier/frontier-processor.js';
import type { AddressLookup } from '../processors/frontier/host-addresses.js';
import { CachingDnsResolver, parseResolveRule } from '../processors/fetcher/dns-resolver.js';
import {
  frontierStores,
  HOSTS_STORE,
  META_STORE,
  QUEUE_STORE,
  SEEN_STORE,
} from '../processors/frontier/frontier-stores.js';
import {
  LINKS_SINK,
  PAGE_CONTENT_SINK,
  PAGE_RECORDS_SINK,
  PARSED_PAGES_SINK,
  ParserProcessor,
  parserStores,
  PARSER_LOOKAHEAD,
} from '../processors/parser/parser-processor.js';
import { MAX_URL_LENGTH } from '../processors/common/normalize.js';
import { FEED_LINK_BYTES } from '../processors/parser/feed-reader.js';
import { pageContentMaxBytes } from '../processors/parser/page-content.js';

import { APPLICATION_ID } from './application-id.js';

export { APPLICATION_ID };

export { TOPICS };

export interface CrawlTopologyOptions {
  readonly config: CrawlConfig;
  /** Partitions of every topic (and so tasks per stage). */
  readonly partitions: number;
  /** Where the parser writes WARC files. */
  readonly warcDir: string;
  /** How the frontier finds a new host's address for the per-IP limit; default: the fetcher's resolver rules and DNS. */
  readonly addressLookup?: AddressLookup;
  /**
   * The application id (`--app-id`): names the changelogs, dead letters, consumer groups and
   * transactional ids, and unless it is APPLICATION_ID prefixes the data topics on Kafka
   * (`<id>.links`), so crawls with different ids share a cluster and nothing else. Default APPLICATION_ID.
   */
  readonly applicationId?: string;
}

/** The frontier's address lookup: the same `--resolve` rules and DNS the fetcher connects by, first address. */
export function resolverLookup(config: CrawlConfig): AddressLookup {
  const resolver = new CachingDnsResolver({ rules: config.resolve.map(parseResolveRule), systemDns: config.systemDns });
  return (host) =>
    resolver.resolve(host).then(
      (addresses) => addresses[0] ?? null,
      () => null,
    );
}

/**
 * The crawler's dataflow, declared once for every engine:
 *
 *   links ─┐
 *          ├─> frontier ──> fetch-requests ──> fetcher ──┬─> fetch-results ─> (frontier)
 *   fetch-results ┘                                     └─> fetched (by payload digest) ──> parser ─┬─> page-records
 *                                                                 parsed-pages (by site) <──┘ <──┘  └─> links ─> (frontier)
 *
 * The parser reads two co-partitioned topics with different keys: `fetched` by payload digest
 * (exact duplicates across sites meet there) and its own `parsed-pages` by site (near duplicates,
 * URLs recorded once, publishing). See processors/parser/parser-processor.ts.
 */
export function crawlTopology({
  config,
  partitions,
  warcDir,
  addressLookup,
  applicationId = APPLICATION_ID,
}: CrawlTopologyOptions): Topology {
  const lookup = addressLookup ?? resolverLookup(config);
  // the default id keeps the bare topic names of every existing deployment
  const t = new Topology(applicationId, {
    topicPrefix: applicationId === APPLICATION_ID ? '' : `${applicationId}.`,
    memoryBudgetBytes: config.memoryBudgetBytes,
  });
  const topic = (
    name: string,
    schema: Parameters<Topology['addTopic']>[0]['schema'],
    extra: { maxMessageBytes?: number; keep?: boolean } = {},
  ) => t.addTopic({ name, partitions, keySerde: stringSerde, schema, ...extra });
  topic(TOPICS.links, 'LinkBatch', { maxMessageBytes: linkBatchMaxBytes(config) });
  topic(TOPICS.fetchRequests, 'FetchRequest');
  topic(TOPICS.fetchResults, 'FetchResult');
  topic(TOPICS.fetched, 'FetchedPage', { maxMessageBytes: config.maxBodyBytes + 1024 * 1024 });
  topic(TOPICS.parsedPages, 'ParsedPage', { maxMessageBytes: parsedPageMaxBytes(config) });
  topic(TOPICS.pageRecords, 'PageRecord', { keep: true });
  // content has a topic of its own: the frontier reads page-records back and needs none of it
  topic(TOPICS.pageContent, 'PageContent', { maxMessageBytes: pageContentMaxBytes(config) });
  topic(TOPICS.control, 'ControlCommand', { keep: true });

  t.addSource('links-source', TOPICS.links);
  t.addSource('fetch-results-source', TOPICS.fetchResults);
  t.addSource('control-source', TOPICS.control);
  // the frontier reads page records back to see which sites are mostly duplicates
  t.addSource('page-records-source', TOPICS.pageRecords);
  t.addProcessor('frontier', () => new FrontierProcessor(config, lookup, partitions), [
    'links-source',
    'fetch-results-source',
    'control-source',
    'page-records-source',
  ]);
  t.addSink(FETCH_REQUESTS_SINK, TOPICS.fetchRequests, 'frontier');
  for (const store of frontierStores()) t.addStateStore(store, 'frontier');

  t.addSource('fetch-requests-source', TOPICS.fetchRequests);
  // leases are committed as taken, before the fetch: a crash loses the fetch, never repeats it;
  // the frontier's lease expiry redoes lost ones, after a full gap
  // fetches are limited inside (fetch permits); leases waiting for their start count only here
  t.addProcessor('fetcher', () => new FetcherProcessor(config), ['fetch-requests-source'], {
    concurrency: config.fetchConcurrency + LEASES_WAITING,
    commitInputs: 'before',
  });
  t.addSink(FETCH_RESULTS_SINK, TOPICS.fetchResults, 'fetcher');
  t.addSink(FETCHED_SINK, TOPICS.fetched, 'fetcher');

  addParser(t, config, warcDir);
  return t;
}

/**
 * The parser's sources, processor, sinks and stores, on topics `fetched`, `parsed-pages`,
 * `page-records`, `page-content` and `links` already declared in `t` (with equal partition counts for the first two).
 */
export function addParser(t: Topology, config: CrawlConfig, warcDir: string): void {
  t.addSource('fetched-source', TOPICS.fetched);
  t.addSource('parsed-pages-source', TOPICS.parsedPages);
  t.addProcessor('parser', () => new ParserProcessor(config), ['fetched-source', 'parsed-pages-source'], {
    lookahead: config.threads > 1 ? PARSER_LOOKAHEAD : 1,
  });
  t.addSink(PARSED_PAGES_SINK, TOPICS.parsedPages, 'parser');
  t.addSink(PAGE_RECORDS_SINK, TOPICS.pageRecords, 'parser');
  t.addSink(PAGE_CONTENT_SINK, TOPICS.pageContent, 'parser');
  t.addSink(LINKS_SINK, TOPICS.links, 'parser');
  for (const store of parserStores(config, warcDir)) t.addStateStore(store, 'parser');
}

/**
 * Largest `parsed-pages` value: up to maxOutlinksPerPage links of up to MAX_URL_LENGTH (or a
 * sitemap's URLs, up to FEED_LINK_BYTES of them), plus the page's content (a `page-content`
 * record) and its own fields.
 */
export function parsedPageMaxBytes(config: CrawlConfig): number {
  return (
    Math.max(config.maxOutlinksPerPage * (MAX_URL_LENGTH + 16), FEED_LINK_BYTES) +
    pageContentMaxBytes(config) +
    1024 * 1024
  );
}

/** Seeds are sent in batches of at most this many links (one site each), like a page's outlinks. */
export const SEED_BATCH_LINKS = 1_000;

/** Largest `links` value: one page's outlinks to one site, or one seed batch, of URLs up to MAX_URL_LENGTH. */
export function linkBatchMaxBytes(config: CrawlConfig): number {
  return Math.max(config.maxOutlinksPerPage, SEED_BATCH_LINKS) * (MAX_URL_LENGTH + 16) + 1024 * 1024;
}

export { HOSTS_STORE, QUEUE_STORE, SEEN_STORE, META_STORE };
