import { silentLogger } from '../../../core/logger.js';
import fs from 'node:fs';
import path from 'node:path';
import { defaultCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import { DIGESTS_STORE, ORIGINALS_STORE, SIMHASH_STORE, digestEntrySerde } from '../../../processors/parser/dedupe.js';
import { isDedupable } from '../../../processors/common/payload.js';
import {
  LINKS_SINK,
  PAGE_CONTENT_SINK,
  PAGE_RECORDS_SINK,
  PARSED_PAGES_SINK,
  ParserProcessor,
  RECORDED_STORE,
} from '../../../processors/parser/parser-processor.js';
import { sha1Digest } from '../../../processors/common/payload.js';
import { WARC_STORE, WarcStore } from '../../../processors/parser/warc-store.js';
import { WarcWriter } from '../../../processors/parser/warc-writer.js';
import { Metrics } from '../../../core/metrics.js';
import { partitionFor } from '../../../runtime/partitioner.js';
import type { ProcessorContext } from '../../../runtime/processor.js';
import { loadSchema } from '../../../schemas/index.js';
import type { FetchedPage, LinkBatch, PageContent, PageRecord } from '../../../schemas/types.js';
import { openRocks, type RocksPort } from '../../../state/rocks.js';
import { RocksKeyValueStore } from '../../../state/rocks-store.js';
import { type StateStore } from '../../../state/state-store.js';
import { bufferSerde, stringSerde } from '../../../core/serde.js';
import { TOPICS } from '../../../processors/common/topics.js';

interface Task {
  parser: ParserProcessor;
  stores: RocksKeyValueStore<unknown, unknown>[];
  writer: WarcWriter;
  topic: string;
}

/**
 * `partitions` parser tasks on real RocksDB stores and WARC writers, with the topics between them
 * played by one FIFO queue: a record goes to the task of `partitionFor(key)`, as the engines
 * route it, and is Avro-encoded and decoded on the way. Records keep their order per topic and
 * partition, as in a log. `commit()` applies pending store writes and fsyncs WARC files.
 */
export class ParserTasks {
  readonly records: PageRecord[] = [];
  /** What went to `page-content`, in order. */
  readonly contents: PageContent[] = [];
  readonly links: LinkBatch[] = [];
  readonly metrics = new Metrics();
  private readonly tasks: Task[] = [];
  private readonly queue: { topic: string; key: string; value: unknown }[] = [];
  private offset = 0;

  private constructor(
    readonly partitions: number,
    readonly warcDir: string,
    private readonly config: CrawlConfig,
  ) {}

  /** Opens (or reopens, after `close()`) the tasks with their state under `dir`. */
  static async open(dir: string, partitions: number, config: CrawlConfig = defaultCrawlConfig): Promise<ParserTasks> {
    const tasks = new ParserTasks(partitions, path.join(dir, 'warc'), config);
    for (let p = 0; p < partitions; p++) await tasks.openTask(path.join(dir, `db-${p}`), p);
    return tasks;
  }

  /** A fetch as the fetcher forwards it: keyed by payload digest when it takes part in duplicate detection. */
  fetched(page: FetchedPage): void {
    const value = { ...page, payloadDigest: isDedupable(page) ? sha1Digest(page.body) : null };
    this.queue.push({ topic: TOPICS.fetched, key: value.payloadDigest ?? value.site, value });
  }

  /** Processes queued records, and everything they cause, until nothing is left. */
  drain(): void {
    for (let r = this.queue.shift(); r !== undefined; r = this.queue.shift()) {
      const result = this.hand(r);
      if (result instanceof Promise) throw new Error('the parser answered later: use drainAhead with threads > 1');
    }
  }

  /**
   * `drain` as an engine with lookahead runs the parser: up to `lookahead` records handed in before
   * the earlier ones have finished (needed when `config.threads` > 1).
   */
  async drainAhead(lookahead: number): Promise<void> {
    const inFlight: Promise<void>[] = [];
    for (;;) {
      const r = this.queue.shift();
      if (r === undefined) {
        if (inFlight.length === 0) return;
        await inFlight.shift();
        continue;
      }
      const result = this.hand(r);
      if (result instanceof Promise) inFlight.push(result);
      while (inFlight.length >= lookahead) await inFlight.shift();
    }
  }

  private hand(r: { topic: string; key: string; value: unknown }): void | Promise<void> {
    const type = loadSchema(r.topic === TOPICS.fetched ? 'FetchedPage' : 'ParsedPage').type;
    const task = this.tasks[partitionFor(Buffer.from(r.key, 'utf8'), this.partitions)]!;
    task.topic = r.topic;
    return task.parser.process({
      key: r.key,
      value: type.fromBuffer(type.toBuffer(r.value)) as never,
      timestamp: Date.now(),
    });
  }

  commit(): void {
    this.offset++;
    for (const t of this.tasks) {
      for (const s of t.stores) s.applyCommitted(this.offset);
      t.writer.flush();
    }
  }

  async close(): Promise<void> {
    for (const t of this.tasks) {
      t.parser.close();
      t.writer.close();
    }
    await Promise.all(this.dbs.map((db) => db.close()));
  }

  /** WARC files written, final names. */
  warcFiles(): string[] {
    return fs
      .readdirSync(this.warcDir)
      .filter((f) => f.endsWith('.warc.gz'))
      .sort()
      .map((f) => path.join(this.warcDir, f));
  }

  private readonly dbs: RocksPort[] = [];

  private async openTask(dbDir: string, partition: number): Promise<void> {
    const db = await openRocks(dbDir);
    this.dbs.push(db);
    const stores: RocksKeyValueStore<unknown, unknown>[] = [
      new RocksKeyValueStore(RECORDED_STORE, db, bufferSerde, bufferSerde),
      new RocksKeyValueStore(DIGESTS_STORE, db, stringSerde, digestEntrySerde),
      new RocksKeyValueStore(SIMHASH_STORE, db, bufferSerde, bufferSerde),
      new RocksKeyValueStore(ORIGINALS_STORE, db, stringSerde, stringSerde),
    ] as RocksKeyValueStore<unknown, unknown>[];
    const byName = new Map<string, StateStore>(stores.map((s) => [s.name, s]));
    const writer = new WarcWriter({ dir: this.warcDir, partition });
    writer.open();
    byName.set(WARC_STORE, new WarcStore(writer));
    const task: Task = { parser: new ParserProcessor(this.config), stores, writer, topic: TOPICS.fetched };
    const context: ProcessorContext<string, unknown> = {
      applicationId: 'test',
      taskId: { subtopology: 2, partition },
      metrics: this.metrics,
      log: silentLogger,
      get recordMetadata() {
        return { topic: task.topic, partition, offset: 0 };
      },
      forward: (r, child) => {
        if (child === PAGE_RECORDS_SINK) this.records.push(r.value as PageRecord);
        else if (child === LINKS_SINK) this.links.push(r.value as LinkBatch);
        else if (child === PAGE_CONTENT_SINK) this.contents.push(r.value as PageContent);
        else if (child === PARSED_PAGES_SINK)
          this.queue.push({ topic: TOPICS.parsedPages, key: r.key as string, value: r.value });
        else throw new Error(`unknown child ${child}`);
      },
      schedule: () => ({ cancel() {} }),
      getStateStore: <S extends StateStore>(name: string) => byName.get(name) as S,
      commit: () => {},
      currentTimeMs: () => Date.now(),
      registerQuery: () => {},
    };
    task.parser.init(context as ProcessorContext<string, never>);
    this.tasks.push(task);
  }
}
