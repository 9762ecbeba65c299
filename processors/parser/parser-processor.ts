import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { CrawlError } from '../../core/errors.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore, type StoreBuilder } from '../../state/store-builder.js';
import { bufferSerde } from '../../core/serde.js';
import type { FetchedPage, LinkBatch, PageRecord, ParsedPage } from '../../schemas/types.js';
import { TOPICS } from '../common/topics.js';
import type { CrawlConfig } from '../common/crawl-config.js';
import { DIGESTS_STORE, ORIGINALS_STORE, PayloadIndex, SIMHASH_STORE, SiteDuplicates, dedupeStores } from './dedupe.js';
import { PageArchiver } from './page-archiver.js';
import { PageRecorder } from './page-recorder.js';
import { WARC_STORE, warcStore, type WarcStore } from './warc-store.js';

/** Fingerprints of the URLs whose page record is published. Changelogged; site-keyed. */
export const RECORDED_STORE = 'parser-recorded';
export const PAGE_RECORDS_SINK = 'page-records-sink';
export const LINKS_SINK = 'links-sink';
export const PARSED_PAGES_SINK = 'parsed-pages-sink';

/** Every store of the parser: WARC output, exact and near duplicate detection, URLs recorded. */
export function parserStores(config: CrawlConfig, warcDir: string): StoreBuilder[] {
  return [
    keyValueStore(RECORDED_STORE, bufferSerde, bufferSerde),
    warcStore(warcDir, config.warcMaxFileBytes),
    ...dedupeStores(),
  ];
}

/**
 * The parser: one task per partition of two co-partitioned inputs with different keys.
 *
 * - `fetched`, keyed by payload digest (PageArchiver): archives every fetch in WARC — a payload
 *   seen before anywhere in the crawl as a revisit — parses HTML, and sends each final outcome
 *   on to `parsed-pages`.
 * - `parsed-pages`, keyed by site (PageRecorder): near duplicates within the site, each URL
 *   recorded once, page records and outlinks published.
 *
 * Both halves run in one task so one `run --role parser` runs the whole parser, and every
 * decision is in a changelogged store, committed with the outputs it caused.
 */
export class ParserProcessor implements Processor<
  string,
  FetchedPage | ParsedPage,
  string,
  PageRecord | LinkBatch | ParsedPage
> {
  private ctx!: ProcessorContext<string, PageRecord | LinkBatch | ParsedPage>;
  private archiver!: PageArchiver;
  private recorder!: PageRecorder;

  constructor(private readonly config: CrawlConfig) {}

  init(context: ProcessorContext<string, PageRecord | LinkBatch | ParsedPage>): void {
    this.ctx = context;
    const warc = context.getStateStore<WarcStore>(WARC_STORE);
    const forwardParsed = (key: string, page: ParsedPage, timestamp: number) =>
      context.forward({ key, value: page, timestamp }, PARSED_PAGES_SINK);
    this.archiver = new PageArchiver(
      this.config,
      warc.writer,
      new PayloadIndex(context.getStateStore(DIGESTS_STORE)),
      context.metrics,
      forwardParsed,
    );
    this.recorder = new PageRecorder(
      context.getStateStore<KeyValueStore<Buffer, Buffer>>(RECORDED_STORE),
      new SiteDuplicates(context.getStateStore(SIMHASH_STORE), context.getStateStore(ORIGINALS_STORE)),
      context.metrics,
      {
        pageRecord: (value, timestamp) => context.forward({ key: value.site, value, timestamp }, PAGE_RECORDS_SINK),
        links: (value, timestamp) => context.forward({ key: value.site, value, timestamp }, LINKS_SINK),
        parsedPage: forwardParsed,
      },
    );
  }

  process(record: StreamRecord<string, FetchedPage | ParsedPage>): void {
    const topic = this.ctx.recordMetadata?.topic;
    switch (topic) {
      case TOPICS.fetched:
        this.archiver.archive(record.value as FetchedPage, record.timestamp);
        return;
      case TOPICS.parsedPages:
        this.recorder.record(record.key, record.value as ParsedPage, record.timestamp);
        return;
      default:
        throw new CrawlError('CS_TOPOLOGY', `the parser does not read topic ${topic}`);
    }
  }
}
