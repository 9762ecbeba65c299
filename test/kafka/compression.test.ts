import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { readChangelogs } from '../../runtime/engines/kafka/changelog-reader.js';
import type { KafkaCompression } from '../../runtime/engines/kafka/kafka-codecs.js';
import type { OutRecord } from '../../runtime/engines/kafka/kafka-common.js';
import { kafkaInfra } from './infra.js';

// Batches cross the broker compressed, in the codec the producer was given, and a consumer reads
// any codec a batch arrives in, including one the broker recompressed to (a topic's
// compression.type). Which codec a batch is in is seen where a consumer decodes it: kafkajs asks
// the codec of the batch's attributes to decompress it, so a count of those calls per codec says
// what the broker stored.

const { CompressionCodecs, CompressionTypes } = kafkajs;
const TYPES = { gzip: CompressionTypes.GZIP, lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD } as const;

/** Counts each codec's decompressions from now on; `restore` puts the codecs back. */
function countDecompressions(): { counts: Record<keyof typeof TYPES, number>; restore(): void } {
  // the codecs counted are those a port installs (constructing one connects nowhere)
  new KafkaPort(['127.0.0.1:1'], 'crawlstream-test');
  const counts = { gzip: 0, lz4: 0, zstd: 0 };
  const originals = new Map<number, () => unknown>();
  for (const [name, type] of Object.entries(TYPES) as [keyof typeof TYPES, kafkajs.CompressionTypes][]) {
    const original = CompressionCodecs[type as keyof typeof CompressionCodecs] as () => {
      compress(e: unknown): Promise<Buffer>;
      decompress(b: Buffer): Promise<Buffer>;
    };
    originals.set(type, original);
    (CompressionCodecs as Record<number, () => unknown>)[type] = () => {
      const codec = original();
      return {
        compress: (e: unknown) => codec.compress(e),
        decompress: (b: Buffer) => {
          counts[name] += 1;
          return codec.decompress(b);
        },
      };
    };
  }
  return {
    counts,
    restore: () => {
      for (const [type, original] of originals) (CompressionCodecs as Record<number, () => unknown>)[type] = original;
    },
  };
}

/** Pages as a crawl carries them: ~20 KB of repetitive HTML each, every one different. */
function pages(topic: string, n: number): OutRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    topic,
    partition: 0,
    key: Buffer.from(`http://site${i % 7}.test/page/${i}`),
    value: Buffer.from(
      `<html><head><title>page ${i}</title></head><body>${'<p>lorem ipsum dolor sit amet</p>'.repeat(600)}<a href="/n/${i + 1}">next</a></body></html>`,
    ),
    timestamp: Date.now(),
  }));
}

async function roundTrip(
  compression: KafkaCompression,
  topicConfig: Record<string, string> = {},
): Promise<{ sent: OutRecord[]; read: Buffer[] }> {
  const { brokers } = kafkaInfra();
  const port = new KafkaPort([brokers], 'crawlstream-test', undefined, undefined, undefined, compression);
  try {
    const topic = `compression-${compression}-${randomUUID().slice(0, 8)}`;
    const admin = await port.admin();
    try {
      await admin.createTopics([{ name: topic, partitions: 1, config: topicConfig }]);
    } finally {
      await admin.close();
    }
    const sent = pages(topic, 60);
    const producer = await port.transactionalProducer(`compression-${randomUUID()}`);
    try {
      await producer.commit(sent, 'compression-test', []);
    } finally {
      await producer.close();
    }
    // the committed records become readable once the transaction's markers are written (the last
    // stable offset moves a moment after commit returns): read until all are back
    const read: Buffer[] = [];
    let from = 0;
    while (read.length < sent.length) {
      await readChangelogs(port, [{ topic, partition: 0, from }], (_t, _p, records, next) => {
        for (const r of records) read.push(r.value!);
        from = next;
      });
      if (read.length < sent.length) await new Promise((r) => setTimeout(r, 100));
    }
    return { sent, read };
  } finally {
    await port.close();
  }
}

for (const compression of ['lz4', 'zstd', 'gzip'] as const) {
  test(
    `a producer given --kafka-compression ${compression} sends ${compression} batches, which the broker takes and a consumer reads back`,
    {
      timeout: 120_000,
    },
    async () => {
      const spy = countDecompressions();
      try {
        const { sent, read } = await roundTrip(compression);
        assert.equal(read.length, sent.length);
        assert.ok(
          read.every((v, i) => v.equals(sent[i]!.value!)),
          'a record read back differs from the one sent',
        );
        assert.ok(spy.counts[compression] > 0, `no ${compression} batch was read: ${JSON.stringify(spy.counts)}`);
        for (const other of Object.keys(TYPES) as (keyof typeof TYPES)[])
          if (other !== compression) assert.equal(spy.counts[other], 0, `a ${other} batch was read`);
      } finally {
        spy.restore();
      }
    },
  );
}

test(
  "a topic whose compression.type is zstd is read though the producer sends uncompressed (the broker's recompression)",
  { timeout: 120_000 },
  async () => {
    const spy = countDecompressions();
    try {
      const { sent, read } = await roundTrip('none', { 'compression.type': 'zstd' });
      assert.equal(read.length, sent.length);
      assert.ok(read.every((v, i) => v.equals(sent[i]!.value!)));
      assert.ok(spy.counts.zstd > 0, `the broker did not recompress to zstd: ${JSON.stringify(spy.counts)}`);
    } finally {
      spy.restore();
    }
  },
);
