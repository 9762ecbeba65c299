import avro from 'avsc';
import { CrawlError } from '../core/errors.js';
import { stringSerde, type Serde } from '../core/serde.js';
import type { TopicSerdes } from './task.js';
import type { Topology } from './topology.js';
import { AvroSerde, loadSchema, type SchemaRegistry } from '../schemas/index.js';

/** The serdes of a topology's topics, with schema ids registered up front. */
export interface SerdeSet extends TopicSerdes {
  readonly schemaIds: ReadonlyMap<string, number>;
}

/** The registry subject of a topic's values (Confluent's TopicNameStrategy); `topic` is the cluster (physical) name. */
export function valueSubject(topic: string): string {
  return `${topic}-value`;
}

/**
 * Registers every topic's value schema (idempotent) and builds its serde. Earlier versions known to
 * the registry under the same subject stay readable, resolved to the current schema.
 */
export async function buildSerdes(
  topology: Topology,
  registry: SchemaRegistry & { versions?(subject: string): { id: number; schema: string }[] },
): Promise<SerdeSet> {
  const values = new Map<string, Serde<unknown>>();
  const ids = new Map<string, number>();
  for (const spec of topology.topics.values()) {
    const { text, type } = loadSchema(spec.schema);
    const subject = valueSubject(topology.physicalTopic(spec.name));
    const id = await registry.register(subject, text);
    const writers = new Map<number, avro.Type>();
    for (const v of registry.versions?.(subject) ?? []) {
      if (v.id !== id) writers.set(v.id, avro.Type.forSchema(JSON.parse(v.schema) as avro.Schema));
    }
    values.set(spec.name, new AvroSerde(type, id, writers));
    ids.set(spec.name, id);
  }
  return {
    schemaIds: ids,
    key: (topic) => {
      if (!topology.topics.has(topic)) throw new CrawlError('CS_TOPOLOGY', `no serde for undeclared topic ${topic}`);
      return stringSerde;
    },
    value: (topic) => {
      const serde = values.get(topic);
      if (!serde) throw new CrawlError('CS_TOPOLOGY', `no serde for undeclared topic ${topic}`);
      return serde;
    },
  };
}
