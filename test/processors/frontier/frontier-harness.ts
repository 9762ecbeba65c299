import type { Logger } from '../../../core/logger.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CrawlConfig } from '../../../processors/common/crawl-config.js';
import { NO_ADDRESSES, type AddressLookup } from '../../../processors/frontier/host-addresses.js';
import { TopologyTestDriver } from '../../../runtime/testing/topology-test-driver.js';
import type { StreamTask } from '../../../runtime/task.js';
import type { FetchRequest } from '../../../schemas/types.js';
import { crawlTopology, TOPICS } from '../../../topology/crawl-topology.js';

/**
 * The frontier task of partition 0 on the topology test driver (real StreamTask, real RocksDB
 * stores): records go in serialized as the engine would send them, time is a settable clock,
 * leases come out decoded. `commit()` and `crash()` are the driver's: an engine's commit, and a
 * crash between commits (uncommitted writes and outputs lost, uncommitted input replayed).
 */
export class FrontierHarness {
  private readonly seen: FetchRequest[] = [];

  private constructor(readonly driver: TopologyTestDriver) {}

  /** `addressLookup`: what the frontier learns of a new host's address (default: nothing, no per-IP limit before a fetch). */
  static async open(
    config: CrawlConfig,
    addressLookup: AddressLookup = NO_ADDRESSES,
    logger?: Logger,
  ): Promise<FrontierHarness> {
    // the parser's WARC directory is never written: only the frontier's sub-topology runs
    const topology = crawlTopology({
      config,
      partitions: 1,
      warcDir: join(tmpdir(), 'crawlstream-no-warc'),
      addressLookup,
    });
    return new FrontierHarness(
      await TopologyTestDriver.open({ topology, sourceTopic: TOPICS.links, ...(logger ? { logger } : {}) }),
    );
  }

  get task(): StreamTask {
    return this.driver.task;
  }

  get clock(): number {
    return this.driver.now;
  }

  set clock(t: number) {
    this.driver.now = t;
  }

  /** Every request the frontier forwarded (since the last crash: lost ones go), oldest first. */
  get requests(): FetchRequest[] {
    const out = this.driver.output<FetchRequest>(TOPICS.fetchRequests);
    if (out.length < this.seen.length) this.seen.length = out.length;
    for (let i = this.seen.length; i < out.length; i++) this.seen.push(out[i]!.value!);
    return this.seen;
  }

  /** The key of every request forwarded (since the last crash), oldest first: what places it on a fetcher partition. */
  get requestKeys(): (string | null)[] {
    return this.driver.output<FetchRequest>(TOPICS.fetchRequests).map((r) => r.key as string | null);
  }

  /**
   * Hands a record to the task now, or, while an earlier one is still being processed (a link
   * batch waiting for the seen-set's runs), after it, in order, as an engine would: `advance`,
   * `crash` and `close` wait for those first.
   */
  feed(topic: string, key: string, value: unknown): void {
    const raw = this.driver.encode(topic, key, value);
    if (this.pending !== undefined) {
      this.pending = this.pending.then(() => this.driver.pipeRawInput(raw));
      return;
    }
    const result = this.driver.pipeRawInput(raw);
    if (result instanceof Promise) this.pending = result;
  }

  /** Resolves once every record fed has been processed; rejects with the first one's error. */
  async settled(): Promise<void> {
    while (this.pending !== undefined) {
      const pending = this.pending;
      try {
        await pending;
      } finally {
        if (this.pending === pending) this.pending = undefined;
      }
    }
  }

  private pending: Promise<void> | undefined;

  /** Moves the clock forward in small steps, running due punctuators at each. */
  async advance(ms: number, step = 100): Promise<void> {
    await this.settled();
    return this.driver.advanceWallClockTime(ms, step);
  }

  /** Requests whose commit has happened: the only ones a fetcher can see. */
  committed(): FetchRequest[] {
    return this.driver.committedOutput<FetchRequest>(TOPICS.fetchRequests).map((r) => r.value!);
  }

  commit(): void {
    this.driver.commit();
  }

  async crash(): Promise<void> {
    await this.settled();
    return this.driver.crash();
  }

  async close(): Promise<void> {
    await this.settled().catch(() => undefined);
    return this.driver.close();
  }
}
