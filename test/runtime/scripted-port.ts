import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { taskIdString } from '../../core/ids.js';
import { stringSerde, type Serde } from '../../core/serde.js';
import {
  rangeKey,
  type ChangelogRecord,
  type ChangelogSource,
  type ReplayRange,
} from '../../runtime/changelog-source.js';
import type {
  GroupConsumer,
  TopicPartitionOffset,
  TransactionalProducer,
} from '../../runtime/engines/kafka/kafka-port.js';
import type { TaskPort } from '../../runtime/engines/kafka/task-manager.js';
import type { OutputRecord } from '../../runtime/output-collector.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import type { StreamRecord } from '../../runtime/record.js';
import { Topology, type Subtopology } from '../../runtime/topology.js';
import type { LinkBatch } from '../../schemas/types.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore } from '../../state/store-builder.js';

/**
 * A scripted Kafka for the task, task-state and task-manager tests: the engine's port interfaces
 * (TaskPort, TransactionalProducer, ChangelogSource, GroupConsumer) answered from memory, with
 * faults injected by script. Real stores on a real RocksDB sit on top of it: only the broker is fake.
 */

export const APP = 'scripted';
export const STORE = 'counts';
export const CHANGELOG = `${APP}-${STORE}-changelog`;

const countSerde: Serde<number> = {
  serialize: (n) => Buffer.from(String(n)),
  deserialize: (b) => Number(b.toString()),
};

/** Counts records per key in `counts` and forwards the running count to `totals`. */
class Counter implements Processor<string, LinkBatch, string, LinkBatch> {
  private ctx!: ProcessorContext<string, LinkBatch>;
  private store!: KeyValueStore<string, number>;

  init(context: ProcessorContext<string, LinkBatch>): void {
    this.ctx = context;
    this.store = context.getStateStore<KeyValueStore<string, number>>(STORE);
  }

  process(record: StreamRecord<string, LinkBatch>): void {
    const n = (this.store.get(record.key) ?? 0) + 1;
    this.store.put(record.key, n);
    this.ctx.forward({ key: record.key, value: { ...record.value, discoveredAt: n }, timestamp: record.timestamp });
  }
}

export function countTopology(): { topology: Topology; sub: Subtopology } {
  const topology = new Topology(APP)
    .addTopic({ name: 'words', partitions: 2, keySerde: stringSerde, schema: 'LinkBatch' })
    .addTopic({ name: 'totals', partitions: 2, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('words-source', 'words')
    .addProcessor('counter', () => new Counter() as Processor, ['words-source'])
    .addStateStore(keyValueStore(STORE, stringSerde, countSerde), 'counter')
    .addSink('totals-sink', 'totals', 'counter');
  return { topology, sub: topology.build()[0]! };
}

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'crawlstream-scripted-'));
}

/** A deferred answer: the test settles it when the scenario calls for it (a commit held mid-flight). */
export class Held<T> {
  readonly promise: Promise<T>;
  resolve!: (value: T) => void;
  reject!: (err: unknown) => void;
  constructor() {
    this.promise = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

/**
 * Topic partitions in memory, with offsets as Kafka gives them: each committed transaction takes
 * one offset more than its records (the commit marker), so offsets have gaps and a partition's
 * end lies past its last record. Implements ChangelogSource over its changelog topics.
 */
export class ScriptedCluster implements ChangelogSource {
  readonly description = 'a scripted cluster';
  readonly logs = new Map<string, (ChangelogRecord & { topic: string })[]>();
  private readonly ends = new Map<string, number>();
  /** Committed input offsets per group and topic partition. */
  readonly offsets = new Map<string, number>();
  /** Records per `read` batch; the restore sees several batches. */
  batch = 2;
  /** When set, `read` throws it after this many batches (a crash mid-restore). */
  crashAfterBatches: number | undefined;
  /** Every `read` call's ranges, for assertions on what a restore asked for. */
  readonly reads: ReplayRange[][] = [];

  endOf(topic: string, partition: number): number {
    return this.ends.get(rangeKey(topic, partition)) ?? 0;
  }

  records(topic: string, partition: number): (ChangelogRecord & { topic: string })[] {
    return this.logs.get(rangeKey(topic, partition)) ?? [];
  }

  /** Appends one transaction's records and its marker; returns each partition's first offset. */
  append(records: readonly OutputRecord[]): Map<string, number> {
    const bases = new Map<string, number>();
    for (const r of records) {
      const key = rangeKey(r.topic, r.partition);
      const offset = this.endOf(r.topic, r.partition);
      if (!bases.has(key)) bases.set(key, offset);
      let log = this.logs.get(key);
      if (!log) this.logs.set(key, (log = []));
      log.push({ topic: r.topic, key: r.key, value: r.value, offset });
      this.ends.set(key, offset + 1);
    }
    for (const key of bases.keys()) this.ends.set(key, this.ends.get(key)! + 1); // the commit marker
    return bases;
  }

  /** What `tombstoneRetentionMs` answers for every changelog (a Kafka topic's delete.retention.ms). */
  deleteRetentionMs = Infinity;

  tombstoneRetentionMs(): Promise<number> {
    return Promise.resolve(this.deleteRetentionMs);
  }

  endOffsets(topic: string, partitions: number): Promise<number[]> {
    return Promise.resolve(Array.from({ length: partitions }, (_, p) => this.endOf(topic, p)));
  }

  async read(
    ranges: readonly ReplayRange[],
    onRecords: (topic: string, partition: number, records: readonly ChangelogRecord[]) => void,
  ): Promise<Map<string, number>> {
    this.reads.push([...ranges]);
    const checkpoints = new Map<string, number>();
    let batches = 0;
    for (const r of ranges) {
      const wanted = this.records(r.topic, r.partition).filter((x) => x.offset >= r.from && x.offset < r.to);
      for (let i = 0; i < wanted.length; i += this.batch) {
        if (this.crashAfterBatches !== undefined && batches >= this.crashAfterBatches)
          throw new CrawlError('CS_KAFKA', 'scripted: the broker went away mid-restore');
        await Promise.resolve();
        onRecords(r.topic, r.partition, wanted.slice(i, i + this.batch));
        batches++;
      }
      // read committed: the restore ends at the end offset, past the last commit marker
      checkpoints.set(rangeKey(r.topic, r.partition), r.to);
    }
    return checkpoints;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** One scripted answer of a commit: as a broker would, a failure, or held until the test settles it. */
export type CommitAnswer = 'ok' | CrawlError | Held<void>;

/** A transactional producer whose commits append to the scripted cluster, or fail as scripted. */
export class ScriptedProducer implements TransactionalProducer {
  readonly commits: { records: readonly OutputRecord[]; groupId: string; offsets: readonly TopicPartitionOffset[] }[] =
    [];
  /** Answers for the next commits, in order; 'ok' when none is left. */
  readonly answers: CommitAnswer[] = [];
  closed = false;

  constructor(
    private readonly cluster: ScriptedCluster,
    readonly transactionalId: string,
  ) {}

  async commit(
    records: readonly OutputRecord[],
    groupId: string,
    offsets: readonly TopicPartitionOffset[],
  ): Promise<Map<string, number>> {
    if (this.closed) throw new CrawlError('CS_KAFKA', 'scripted: the producer is closed');
    this.commits.push({ records, groupId, offsets });
    const answer = this.answers.shift() ?? 'ok';
    if (answer instanceof Held) await answer.promise;
    else if (answer !== 'ok') throw answer;
    const bases = this.cluster.append(records);
    for (const o of offsets) this.cluster.offsets.set(`${groupId}\u0000${rangeKey(o.topic, o.partition)}`, o.offset);
    return bases;
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

/** The task manager's port over a scripted cluster; `openFaults` makes the next producer creations fail (a Held one when the test rejects it). */
export class ScriptedTaskPort implements TaskPort {
  readonly producers: ScriptedProducer[] = [];
  readonly openFaults: unknown[] = [];
  /** Calls in order (`fence 0_1`, `committed 0_1`), to check the opening's order. */
  readonly calls: string[] = [];

  constructor(
    readonly changelogs: ScriptedCluster,
    private readonly groupId: string,
  ) {}

  transactionalProducer(transactionalId: string): Promise<TransactionalProducer> {
    this.calls.push(`fence ${transactionalId}`);
    const fault = this.openFaults.shift();
    // a Held fault: the creation hangs until the test rejects it (a broker call failing late)
    if (fault instanceof Held) return fault.promise.then(() => Promise.reject(new Error('a held fault resolved')));
    if (fault !== undefined) return Promise.reject(fault);
    const producer = new ScriptedProducer(this.changelogs, transactionalId);
    this.producers.push(producer);
    return Promise.resolve(producer);
  }

  committedInputs(sub: Subtopology, partition: number): Promise<TopicPartitionOffset[]> {
    this.calls.push(`committed ${taskIdString({ subtopology: sub.id, partition })}`);
    return Promise.resolve(
      sub.sourceTopics.map((topic) => ({
        topic,
        partition,
        offset: this.changelogs.offsets.get(`${this.groupId}\u0000${rangeKey(topic, partition)}`) ?? 0,
      })),
    );
  }
}

/** A group member's consumer that records what the task manager asks of it. */
export class ScriptedConsumer implements GroupConsumer {
  readonly calls: string[] = [];
  rejoins = 0;
  pause(topic: string, partition: number): void {
    this.calls.push(`pause ${topic}-${partition}`);
  }
  resume(topic: string, partition: number): void {
    this.calls.push(`resume ${topic}-${partition}`);
  }
  seek(topic: string, partition: number, offset: number): void {
    this.calls.push(`seek ${topic}-${partition}@${offset}`);
  }
  rejoin(): Promise<void> {
    this.rejoins++;
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Resolves once `cond()` holds; the bound turns a hang into a failure and is no speed requirement. */
export async function until(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
