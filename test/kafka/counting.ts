import { stringSerde, type Serde } from '../../core/serde.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore } from '../../state/store-builder.js';

/** The counting topology's store, changelogged. */
export const COUNTS = 'counts';
// 4 partitions: test/kafka/topics.test.ts expects it of every changelog on the broker
export const COUNT_PARTITIONS = 4;

const countSerde: Serde<number> = {
  serialize: (n) => Buffer.from(String(n)),
  deserialize: (b) => Number(b.toString()),
};

/**
 * words → counter → totals under `applicationId`'s own topic names: the counter keeps a count per
 * word in COUNTS and forwards each word as `word#count` (its count in `discoveredAt`), then calls
 * `seen` with the word, in this process.
 */
export function countingTopology(applicationId: string, seen: (word: string) => void = () => undefined): Topology {
  class Counter implements Processor<string, LinkBatch, string, LinkBatch> {
    private ctx!: ProcessorContext<string, LinkBatch>;
    private store!: KeyValueStore<string, number>;
    init(context: ProcessorContext<string, LinkBatch>): void {
      this.ctx = context;
      this.store = context.getStateStore<KeyValueStore<string, number>>(COUNTS);
    }
    process(record: StreamRecord<string, LinkBatch>): void {
      const n = (this.store.get(record.key) ?? 0) + 1;
      this.store.put(record.key, n);
      seen(record.key);
      this.ctx.forward({
        key: `${record.key}#${n}`,
        value: { ...record.value, discoveredAt: n },
        timestamp: record.timestamp,
      });
    }
  }
  return new Topology(applicationId, { topicPrefix: `${applicationId}.` })
    .addTopic({ name: 'words', partitions: COUNT_PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'totals', partitions: COUNT_PARTITIONS, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('counter', () => new Counter() as Processor, ['words-source'])
    .addStateStore(keyValueStore(COUNTS, stringSerde, countSerde), 'counter')
    .addSink('totals-sink', 'totals', 'counter');
}

/** A word record as the topology reads it. */
export function wordRecord(word: string): StreamRecord<string, LinkBatch> {
  return { key: word, value: { site: word, sourceUrl: null, discoveredAt: 1, links: [] }, timestamp: Date.now() };
}
