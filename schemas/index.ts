import { readFileSync } from 'node:fs';
import avro from 'avsc';
import { CrawlError } from '../core/errors.js';
import { frameEncoded, unframe, type Serde } from '../core/serde.js';

/** The Avro schemas of crawlstream, by file name under schemas/. */
export const SCHEMA_FILES = {
  LinkBatch: 'link-batch.avsc',
  FetchRequest: 'fetch-request.avsc',
  FetchResult: 'fetch-result.avsc',
  FetchedPage: 'fetched-page.avsc',
  ParsedPage: 'parsed-page.avsc',
  PageRecord: 'page-record.avsc',
  PageContent: 'page-content.avsc',
  ControlCommand: 'control-command.avsc',
  HostState: 'host-state.avsc',
  QueueEntry: 'queue-entry.avsc',
  SiteState: 'site-state.avsc',
  FrontEntry: 'front-entry.avsc',
  UrlHistory: 'url-history.avsc',
} as const;
export type SchemaName = keyof typeof SCHEMA_FILES;

const schemaDir = new URL('../../schemas/', import.meta.url);
const parsed = new Map<SchemaName, { text: string; type: avro.Type }>();

/** The schema's canonical JSON text (what a registry stores) and its parsed type; cached. */
export function loadSchema(name: SchemaName): { text: string; type: avro.Type } {
  let entry = parsed.get(name);
  if (!entry) {
    const raw = readFileSync(new URL(SCHEMA_FILES[name], schemaDir), 'utf8');
    const json = JSON.parse(raw) as object;
    entry = { text: JSON.stringify(json), type: avro.Type.forSchema(json as avro.Schema) };
    parsed.set(name, entry);
  }
  return entry;
}

/**
 * Where schema ids come from: a Confluent-compatible registry on the Kafka engine, a file in the
 * data dir on the embedded engine. Ids are stable once handed out.
 */
export interface SchemaRegistry {
  /** Registers (or finds) the schema under subject and returns its global id. Idempotent. */
  register(subject: string, schemaText: string): Promise<number>;
  /**
   * The writer schema (JSON text) of an id. Throws CS_SCHEMA when the registry does not know the
   * id; any other failure (the registry unreachable) is worth a retry.
   */
  schemaById(id: number): Promise<string>;
}

/**
 * An Avro serde in the Confluent wire format. Writes with the registered id of its own schema;
 * reads any id whose writer schema it was given in `writers` or has {@link AvroSerde.learn}ed
 * since (resolving to its own schema), and refuses others with CS_CORRUPT_RECORD.
 */
export class AvroSerde<T> implements Serde<T> {
  private readonly resolvers = new Map<number, avro.Resolver | null>();

  constructor(
    readonly type: avro.Type,
    readonly schemaId: number,
    writers: ReadonlyMap<number, avro.Type> = new Map(),
  ) {
    this.resolvers.set(schemaId, null);
    for (const [id, writer] of writers) {
      if (id !== schemaId) this.resolvers.set(id, type.createResolver(writer));
    }
  }

  /** Whether a value framed with `schemaId` can be read now (its own id, or a writer learned). */
  knows(schemaId: number): boolean {
    return this.resolvers.has(schemaId);
  }

  /**
   * Reads values framed with `schemaId` from now on, as written with `writerSchema` (JSON text)
   * and resolved to this serde's schema. Idempotent. Throws CS_SCHEMA when the writer cannot be
   * resolved to this schema (an incompatible version): its values stay unreadable.
   */
  learn(schemaId: number, writerSchema: string): void {
    if (this.resolvers.has(schemaId)) return;
    try {
      this.resolvers.set(
        schemaId,
        this.type.createResolver(avro.Type.forSchema(JSON.parse(writerSchema) as avro.Schema)),
      );
    } catch (err) {
      throw new CrawlError(
        'CS_SCHEMA',
        `schema id ${schemaId} cannot be read as ${(this.type as { name?: string }).name ?? '?'}: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  serialize(value: T): Buffer {
    try {
      return frameEncoded(this.schemaId, (buf, pos) => this.type.encode(value, buf, pos));
    } catch (err) {
      throw new CrawlError(
        'CS_SCHEMA',
        `value does not match schema ${(this.type as { name?: string }).name ?? '?'}: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  deserialize(bytes: Buffer): T {
    const { schemaId, body } = unframe(bytes);
    const resolver = this.resolvers.get(schemaId);
    if (resolver === undefined) {
      throw new CrawlError(
        'CS_CORRUPT_RECORD',
        `unknown schema id ${schemaId} for ${(this.type as { name?: string }).name ?? '?'}`,
      );
    }
    try {
      return (resolver === null ? this.type.fromBuffer(body) : this.type.fromBuffer(body, resolver)) as T;
    } catch (err) {
      throw new CrawlError(
        'CS_CORRUPT_RECORD',
        `cannot decode ${(this.type as { name?: string }).name ?? '?'} (schema id ${schemaId}): ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
}
