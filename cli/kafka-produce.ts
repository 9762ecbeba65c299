import { CrawlError } from '../core/errors.js';
import { tmpdir } from 'node:os';
import { validateCrawlConfig } from '../processors/common/crawl-config.js';
import { ConfluentSchemaRegistry } from '../runtime/engines/kafka/confluent-registry.js';
import { KafkaPort } from '../runtime/engines/kafka/kafka-port.js';
import type { ClusterSecurity } from '../runtime/engines/kafka/kafka-security.js';
import { partitionFor } from '../runtime/partitioner.js';
import { buildSerdes } from '../runtime/serdes.js';
import type { StreamRecord } from '../runtime/record.js';
import { APPLICATION_ID, crawlTopology } from '../topology/crawl-topology.js';

/**
 * Writes records to one of the topology's topics on Kafka, Avro-encoded through the registry
 * (registering the schema if needed) and placed by the Java murmur2 partitioner, as the engine
 * would. Idempotent producer; resolves when every record is acknowledged by all replicas.
 * `security`: TLS/SASL to the brokers and the registry's credentials (default: none).
 * `partitions`: the topics' partition count (`--partitions`), which places the records.
 * `topic` is logical: under another `applicationId` than APPLICATION_ID it is `<id>.<topic>` on the cluster.
 */
export async function produceToKafka(
  brokers: readonly string[],
  registryUrl: string,
  partitions: number,
  topic: string,
  records: readonly StreamRecord<string, unknown>[],
  security: ClusterSecurity = {},
  applicationId = APPLICATION_ID,
): Promise<void> {
  const topology = crawlTopology({
    config: validateCrawlConfig({}),
    partitions,
    warcDir: tmpdir(),
    applicationId,
  });
  topology.build();
  const serdes = await buildSerdes(topology, new ConfluentSchemaRegistry(registryUrl, security.registry));
  const spec = topology.topic(topic);
  const port = new KafkaPort(brokers, `${topology.applicationId}-cli`, undefined, security.kafka, topology);
  try {
    const admin = await port.admin();
    const physical = topology.physicalTopic(topic);
    const has = await admin.partitionCounts([physical]).finally(() => admin.close());
    if (has.get(physical) !== spec.partitions)
      throw new CrawlError(
        'CS_TOPOLOGY',
        has.has(physical)
          ? `topic ${physical} has ${has.get(physical)} partitions, --partitions says ${spec.partitions}: records would land on partitions the frontier does not expect; give the --partitions the topics were created with`
          : `topic ${physical} does not exist; run 'crawlstream topics create --brokers ${brokers.join(',')}${appIdFlag(applicationId)}' first`,
      );
    const producer = await port.producer();
    try {
      await producer.send(
        records.map((r) => {
          const key = serdes.key(topic).serialize(r.key);
          return {
            topic,
            partition: partitionFor(key, spec.partitions),
            key,
            value: serdes.value(topic).serialize(r.value),
            timestamp: r.timestamp,
          };
        }),
      );
    } finally {
      await producer.close();
    }
  } finally {
    await port.close();
  }
}

/** ` --app-id ID` for a command line suggested in a message; nothing for the default id. */
export function appIdFlag(applicationId: string): string {
  return applicationId === APPLICATION_ID ? '' : ` --app-id ${applicationId}`;
}
