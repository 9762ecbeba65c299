import { join } from 'node:path';
import { CrawlError } from '../core/errors.js';
import { EmbeddedLog } from '../runtime/engines/embedded/log-store.js';
import { neverTruncated } from '../runtime/engines/embedded/log-retention.js';
import { FileSchemaRegistry } from '../runtime/engines/embedded/file-schema-registry.js';
import { readChangelogs } from '../runtime/engines/kafka/changelog-reader.js';
import { ConfluentSchemaRegistry } from '../runtime/engines/kafka/confluent-registry.js';
import { KafkaPort, type TransactionalProducer } from '../runtime/engines/kafka/kafka-port.js';
import type { ClusterSecurity } from '../runtime/engines/kafka/kafka-security.js';
import { partitionFor } from '../runtime/partitioner.js';
import { buildSerdes, type SerdeSet } from '../runtime/serdes.js';
import type { Topology } from '../runtime/topology.js';
import type { PageRecord } from '../schemas/types.js';
import { TOPICS } from '../topology/crawl-topology.js';

/** One record to write: a page record, its page content or a links batch, keyed by its site. */
export interface OutputRecord {
  topic: string;
  key: string;
  value: unknown;
  timestamp: number;
}

/** The topics a reparse writes to. */
const OUTPUT_TOPICS = [TOPICS.pageRecords, TOPICS.pageContent, TOPICS.links] as const;

/**
 * Where `replay reparse` writes: the page-records, page-content (and links) topics of an embedded
 * data dir or of a Kafka cluster. Single writer per destination.
 */
export interface ReparseOutput {
  /**
   * The identities (`<warcFile>@<warcOffset>`) of the reparsed page records under
   * `parserVersion` that are visible now: committed ones only (read_committed on Kafka). On
   * Kafka a record of a schema version registered after the output was opened is read too, its
   * writer schema fetched from the registry (CS_REGISTRY when the registry cannot be asked).
   */
  present(parserVersion: number): Promise<Set<string>>;
  /** Writes the records as one atomic unit: all visible, or (after a crash or failure) none. */
  write(records: readonly OutputRecord[]): Promise<void>;
  close(): Promise<void>;
}

/** Adds the identity of `r` to `ids` when it is a reparsed record of `parserVersion`. */
function addIdentity(ids: Set<string>, r: PageRecord, parserVersion: number): void {
  if (r.reparsed && r.parserVersion === parserVersion && r.warcFile !== null) ids.add(`${r.warcFile}@${r.warcOffset}`);
}

/**
 * The embedded data dir's log, opened for writing: refuses (CS_STORE) while a crawl holds it.
 * Each write is one fsynced RocksDB batch, the embedded engine's commit.
 */
export async function embeddedOutput(dataDir: string, topology: Topology): Promise<ReparseOutput> {
  let log: EmbeddedLog;
  try {
    log = await EmbeddedLog.open(join(dataDir, 'log'));
  } catch (err) {
    if (/lock/i.test((err as Error).message))
      throw new CrawlError('CS_STORE', `${dataDir} is in use by a running crawl; stop it first`, { cause: err });
    throw err;
  }
  try {
    const serdes = await buildSerdes(topology, new FileSchemaRegistry(dataDir));
    const partitions = new Map<string, number>();
    for (const topic of OUTPUT_TOPICS) {
      // every topic of a crawl has page-records' partition count; a data dir crawled before
      // page-content existed lacks it, and gets it here as the next crawl would make it
      const n = log.partitions(topic === TOPICS.pageContent ? TOPICS.pageRecords : topic);
      log.ensureTopic(topic, n);
      partitions.set(topic, n);
    }
    // as the crawl stores them: what retention never deletes is written once, beside the log's RocksDB
    for (const topic of neverTruncated(topology, topology.build())) log.storeApart(topic);
    return {
      present: async (parserVersion) => {
        const serde = serdes.value(TOPICS.pageRecords);
        const ids = new Set<string>();
        for (let p = 0; p < partitions.get(TOPICS.pageRecords)!; p++)
          for (let offset = log.startOffset(TOPICS.pageRecords, p); ;) {
            const batch = log.read(TOPICS.pageRecords, p, offset, 1000);
            if (batch.length === 0) break;
            for (const r of batch)
              if (r.value !== null) addIdentity(ids, serde.deserialize(r.value) as PageRecord, parserVersion);
            offset = batch[batch.length - 1]!.offset + 1;
          }
        return ids;
      },
      write: async (records) => {
        const appends = new Map<string, { topic: string; partition: number; records: RawOut[] }>();
        for (const r of encode(records, serdes, partitions)) {
          const tp = `${r.topic}\u0000${r.partition}`;
          let a = appends.get(tp);
          if (!a) appends.set(tp, (a = { topic: r.topic, partition: r.partition, records: [] }));
          a.records.push(r);
        }
        log.commit([...appends.values()], []);
      },
      close: () => log.close(),
    };
  } catch (err) {
    await log.close();
    throw err;
  }
}

interface RawOut {
  topic: string;
  partition: number;
  key: Buffer;
  value: Buffer;
  timestamp: number;
}

function encode(records: readonly OutputRecord[], serdes: SerdeSet, partitions: Map<string, number>): RawOut[] {
  return records.map((r) => {
    const key = serdes.key(r.topic).serialize(r.key);
    return {
      topic: r.topic,
      // placed as the engines place them: the Java murmur2 partitioner over the site
      partition: partitionFor(key, partitions.get(r.topic)!),
      key,
      value: serdes.value(r.topic).serialize(r.value),
      timestamp: r.timestamp,
    };
  });
}

/**
 * A Kafka cluster: each write is one transaction of a producer whose transactional id is fixed
 * per application (`<app>-reparse`), so starting fences a reparse that crashed mid-transaction
 * (its open transaction is aborted, never visible to read_committed consumers) before `present`
 * reads the topic.
 */
export async function kafkaOutput(
  brokers: readonly string[],
  registryUrl: string,
  topology: Topology,
  security: ClusterSecurity,
): Promise<ReparseOutput> {
  const serdes = await buildSerdes(topology, new ConfluentSchemaRegistry(registryUrl, security.registry));
  const port = new KafkaPort(brokers, `${topology.applicationId}-reparse`, undefined, security.kafka, topology);
  try {
    const partitions = new Map<string, number>();
    const admin = await port.admin();
    const physical = (topic: string): string => topology.physicalTopic(topic);
    try {
      // the metadata request fails as a whole on a missing topic: name the missing one first
      const existing = new Set(await admin.listTopics());
      const missing = OUTPUT_TOPICS.find((t) => !existing.has(physical(t)));
      if (missing !== undefined)
        throw new CrawlError(
          'CS_TOPOLOGY',
          missing === TOPICS.pageContent && existing.has(physical(TOPICS.pageRecords))
            ? `topic ${physical(missing)} does not exist on ${brokers.join(',')} (a cluster set up before it): make it with \`crawlstream topics create\``
            : `topic ${physical(missing)} does not exist on ${brokers.join(',')}: nothing was crawled there`,
        );
      const counts = await admin.partitionCounts(OUTPUT_TOPICS.map(physical));
      for (const topic of OUTPUT_TOPICS) partitions.set(topic, counts.get(physical(topic))!);
    } finally {
      await admin.close();
    }
    const producer: TransactionalProducer = await port.transactionalProducer(`${topology.applicationId}-reparse`);
    return {
      present: async (parserVersion) => {
        const serde = serdes.value(TOPICS.pageRecords);
        const ids = new Set<string>();
        const ranges = [...Array(partitions.get(TOPICS.pageRecords)!).keys()].map((partition) => ({
          topic: TOPICS.pageRecords,
          partition,
          from: 0,
        }));
        // values this run cannot read yet: most likely of a version a newer crawler registered
        // after this run built its serdes (a rolling upgrade under way)
        const unread: { topic: string; value: Buffer }[] = [];
        await readChangelogs(port, ranges, (_t, _p, batch) => {
          for (const r of batch) {
            if (r.value === null) continue;
            try {
              addIdentity(ids, serde.deserialize(r.value) as PageRecord, parserVersion);
            } catch {
              unread.push({ topic: TOPICS.pageRecords, value: r.value });
            }
          }
        });
        // their writer schemas fetched from the registry, as the engine does; one still unreadable
        // then (an id the registry does not know, an undecodable body) fails the run, as before
        await serdes.learnWriters(unread);
        for (const { value } of unread) addIdentity(ids, serde.deserialize(value) as PageRecord, parserVersion);
        return ids;
      },
      write: async (records) => {
        await producer.commit(encode(records, serdes, partitions), '', []);
      },
      close: async () => {
        await producer.close();
        await port.close();
      },
    };
  } catch (err) {
    await port.close();
    throw err;
  }
}
