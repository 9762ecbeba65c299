import fs from 'node:fs';
import path from 'node:path';
import { Metrics } from '../../../core/metrics.js';
import { defaultCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import { isDedupable, sha1Digest } from '../../../processors/common/payload.js';
import { TOPICS } from '../../../processors/common/topics.js';
import { partitionFor } from '../../../runtime/partitioner.js';
import { TopologyTestDriver } from '../../../runtime/testing/topology-test-driver.js';
import type { FetchedPage, LinkBatch, PageContent, PageRecord } from '../../../schemas/types.js';
import { crawlTopology } from '../../../topology/crawl-topology.js';

/**
 * `partitions` parser tasks of the crawl topology, each on the topology test driver (the real
 * StreamTask, the parser's own store definitions on real RocksDB, WARC writers), with the topics
 * between them played by one FIFO queue: a record goes to the task of `partitionFor(key)`, as the
 * engines route it, and is Avro-encoded and decoded on the way. Records keep their order per
 * topic and partition, as in a log. `commit()` is the driver's: stores flushed (WARC files
 * fsynced) and their writes applied.
 */
export class ParserTasks {
  readonly records: PageRecord[] = [];
  /** What went to `page-content`, in order. */
  readonly contents: PageContent[] = [];
  readonly links: LinkBatch[] = [];
  readonly metrics = new Metrics();
  private readonly drivers: TopologyTestDriver[] = [];
  private readonly queue: { topic: string; key: string; value: unknown }[] = [];

  private constructor(
    readonly partitions: number,
    readonly warcDir: string,
  ) {}

  /** Opens (or reopens, after `close()`) the tasks with their state under `dir`. */
  static async open(dir: string, partitions: number, config: CrawlConfig = defaultCrawlConfig): Promise<ParserTasks> {
    const tasks = new ParserTasks(partitions, path.join(dir, 'warc'));
    const topology = crawlTopology({ config, partitions, warcDir: tasks.warcDir });
    for (let p = 0; p < partitions; p++)
      tasks.drivers.push(
        await TopologyTestDriver.open({
          topology,
          sourceTopic: TOPICS.fetched,
          partition: p,
          dir: path.join(dir, `db-${p}`),
          // the parser stamps what it writes with the clock: a real one, as a crawl's
          startTime: Date.now(),
          metrics: tasks.metrics,
          onOutput: (topic, r) => {
            if (topic === TOPICS.pageRecords) tasks.records.push(r.value as PageRecord);
            else if (topic === TOPICS.links) tasks.links.push(r.value as LinkBatch);
            else if (topic === TOPICS.pageContent) tasks.contents.push(r.value as PageContent);
            else if (topic === TOPICS.parsedPages) tasks.queue.push({ topic, key: r.key, value: r.value });
            else throw new Error(`the parser wrote to ${topic}`);
          },
        }),
      );
    return tasks;
  }

  /** A fetch as the fetcher forwards it: keyed by payload digest when it takes part in duplicate detection. */
  fetched(page: FetchedPage): void {
    const value = { ...page, payloadDigest: isDedupable(page) ? sha1Digest(page.body) : null };
    this.queue.push({ topic: TOPICS.fetched, key: value.payloadDigest ?? value.site, value });
  }

  /** A record another task wrote (e.g. the fetcher's `fetched` output), as it wrote it: queued for `drain`. */
  pipe(topic: string, key: string, value: unknown): void {
    this.queue.push({ topic, key, value });
  }

  /** How many records the parser takes in before the earlier ones finish, as an engine runs it (`drainAhead`). */
  get lookahead(): number {
    return this.drivers[0]!.task.lookahead;
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
    const driver = this.drivers[partitionFor(Buffer.from(r.key, 'utf8'), this.partitions)]!;
    driver.now = Date.now();
    return driver.pipeInput(r.topic, r.key, r.value);
  }

  commit(): void {
    for (const d of this.drivers) d.commit();
  }

  async close(): Promise<void> {
    for (const d of this.drivers) await d.close();
  }

  /** WARC files written, final names. */
  warcFiles(): string[] {
    return fs
      .readdirSync(this.warcDir)
      .filter((f) => f.endsWith('.warc.gz'))
      .sort()
      .map((f) => path.join(this.warcDir, f));
  }
}
