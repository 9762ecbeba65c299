import { CrawlError } from './errors.js';

/** Turns values into bytes and back. Both directions are pure and thread-safe. */
export interface Serde<T> {
  serialize(value: T): Buffer;
  /** Throws CrawlError('CS_CORRUPT_RECORD') on bytes it cannot read. */
  deserialize(bytes: Buffer): T;
}

/** Keys are UTF-8 strings (a site, a host): readable in any Kafka tool. */
export const stringSerde: Serde<string> = {
  serialize: (value) => Buffer.from(value, 'utf8'),
  deserialize: (bytes) => bytes.toString('utf8'),
};

export const CONFLUENT_MAGIC = 0;

/** Frames an Avro body in the Confluent wire format: magic byte 0, 4-byte big-endian schema id, body. */
export function frame(schemaId: number, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + body.length);
  out[0] = CONFLUENT_MAGIC;
  out.writeUInt32BE(schemaId, 1);
  body.copy(out, 5);
  return out;
}

/** Splits a Confluent-framed value; throws CS_CORRUPT_RECORD when the frame is not there. */
export function unframe(bytes: Buffer): { schemaId: number; body: Buffer } {
  if (bytes.length < 5 || bytes[0] !== CONFLUENT_MAGIC) {
    throw new CrawlError(
      'CS_CORRUPT_RECORD',
      `value is not in the Confluent wire format (length ${bytes.length}, first byte ${bytes[0] ?? 'none'})`,
    );
  }
  return { schemaId: bytes.readUInt32BE(1), body: bytes.subarray(5) };
}

/** Bytes as they are. */
export const bufferSerde: Serde<Buffer> = {
  serialize: (value) => value,
  deserialize: (bytes) => bytes,
};
