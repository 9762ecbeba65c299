import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import kafkajs from 'kafkajs';
import { parseRunArgs } from '../../cli/run-options.js';
import { isCrawlError } from '../../core/errors.js';
import { installKafkaCodecs, validateCompression } from '../../runtime/engines/kafka/kafka-codecs.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';

const { CompressionCodecs, CompressionTypes } = kafkajs;
const RUN = ['--role', 'all', '--brokers', '127.0.0.1:1', '--registry', 'http://127.0.0.1:1'];

type Codec = { compress(e: { buffer: Buffer }): Promise<Buffer>; decompress(b: Buffer): Promise<Buffer> };
const codecOf = (type: number): Codec => (CompressionCodecs as Record<number, () => Codec>)[type]!();

test('run compresses with lz4 unless --kafka-compression (or CRAWLSTREAM_KAFKA_COMPRESSION) says otherwise, and refuses an unknown codec', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-codecs-'));
  const run = [...RUN, '--data', dir];
  assert.equal(parseRunArgs(run, {}).compression, 'lz4');
  assert.equal(parseRunArgs([...run, '--kafka-compression', 'zstd'], {}).compression, 'zstd');
  assert.equal(parseRunArgs(run, { CRAWLSTREAM_KAFKA_COMPRESSION: 'none' }).compression, 'none');
  assert.throws(
    () => parseRunArgs([...run, '--kafka-compression', 'snappy'], {}),
    (err: unknown) => isCrawlError(err) && err.code === 'CS_INVALID_OPTION' && /--kafka-compression/.test(err.message),
  );
});

test('a port refuses a codec it does not know, naming the flag', () => {
  assert.throws(
    () => new KafkaPort(['127.0.0.1:1'], 'test', undefined, undefined, undefined, 'snappy' as never),
    (err: unknown) =>
      isCrawlError(err) &&
      err.code === 'CS_INVALID_OPTION' &&
      err.message === '--kafka-compression must be one of none, gzip, lz4, zstd, got "snappy"',
  );
  assert.equal(validateCompression('gzip'), 'gzip');
});

test("lz4 and zstd batches are the formats Kafka's other clients write: an LZ4 frame and a zstd frame, read back whole", async () => {
  installKafkaCodecs();
  const body = Buffer.from('<p>lorem ipsum dolor sit amet</p>'.repeat(4000));
  const lz4 = await codecOf(CompressionTypes.LZ4).compress({ buffer: body });
  assert.equal(lz4.readUInt32LE(0), 0x184d2204, 'not an LZ4 frame (magic 0x184D2204)');
  assert.ok(lz4.length < body.length / 4, `lz4 left ${lz4.length} of ${body.length} bytes`);
  assert.ok((await codecOf(CompressionTypes.LZ4).decompress(lz4)).equals(body));
  const zstd = await codecOf(CompressionTypes.ZSTD).compress({ buffer: body });
  assert.equal(zstd.readUInt32LE(0), 0xfd2fb528, 'not a zstd frame (magic 0xFD2FB528)');
  assert.ok((await codecOf(CompressionTypes.ZSTD).decompress(zstd)).equals(body));
  // an empty batch body and a corrupt frame: the first round-trips, the second is an error, never garbage
  assert.equal(
    (
      await codecOf(CompressionTypes.LZ4).decompress(
        await codecOf(CompressionTypes.LZ4).compress({ buffer: Buffer.alloc(0) }),
      )
    ).length,
    0,
  );
  await assert.rejects(
    codecOf(CompressionTypes.LZ4).decompress(Buffer.concat([lz4.subarray(0, 16), Buffer.alloc(64, 7)])),
  );
  await assert.rejects(
    codecOf(CompressionTypes.ZSTD).decompress(Buffer.concat([zstd.subarray(0, 8), Buffer.alloc(64, 7)])),
  );
});
