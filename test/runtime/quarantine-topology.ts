import { CrawlError } from '../../core/errors.js';
import { stringSerde, type Serde } from '../../core/serde.js';
import { partitionFor } from '../../runtime/partitioner.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { Topology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore } from '../../state/store-builder.js';

/** The topology of the quarantine tests on both engines (test/runtime and test/kafka task-quarantine.test.ts). */

export const STORE = 'marked';
export const POISONED = 1;

export const oneSerde: Serde<number> = {
  serialize: (n) => Buffer.from([n]),
  deserialize: (b) => b[0]!,
};

/**
 * Marks and forwards each word; on partition POISONED its state makes it throw, in `init` or in
 * a punctuator (after a write of its own, which must not be committed).
 */
class PoisonedOnOnePartition implements Processor<string, LinkBatch, string, LinkBatch> {
  private ctx!: ProcessorContext<string, LinkBatch>;
  private store!: KeyValueStore<string, number>;

  constructor(private readonly failIn: 'init' | 'punctuator') {}

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
    this.store = context.getStateStore<KeyValueStore<string, number>>(STORE);
    const poisoned = context.taskId.partition === POISONED;
    if (poisoned && this.failIn === 'init')
      throw new CrawlError('CS_STORE', 'init: this partition’s state is poisoned');
    context.schedule(10, () => {
      if (!poisoned || this.failIn !== 'punctuator') return;
      this.store.put('punctuated', 1);
      throw new CrawlError('CS_STORE', 'punctuator: this partition’s state is poisoned');
    });
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    this.store.put(record.key, 1);
    this.ctx.forward(record);
  }
}

export const quarantineTopology = (failIn: 'init' | 'punctuator', applicationId: string, prefix?: string): Topology =>
  new Topology(applicationId, prefix === undefined ? {} : { topicPrefix: prefix })
    .addTopic({ name: 'words', partitions: 4, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'marked', partitions: 4, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('mark', () => new PoisonedOnOnePartition(failIn) as Processor, ['words-source'])
    .addStateStore(keyValueStore(STORE, stringSerde, oneSerde), 'mark')
    .addSink('marked-sink', 'marked', 'mark');

/** The first key `word-N` that murmur2 puts on `partition` of 4. */
export function keyOn(partition: number): string {
  for (let n = 0; ; n++) if (partitionFor(Buffer.from(`word-${n}`), 4) === partition) return `word-${n}`;
}

export const word = (w: string): StreamRecord<string, LinkBatch> => ({
  key: w,
  value: { site: w, sourceUrl: null, discoveredAt: 1, links: [] },
  timestamp: 1_700_000_000_000,
});
