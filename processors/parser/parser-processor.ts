import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { CrawlError } from '../../core/errors.js';
import { M } from '../../core/metric-catalogue.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore, type StoreBuilder } from '../../state/store-builder.js';
import { bufferSerde } from '../../core/serde.js';
import type { FetchedPage, LinkBatch, PageContent, PageRecord, ParsedPage } from '../../schemas/types.js';
import { TOPICS } from '../common/topics.js';
import { productToken, type CrawlConfig } from '../common/crawl-config.js';
import { DIGESTS_STORE, ORIGINALS_STORE, PayloadIndex, SIMHASH_STORE, SiteDuplicates, dedupeStores } from './dedupe.js';
import { PageArchiver } from './page-archiver.js';
import { analysisRequest, header, wantsHtmlAnalysis } from './derive-page.js';
import { ParsePool, type PreparedBody } from './parse-pool.js';
import { isCompressedPayload } from './warc-records.js';
import { PageRecorder } from './page-recorder.js';
import { WARC_STORE, warcStore, type WarcStore } from './warc-store.js';
import { WarcShipping, uploadsStore } from './warc-shipping.js';
import { objectUri } from '../common/warc-store-target.js';
import { resourceFault } from '../../runtime/resource-pause.js';

/** Fingerprints of the URLs whose page record is published. Changelogged; site-keyed. */
export const RECORDED_STORE = 'parser-recorded';
export const PAGE_RECORDS_SINK = 'page-records-sink';
export const LINKS_SINK = 'links-sink';
export const PAGE_CONTENT_SINK = 'page-content-sink';
export const PARSED_PAGES_SINK = 'parsed-pages-sink';
/** Records of one parser task in flight at once when pages are analysed on worker threads. */
export const PARSER_LOOKAHEAD = 16;
/**
 * Bodies shorter than this are analysed on the task's thread: sending one to a worker and its
 * answer back costs about what parsing a page of a few KiB does (~0.05 ms).
 */
export const OFFLOAD_MIN_BYTES = 8 * 1024;

/** What the parser sends: page records, their content, links, and parsed pages to its own site-keyed half. */
export type ParserOutput = PageRecord | PageContent | LinkBatch | ParsedPage;

/** Every store of the parser: WARC output and its upload ledger, exact and near duplicate detection, URLs recorded. */
export function parserStores(config: CrawlConfig, warcDir: string): StoreBuilder[] {
  return [
    keyValueStore(RECORDED_STORE, bufferSerde, bufferSerde),
    warcStore(warcDir, config.warcMaxFileBytes),
    uploadsStore(),
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
 *
 * With `threads` > 1 the HTML of fetched pages of OFFLOAD_MIN_BYTES or more is analysed on a
 * ParsePool of `threads − 1` workers, and its payload deflated there for its WARC record, up to
 * PARSER_LOOKAHEAD records of a task at a time;
 * everything that reads or writes state (WARC, payload index, recorder) still runs on the task's
 * thread, one record after the other in the order the records came, so a record's effects are
 * never committed before an earlier record's.
 */
export class ParserProcessor implements Processor<string, FetchedPage | ParsedPage, string, ParserOutput> {
  private ctx!: ProcessorContext<string, ParserOutput>;
  private archiver!: PageArchiver;
  private recorder!: PageRecorder;
  private duplicates!: SiteDuplicates;
  private pool: ParsePool | undefined;
  private shipping: WarcShipping | undefined;
  private robotsToken = '';
  private gzipLevel = 0;
  /**
   * Settles when the last record handed in has taken effect or failed: with the resource fault
   * that failed it or one before it (see `inOrder`), else undefined. Itself undefined when no
   * record is pending.
   */
  private tail: Promise<Error | undefined> | undefined;
  private pending = 0;

  constructor(private readonly config: CrawlConfig) {}

  init(context: ProcessorContext<string, ParserOutput>): void {
    this.ctx = context;
    if (this.config.threads > 1) this.pool = ParsePool.acquire(this.config.threads - 1);
    this.robotsToken = productToken(this.config.userAgent);
    const warc = context.getStateStore<WarcStore>(WARC_STORE);
    this.gzipLevel = warc.writer.gzipLevel;
    const target = this.config.warcStore;
    if (target !== null) this.shipping = new WarcShipping(context, warc, target);
    // the upload outcomes exist from the start (0 without --warc-store), so a dashboard shows them
    for (const outcome of ['uploaded', 'failed']) context.metrics.inc(M.warcUploads, 0, outcome);
    const forwardParsed = (key: string, page: ParsedPage, timestamp: number) =>
      context.forward({ key, value: page, timestamp }, PARSED_PAGES_SINK);
    this.archiver = new PageArchiver(
      this.config,
      warc.writer,
      new PayloadIndex(context.getStateStore(DIGESTS_STORE)),
      context.metrics,
      forwardParsed,
    );
    this.duplicates = new SiteDuplicates(context.getStateStore(SIMHASH_STORE), context.getStateStore(ORIGINALS_STORE));
    this.recorder = new PageRecorder(
      context.getStateStore<KeyValueStore<Buffer, Buffer>>(RECORDED_STORE),
      this.duplicates,
      context.metrics,
      {
        pageRecord: (value, timestamp) => context.forward({ key: value.site, value, timestamp }, PAGE_RECORDS_SINK),
        links: (value, timestamp) => context.forward({ key: value.site, value, timestamp }, LINKS_SINK),
        pageContent: (value, timestamp) => context.forward({ key: value.site, value, timestamp }, PAGE_CONTENT_SINK),
        parsedPage: forwardParsed,
      },
      undefined,
      (file) => (target === null ? null : objectUri(target, file)),
    );
  }

  process(record: StreamRecord<string, FetchedPage | ParsedPage>): void | Promise<void> {
    const topic = this.ctx.recordMetadata?.topic;
    switch (topic) {
      case TOPICS.fetched: {
        const page = record.value as FetchedPage;
        const offload = this.pool !== undefined && page.body.length >= OFFLOAD_MIN_BYTES;
        const contentType = offload ? header(page, 'content-type') : null;
        const prepared =
          offload && wantsHtmlAnalysis(page, contentType)
            ? this.pool!.analyze(
                analysisRequest(page, contentType, { config: this.config, robotsToken: this.robotsToken }),
                storesDeflated(page) ? this.gzipLevel : undefined,
              )
            : undefined;
        if (prepared !== undefined) this.ctx.metrics.inc(M.parserPagesOffloaded);
        return this.inOrder(prepared, (p) => this.archiver.archive(page, record.timestamp, p?.analysis, p?.deflated));
      }
      case TOPICS.parsedPages:
        return this.inOrder(undefined, () => {
          this.recorder.record(record.key, record.value as ParsedPage, record.timestamp);
          const owner = String(this.ctx.taskId.partition);
          this.ctx.metrics.setGauge(M.cacheBytes, owner, this.duplicates.cacheBytes, 'near-dup-simhashes');
        });
      default:
        throw new CrawlError('CS_TOPOLOGY', `the parser does not read topic ${topic}`);
    }
  }

  close(): void {
    this.pool?.release();
    this.pool = undefined;
    this.shipping?.close();
    this.shipping = undefined;
  }

  /** With --warc-store: idle once no WARC file is open and every closed one is uploaded. */
  isIdle(): boolean {
    return this.shipping?.isIdle() ?? true;
  }

  /**
   * Runs `work` once every record handed in before has taken effect and `ready` (the page's
   * analysis) has settled: at once, synchronously, when nothing is pending. A failed record fails
   * alone: the next one still runs; except after a resource fault (a full WARC disk), which the
   * runtime retries: every record handed in after it then fails with the same fault, without
   * running, so none takes effect before it (runtime/processor.ts).
   */
  private inOrder(
    ready: Promise<PreparedBody | undefined> | undefined,
    work: (prepared: PreparedBody | undefined) => void,
  ): void | Promise<void> {
    if (this.tail === undefined && ready === undefined) return work(undefined);
    const before = this.tail;
    const done = (
      before === undefined
        ? ready!
        : Promise.all([ready, before]).then(([a, blocked]) => {
            if (blocked !== undefined) throw blocked;
            return a;
          })
    ).then(work);
    this.pending++;
    this.tail = done.then(
      () => this.settle(undefined),
      (err: unknown) => this.settle(resourceFault(err) === undefined ? undefined : (err as Error)),
    );
    return done;
  }

  private settle(fault: Error | undefined): Error | undefined {
    if (--this.pending === 0) this.tail = undefined;
    return fault;
  }
}

/**
 * Whether a fetched page's payload is likely to be deflated into a response record: a response
 * came, it is not a 304, and its payload is not compressed already (stored as is). A copy of an
 * earlier payload becomes a revisit instead; its deflated bytes are then unused.
 */
function storesDeflated(page: FetchedPage): boolean {
  if (page.status === 0 || page.status === 304 || page.errorCode === 'CS_REFUSED_TYPE') return false;
  return !isCompressedPayload(page.headers.map((h) => [h.name, h.value] as [string, string]));
}
