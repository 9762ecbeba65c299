import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metrics } from '../../../core/metrics.js';
import { buildSerdes } from '../../../runtime/serdes.js';
import { StreamTask } from '../../../runtime/task.js';
import type { CrawlConfig } from '../../../processors/common/crawl-config.js';
import { crawlTopology, TOPICS } from '../../../topology/crawl-topology.js';
import { openRocks, type RocksPort } from '../../../state/rocks.js';
import type { StateStore } from '../../../state/state-store.js';
import { isChangelogged } from '../../../state/store-builder.js';
import type { ConsumedRawRecord } from '../../../runtime/record.js';
import { MemoryRegistry } from '../../../schemas/memory-registry.js';
import type { FetchRequest } from '../../../schemas/types.js';
import { NO_ADDRESSES, type AddressLookup } from '../../../processors/frontier/host-addresses.js';

/**
 * The frontier task of partition 0 on real RocksDB stores, driven by hand: records go in
 * serialized as the engine would send them, time is a settable clock, leases come out decoded.
 * `commit()` and `crash()` play the embedded engine's commit (store writes, outputs and input
 * positions at once) and a crash between commits (all of those lost, uncommitted input replayed).
 */
export class FrontierHarness {
  readonly requests: FetchRequest[] = [];
  clock = 1_000_000;
  task!: StreamTask;
  private offset = 0;
  private changelogOffset = 0;
  private committedRequests = 0;
  private uncommitted: ConsumedRawRecord[] = [];

  private constructor(
    private readonly build: (h: FrontierHarness) => StreamTask,
    private readonly serialize: (topic: string, value: unknown) => Buffer,
    private readonly stores: ReadonlyMap<string, StateStore>,
    private readonly db: RocksPort,
    private readonly dir: string,
  ) {}

  /** `addressLookup`: what the frontier learns of a new host's address (default: nothing, no per-IP limit before a fetch). */
  static async open(config: CrawlConfig, addressLookup: AddressLookup = NO_ADDRESSES): Promise<FrontierHarness> {
    const dir = mkdtempSync(join(tmpdir(), 'crawlstream-frontier-'));
    const topology = crawlTopology({ config, partitions: 1, warcDir: join(dir, 'warc'), addressLookup });
    const sub = topology.build().find((s) => s.sourceTopics.includes(TOPICS.links))!;
    const serdes = await buildSerdes(topology, new MemoryRegistry());
    const db = await openRocks(join(dir, 'rocks'));
    const stores = new Map<string, StateStore>();
    for (const b of sub.stores) stores.set(b.name, b.build({ taskId: { subtopology: sub.id, partition: 0 }, db, dir }));
    const build = (h: FrontierHarness) =>
      new StreamTask(
        { subtopology: sub.id, partition: 0 },
        sub,
        topology,
        {
          send: (topic, _p, _k, value) => {
            if (topic === TOPICS.fetchRequests && value)
              h.requests.push(serdes.value(topic).deserialize(value) as FetchRequest);
          },
        },
        stores,
        serdes,
        new Metrics(),
        () => h.clock,
      );
    const h = new FrontierHarness(build, (topic, value) => serdes.value(topic).serialize(value), stores, db, dir);
    h.task = build(h);
    h.task.init();
    return h;
  }

  feed(topic: string, key: string, value: unknown): void {
    const raw: ConsumedRawRecord = {
      topic,
      partition: 0,
      offset: this.offset++,
      timestamp: this.clock,
      key: Buffer.from(key),
      value: this.serialize(topic, value),
    };
    this.uncommitted.push(raw);
    this.task.process(raw);
  }

  /** Moves the clock forward in small steps, running due punctuators at each. */
  async advance(ms: number, step = 100): Promise<void> {
    for (let t = 0; t < ms; t += step) {
      this.clock += step;
      await Promise.all(this.task.punctuate(this.clock));
    }
  }

  /** Requests whose commit has happened: the only ones a fetcher can see. */
  committed(): FetchRequest[] {
    return this.requests.slice(0, this.committedRequests);
  }

  /** Commits store writes, outputs and input positions together, as the embedded engine does. */
  commit(): void {
    this.changelogOffset++;
    for (const s of this.stores.values()) if (isChangelogged(s)) s.applyCommitted(this.changelogOffset);
    this.committedRequests = this.requests.length;
    this.uncommitted = [];
  }

  /**
   * A crash between commits and a restart: uncommitted store writes and outputs are lost, a new
   * task opens the same stores, and the input consumed since the last commit is processed again.
   */
  async crash(): Promise<void> {
    for (const s of this.stores.values()) if (isChangelogged(s)) s.discardPending();
    this.requests.length = this.committedRequests;
    await this.task.close();
    this.task = this.build(this);
    this.task.init();
    const replay = this.uncommitted;
    this.uncommitted = [];
    for (const raw of replay) {
      this.uncommitted.push(raw);
      this.task.process(raw);
    }
  }

  async close(): Promise<void> {
    await this.task.close();
    await this.db.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
