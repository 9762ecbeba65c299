import { join } from 'node:path';
import avro from 'avsc';
import { CrawlError } from '../../../core/errors.js';
import { unframe } from '../../../core/serde.js';
import { EmbeddedLog } from './log-store.js';
import { FileSchemaRegistry } from './file-schema-registry.js';

export interface DecodedRecord {
  partition: number;
  offset: number;
  timestamp: number;
  key: string;
  value: unknown;
}

/**
 * Reads every committed record of a topic in an embedded data dir, decoding values with the
 * writer schema their id names. Needs the data dir not to be open by a running crawl.
 */
export async function readTopic(dataDir: string, topic: string, onRecord: (r: DecodedRecord) => void): Promise<number> {
  let log: EmbeddedLog;
  try {
    log = await EmbeddedLog.open(join(dataDir, 'log'));
  } catch (err) {
    const msg = (err as Error).message;
    if (/lock/i.test(msg))
      throw new CrawlError('CS_STORE', `${dataDir} is in use by a running crawl; stop it first`, { cause: err });
    throw err;
  }
  try {
    const registry = new FileSchemaRegistry(dataDir);
    const types = new Map<number, avro.Type>();
    const partitions = log.partitions(topic);
    let count = 0;
    for (let p = 0; p < partitions; p++) {
      log.ensureTopic(topic, partitions);
      let offset = log.startOffset(topic, p);
      for (;;) {
        const batch = log.read(topic, p, offset, 1000);
        if (batch.length === 0) break;
        for (const r of batch) {
          offset = r.offset + 1;
          if (r.value === null) continue;
          const { schemaId, body } = unframe(r.value);
          let type = types.get(schemaId);
          if (!type)
            types.set(
              schemaId,
              (type = avro.Type.forSchema(JSON.parse(await registry.schemaById(schemaId)) as avro.Schema)),
            );
          onRecord({
            partition: p,
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key.toString('utf8'),
            value: type.fromBuffer(body),
          });
          count++;
        }
      }
    }
    return count;
  } finally {
    await log.close();
  }
}
