import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metrics } from '../../../runtime/metrics.js';
import { buildSerdes } from '../../../runtime/serdes.js';
import { StreamTask } from '../../../runtime/task.js';
import type { CrawlConfig } from '../../../processors/crawl-config.js';
import { crawlTopology, TOPICS } from '../../../topology/crawl-topology.js';
import { openRocks, type RocksPort } from '../../../state/rocks.js';
import type { StateStore } from '../../../state/state-store.js';
import type { SchemaRegistry } from '../../../schemas/index.js';
import type { FetchRequest } from '../../../schemas/types.js';

class MemoryRegistry implements SchemaRegistry {
  private readonly schemas: string[] = [];
  async register(_subject: string, text: string): Promise<number> {
    const i = this.schemas.indexOf(text);
    return i >= 0 ? i + 1 : this.schemas.push(text);
  }
  async schemaById(id: number): Promise<string> {
    return this.schemas[id - 1]!;
  }
}

/**
 * The frontier task of partition 0 on real RocksDB stores, driven by hand: records go in
 * serialized as the engine would send them, time is a settable clock, leases come out decoded.
 */
export class FrontierHarness {
  readonly requests: FetchRequest[] = [];
  clock = 1_000_000;
  private offset = 0;

  private constructor(readonly task: StreamTask, private readonly feedRaw: (topic: string, key: string, value: unknown) => void, private readonly db: RocksPort, private readonly dir: string) {}

  static async open(config: CrawlConfig): Promise<FrontierHarness> {
    const dir = mkdtempSync(join(tmpdir(), 'crawlstream-frontier-'));
    const topology = crawlTopology({ config, partitions: 1, warcDir: join(dir, 'warc') });
    const sub = topology.build().find((s) => s.sourceTopics.includes(TOPICS.links))!;
    const serdes = await buildSerdes(topology, new MemoryRegistry());
    const db = await openRocks(join(dir, 'rocks'));
    const stores = new Map<string, StateStore>();
    for (const b of sub.stores) stores.set(b.name, b.build({ taskId: { subtopology: sub.id, partition: 0 }, db, dir }));
    // eslint-disable-next-line prefer-const
    let h: FrontierHarness;
    const task = new StreamTask({ subtopology: sub.id, partition: 0 }, sub, topology, {
      send: (topic, _p, _k, value) => {
        if (topic === TOPICS.fetchRequests && value) h.requests.push(serdes.value(topic).deserialize(value) as FetchRequest);
      },
    }, stores, serdes, new Metrics(), () => h.clock);
    h = new FrontierHarness(task, (topic, key, value) => {
      task.process({ topic, partition: 0, offset: h.offset++, timestamp: h.clock, key: Buffer.from(key), value: serdes.value(topic).serialize(value) });
    }, db, dir);
    task.init();
    return h;
  }

  feed(topic: string, key: string, value: unknown): void {
    this.feedRaw(topic, key, value);
  }

  /** Moves the clock forward in small steps, running due punctuators at each. */
  async advance(ms: number, step = 100): Promise<void> {
    for (let t = 0; t < ms; t += step) {
      this.clock += step;
      await Promise.all(this.task.punctuate(this.clock));
    }
  }

  async close(): Promise<void> {
    await this.task.close();
    await this.db.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
