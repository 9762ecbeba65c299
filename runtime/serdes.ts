import avro from 'avsc';
import { CrawlError } from '../core/errors.js';
import { CONFLUENT_MAGIC, stringSerde } from '../core/serde.js';
import type { TopicSerdes } from './task.js';
import type { Topology } from './topology.js';
import { AvroSerde, loadSchema, type SchemaRegistry } from '../schemas/index.js';

/** The serdes of a topology's topics, with schema ids registered up front. */
export interface SerdeSet extends TopicSerdes {
  readonly schemaIds: ReadonlyMap<string, number>;
  /**
   * Makes every value among `records` readable whose schema id its topic's serde does not know
   * yet: a version registered after this set was built (a newer instance in a rolling upgrade),
   * its writer schema fetched from the registry once and cached. Resolves when each such id is
   * learned, or found unknown to the registry or unreadable as this version's schema (logged via
   * `say`; its records stay CS_CORRUPT_RECORD, for the dead-letter topic). Rejects when the
   * registry cannot be asked (unreachable, an error status): nothing is given up, the caller
   * retries. Cheap when every id is known (a 5-byte look per record).
   */
  learnWriters(
    records: readonly { topic: string; value: Buffer | null }[],
    say?: (line: string) => void,
  ): Promise<void>;
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
  const values = new Map<string, AvroSerde<unknown>>();
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
  const given = new Set<number>(); // ids found unknown or unreadable: not asked again
  const learnOne = async (topic: string, serde: AvroSerde<unknown>, id: number, say: (line: string) => void) => {
    let writer: string;
    try {
      writer = await registry.schemaById(id);
    } catch (err) {
      if ((err as CrawlError).code !== 'CS_SCHEMA') throw err;
      given.add(id);
      say(`schema id ${id} of a ${topic} record is unknown to the registry: such records are dead-lettered`);
      return;
    }
    try {
      serde.learn(id, writer);
    } catch (err) {
      given.add(id);
      say(`${(err as Error).message}: such ${topic} records are dead-lettered`);
    }
  };
  return {
    schemaIds: ids,
    learnWriters: async (records, say = () => {}) => {
      let wanted: Map<string, Set<number>> | undefined;
      for (const { topic, value } of records) {
        if (value === null || value.length < 5 || value[0] !== CONFLUENT_MAGIC) continue;
        const id = value.readUInt32BE(1);
        const serde = values.get(topic);
        if (serde === undefined || serde.knows(id) || given.has(id)) continue;
        wanted ??= new Map();
        let set = wanted.get(topic);
        if (!set) wanted.set(topic, (set = new Set()));
        set.add(id);
      }
      if (!wanted) return;
      for (const [topic, set] of wanted) for (const id of set) await learnOne(topic, values.get(topic)!, id, say);
    },
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
