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
  writeFrameHead(out, schemaId);
  body.copy(out, 5);
  return out;
}

/** The scratch `frameEncoded` and `encoded` encode into; grown up to SCRATCH_MAX, shared (encoding is synchronous). */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);
const SCRATCH_MAX = 1024 * 1024;

/**
 * Writes a body at `pos` of `buf` and returns where it ended, or when `buf` is too short a negative
 * number: minus the bytes missing (avsc's `Type.encode`).
 */
export type BodyEncoder = (buf: Buffer, pos: number) => number;

/**
 * Frames a value as `frame` does, encoded by `encode`. The body is encoded once into a shared
 * scratch and the frame copied out of it: one new buffer a value, where encoding the body alone
 * and then framing it made two.
 */
export function frameEncoded(schemaId: number, encode: BodyEncoder): Buffer {
  return encodedAfter(5, (buf) => writeFrameHead(buf, schemaId), encode);
}

/**
 * A value's bytes as `encode` writes them, with no frame (a store's Avro value): encoded once, into
 * a new buffer of its exact size that is not zero-filled first. avsc's `Type.toBuffer` encodes a
 * value over 1 KiB twice, the second time into a zero-filled buffer (a host's state with its
 * robots.txt body: ~1 % of the embedded engine's main thread on the real-pages bench).
 */
export function encoded(encode: BodyEncoder): Buffer {
  return encodedAfter(0, () => {}, encode);
}

/** `head` bytes written by `writeHead`, then the body `encode` writes after them. */
function encodedAfter(head: number, writeHead: (buf: Buffer) => void, encode: BodyEncoder): Buffer {
  writeHead(scratch);
  let end = encode(scratch, head);
  if (end < 0) {
    const needed = scratch.length - end;
    if (needed > SCRATCH_MAX) {
      // a value larger than the scratch may keep (a big page) is encoded into its own buffer
      const out = Buffer.allocUnsafe(needed);
      writeHead(out);
      const written = encode(out, head);
      if (written !== needed) throw new RangeError(`value encoded to ${written} bytes of ${needed}`);
      return out;
    }
    scratch = Buffer.allocUnsafeSlow(Math.min(SCRATCH_MAX, Math.max(needed, 2 * scratch.length)));
    writeHead(scratch);
    end = encode(scratch, head);
  }
  const out = Buffer.allocUnsafe(end);
  scratch.copy(out, 0, 0, end);
  return out;
}

function writeFrameHead(buf: Buffer, schemaId: number): void {
  buf[0] = CONFLUENT_MAGIC;
  buf.writeUInt32BE(schemaId, 1);
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
