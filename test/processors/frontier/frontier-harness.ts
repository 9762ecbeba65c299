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
  static async open(config: CrawlConfig, addressLookup: AddressLookup = NO_ADDRESSES): Promise<FrontierHarness> {
    // the parser's WARC directory is never written: only the frontier's sub-topology runs
    const topology = crawlTopology({
      config,
      partitions: 1,
      warcDir: join(tmpdir(), 'crawlstream-no-warc'),
      addressLookup,
    });
    return new FrontierHarness(await TopologyTestDriver.open({ topology, sourceTopic: TOPICS.links }));
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

  feed(topic: string, key: string, value: unknown): void {
    void this.driver.pipeInput(topic, key, value);
  }

  /** Moves the clock forward in small steps, running due punctuators at each. */
  advance(ms: number, step = 100): Promise<void> {
    return this.driver.advanceWallClockTime(ms, step);
  }

  /** Requests whose commit has happened: the only ones a fetcher can see. */
  committed(): FetchRequest[] {
    return this.driver.committedOutput<FetchRequest>(TOPICS.fetchRequests).map((r) => r.value!);
  }

  commit(): void {
    this.driver.commit();
  }

  crash(): Promise<void> {
    return this.driver.crash();
  }

  close(): Promise<void> {
    return this.driver.close();
  }
}
