import { createRequire } from 'node:module';

/** The part of kafkajs 2.2.4's protocol `Encoder` (src/protocol/encoder.js) this file relies on. */
interface KafkajsEncoder {
  buf: Buffer;
  offset: number;
}
interface KafkajsEncoderClass {
  new (initialSize?: number): KafkajsEncoder;
  prototype: KafkajsEncoder & { ensureAvailable(length: number): void };
  nextPowerOfTwo(value: number): number;
}

const require = createRequire(import.meta.url);
const ENCODER = 'kafkajs/src/protocol/encoder';
const CRC32C = 'kafkajs/src/protocol/recordBatch/crc32C';
let installed = false;

/**
 * Makes kafkajs's protocol encoder take its buffers unzeroed (`Buffer.allocUnsafe`, small ones from
 * Node's shared pool) instead of zero-filled in an array buffer of their own (`Buffer.alloc`).
 * Every record, record batch and request is built in an encoder of its own and copied into the
 * next, so a 24 KiB page sent on a topic was zero-filled about seven times over before it reached
 * the socket, and each record cost a fresh array buffer; a real-pages crawl on Kafka spent ~7 % of
 * its main thread in those allocations (docs/BENCHMARKS.md, "Tenth sitting").
 *
 * Safe because the encoder writes only sequentially at its offset and hands out only
 * `buf.slice(0, offset)`: a byte it never wrote is never read or sent. The bytes on the wire are
 * unchanged (test/runtime/kafkajs-encoder.test.ts).
 *
 * Growth is replaced on the shared prototype, so every encoder grows unzeroed. Construction is
 * replaced in the module cache, so it reaches the kafkajs modules loaded after this runs: those
 * kafkajs loads on first use (records, record batches, produce and fetch requests); the ones
 * `import 'kafkajs'` loads keep the zeroed first 512 bytes. Process-wide and idempotent, like the
 * codec table (kafka-codecs.ts). kafkajs is pinned (2.2.4, unmaintained); an encoder of another
 * shape is left alone. Record batches get a native CRC-32C too (installNativeCrc32c).
 */
export function installKafkajsEncoder(): void {
  if (installed) return;
  installed = true;
  installNativeCrc32c();
  const path = require.resolve(ENCODER);
  const Encoder = require(path) as KafkajsEncoderClass;
  const proto = Encoder.prototype;
  if (typeof proto.ensureAvailable !== 'function' || typeof Encoder.nextPowerOfTwo !== 'function') return;
  proto.ensureAvailable = function ensureAvailable(this: KafkajsEncoder, length: number): void {
    if (this.offset + length <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Encoder.nextPowerOfTwo(this.offset + length));
    this.buf.copy(grown, 0, 0, this.offset);
    this.buf = grown;
  };
  // a constructor sharing the class's prototype (methods, instanceof) and statics
  function UnzeroedEncoder(this: KafkajsEncoder, initialSize = 511): void {
    this.buf = Buffer.allocUnsafe(Encoder.nextPowerOfTwo(initialSize));
    this.offset = 0;
  }
  UnzeroedEncoder.prototype = proto;
  Object.setPrototypeOf(UnzeroedEncoder, Encoder);
  const cached = require.cache[path];
  if (cached !== undefined) cached.exports = UnzeroedEncoder;
}

/**
 * Gives kafkajs's record batches their CRC-32C from @node-rs/crc32 (hardware-accelerated) instead
 * of kafkajs's byte-at-a-time JavaScript loop, which took ~46 µs per 16 KiB on this project's bench
 * machine (the native one ~3 µs) and ~3 % of a real-pages Kafka crawl's main thread, every batch
 * produced being checksummed whole (docs/BENCHMARKS.md, "Twelfth sitting"). The same unsigned
 * 32-bit value, so the same bytes on the wire. Replaced in the module cache before the record
 * batch module, which kafkajs loads on first use, takes it; left as it is on a platform the
 * package has no prebuilt binary for.
 */
function installNativeCrc32c(): void {
  const path = require.resolve(CRC32C);
  const original = require(path) as (buffer: Buffer) => number;
  if (typeof original !== 'function') return;
  let crc32c: (input: Buffer) => number;
  try {
    ({ crc32c } = require('@node-rs/crc32') as { crc32c(input: Buffer): number });
  } catch {
    return; // no prebuilt binary for this platform: kafkajs's own loop, slower, the same value
  }
  const cached = require.cache[path];
  if (cached !== undefined) cached.exports = (buffer: Buffer): number => crc32c(buffer) >>> 0;
}
