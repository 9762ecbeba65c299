import kafkajs from 'kafkajs';
import type { CompressionTypes as CompressionType } from 'kafkajs';
import { createRequire } from 'node:module';
import { CrawlError } from '../../../core/errors.js';

const { CompressionCodecs, CompressionTypes } = kafkajs;

/** How a producer compresses its record batches; consumers read every one of these whatever they are given. */
export type KafkaCompression = 'none' | 'gzip' | 'lz4' | 'zstd';
export const KAFKA_COMPRESSIONS: readonly KafkaCompression[] = ['none', 'gzip', 'lz4', 'zstd'];
/** lz4: Kafka's usual choice, about as cheap as no compression on the CPU, ~3× smaller HTML batches. */
export const DEFAULT_KAFKA_COMPRESSION: KafkaCompression = 'lz4';

/** The kafkajs `compression` value of a producer send. */
export function compressionType(compression: KafkaCompression): CompressionType {
  switch (compression) {
    case 'none':
      return CompressionTypes.None;
    case 'gzip':
      return CompressionTypes.GZIP;
    case 'lz4':
      return CompressionTypes.LZ4;
    case 'zstd':
      return CompressionTypes.ZSTD;
  }
}

/** Refuses anything but a known codec name, naming where it came from. */
export function validateCompression(value: unknown, what = 'compression'): KafkaCompression {
  if (typeof value === 'string' && (KAFKA_COMPRESSIONS as readonly string[]).includes(value))
    return value as KafkaCompression;
  throw new CrawlError(
    'CS_INVALID_OPTION',
    `${what} must be one of ${KAFKA_COMPRESSIONS.join(', ')}, got ${JSON.stringify(value)}`,
  );
}

interface Codec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

const require = createRequire(import.meta.url);

/**
 * A codec whose native module (a prebuilt N-API binary, no install script) is loaded on first
 * use, so a platform without the binary fails only when that codec is met, with an error that
 * says which.
 */
function lazyCodec(name: string, load: () => Codec): () => Codec {
  let codec: Codec | undefined;
  return () => {
    if (codec === undefined) {
      try {
        codec = load();
      } catch (err) {
        throw new CrawlError('CS_KAFKA', `the ${name} codec cannot be loaded on this platform: ${String(err)}`);
      }
    }
    return codec;
  };
}

let installed = false;

/**
 * Teaches kafkajs (which ships gzip only) LZ4 and ZSTD, for producing and, as important, for
 * consuming: a topic whose `compression.type` the operator set to lz4 or zstd is recompressed by
 * the broker, and a consumer without the codec could not read it. LZ4 is the LZ4 frame format
 * (lz4-napi), ZSTD standard frames (@mongodb-js/zstd), as Kafka's other clients write them.
 * Idempotent; kafkajs's codec table is process-wide.
 */
export function installKafkaCodecs(): void {
  if (installed) return;
  installed = true;
  // the synchronous calls: a batch is small (a commit's chunk of one partition, ≤ 512 KiB, ~2 ms
  // at worst), and the thread-pool hop of the asynchronous ones cost more than the compression
  CompressionCodecs[CompressionTypes.LZ4] = lazyCodec('lz4', () => {
    const lz4 = require('lz4-napi') as {
      compressFrameSync(data: Buffer): Buffer;
      decompressFrameSync(data: Buffer): Buffer;
    };
    return {
      compress: async (encoder) => lz4.compressFrameSync(encoder.buffer),
      decompress: async (b) => lz4.decompressFrameSync(b),
    };
  });
  CompressionCodecs[CompressionTypes.ZSTD] = lazyCodec('zstd', () => {
    const zstd = require('@mongodb-js/zstd') as {
      compress(data: Buffer, level?: number): Promise<Buffer>;
      decompress(data: Buffer): Promise<Buffer>;
    };
    return { compress: (encoder) => zstd.compress(encoder.buffer, 3), decompress: (b) => zstd.decompress(b) };
  });
}
