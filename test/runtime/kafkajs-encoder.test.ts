import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const MODULE = pathToFileURL(path.join(import.meta.dirname, '../../runtime/engines/kafka/kafkajs-encoder.js')).href;
const CODECS = pathToFileURL(path.join(import.meta.dirname, '../../runtime/engines/kafka/kafka-codecs.js')).href;
// kafkajs's own CRC-32C, taken before any test here installs the native one
const JS_CRC32C = createRequire(import.meta.url)('kafkajs/src/protocol/recordBatch/crc32C') as (b: Buffer) => number;

/**
 * A child process that encodes whole Produce requests (transactional, every codec, records from
 * empty to 64 KiB, keys, headers, fixed timestamps) as kafkajs sends them, with or without
 * installKafkajsEncoder, and prints them in hex. A fresh process each: the change is process-wide.
 */
function encodedRequests(install: boolean): string {
  const script = `
    import { createRequire } from 'node:module';
    import { installKafkaCodecs } from ${JSON.stringify(CODECS)};
    import { installKafkajsEncoder } from ${JSON.stringify(MODULE)};
    installKafkaCodecs();
    if (${install}) installKafkajsEncoder();
    const require = createRequire(${JSON.stringify(import.meta.url)});
    const Long = require('kafkajs/src/utils/long');
    const produce = require('kafkajs/src/protocol/requests/produce/v3/request');
    const wrap = require('kafkajs/src/protocol/request');
    const { Types } = require('kafkajs/src/protocol/message/compression');
    // deterministic bytes of every size, none of them zero, so a byte left unwritten would show
    const bytes = (n, seed) => Buffer.from(Array.from({ length: n }, (_, i) => 1 + ((i * 31 + seed * 7) % 251)));
    const sizes = [0, 1, 200, 511, 512, 513, 4096, 24 * 1024, 65536];
    const out = [];
    for (const compression of [Types.None, Types.GZIP, Types.LZ4, Types.ZSTD]) {
      const request = produce({
        acks: -1, timeout: 30000, transactionalId: 'tx-1', producerId: Long.fromInt(42), producerEpoch: 3, compression,
        topicData: [0, 1].map((t) => ({
          topic: 'fetched-' + t,
          partitions: [0, 3].map((partition) => ({
            partition, firstSequence: 7,
            messages: sizes.map((n, i) => ({
              key: i % 2 ? null : 'key-' + i, value: bytes(n, i + t), timestamp: String(1_700_000_000_000 + i),
              headers: i % 3 ? {} : { 'content-type': 'application/avro', h: bytes(i, 1) },
            })),
          })),
        })),
      });
      out.push((await wrap({ correlationId: 9, clientId: 'crawlstream-test', request })).buffer.toString('hex'));
    }
    process.stdout.write(out.join('\\n'));
  `;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'latin1',
    maxBuffer: 64 * 1024 * 1024,
  });
}

test('kafkajs sends the same bytes with unzeroed encoder buffers: Produce requests of every codec and record size', () => {
  const zeroed = encodedRequests(false);
  const unzeroed = encodedRequests(true);
  assert.equal(zeroed.split('\n').length, 4);
  assert.ok(zeroed.length > 2 * 200_000, `only ${zeroed.length} hex digits encoded`);
  assert.ok(unzeroed === zeroed, 'the requests differ with unzeroed buffers');
});

test('once installed, encoders kafkajs loads later start and grow in unzeroed buffers; growth keeps what was written', async () => {
  const { installKafkajsEncoder } = await import('../../runtime/engines/kafka/kafkajs-encoder.js');
  const require = createRequire(import.meta.url);
  const Original = require('kafkajs/src/protocol/encoder') as new (size?: number) => {
    buf: Buffer;
    offset: number;
    buffer: Buffer;
    writeBuffer(b: Buffer): unknown;
    writeInt32(v: number): unknown;
  };
  installKafkajsEncoder();
  installKafkajsEncoder(); // idempotent
  const Encoder = require('kafkajs/src/protocol/encoder') as typeof Original;
  assert.notEqual(Encoder, Original, 'the module cache still holds the zeroing class');
  const small = new Encoder();
  assert.ok(small instanceof Original, 'an encoder no longer of kafkajs class');
  // a zeroed buffer has an array buffer of its own; an unzeroed small one is a slice of Node's pool
  assert.equal(new Original().buf.buffer.byteLength, 512);
  assert.ok(small.buf.buffer.byteLength > small.buf.length, 'a small encoder was not taken from the pool');
  small.writeInt32(0x01020304);
  const body = Buffer.alloc(70_000, 0xab);
  small.writeBuffer(body);
  assert.equal(small.buf.length, 131_072);
  assert.ok(small.buffer.equals(Buffer.concat([Buffer.from([1, 2, 3, 4]), body])));
});

test("once installed, record batches take a native CRC-32C with kafkajs's value, on every length and alignment", async () => {
  const { installKafkajsEncoder } = await import('../../runtime/engines/kafka/kafkajs-encoder.js');
  const require = createRequire(import.meta.url);
  installKafkajsEncoder();
  const crc32C = require('kafkajs/src/protocol/recordBatch/crc32C') as (b: Buffer) => number;
  assert.notEqual(crc32C, JS_CRC32C, 'still the JavaScript loop');
  assert.equal(crc32C(Buffer.from('123456789')), 0xe3069283, 'the CRC-32C check value');
  const data = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 131 + (i >> 7)) & 0xff));
  let checked = 0;
  for (const start of [0, 1, 3, 7]) {
    for (const length of [0, 1, 2, 7, 8, 9, 15, 16, 63, 64, 65, 511, 4096, 24 * 1024 + 5, 65_536]) {
      const b = data.subarray(start, start + length);
      assert.equal(crc32C(b), JS_CRC32C(b), `length ${length} at ${start}`);
      checked++;
    }
  }
  assert.equal(checked, 60);
});
