import { randomUUID } from 'node:crypto';
import { KafkaPort, type OutRecord } from '../runtime/engines/kafka/kafka-port.js';
import { readChangelogs } from '../runtime/engines/kafka/changelog-reader.js';
import type { KafkaCompression } from '../runtime/engines/kafka/kafka-codecs.js';
import { figure, machineLine } from './machine.js';

// The Kafka client behind kafka-port.ts, measured on the engine's own pattern: many small
// transactions (a task's commit: ~100 records over a few partitions, every 200 ms), then a
// read_committed read of them all. kafkajs runs through the port, as the engine uses it; another
// client is measured beside it when it is installed (`npm install --no-save @platformatic/kafka@1`,
// `@confluentinc/kafka-javascript`): neither is a dependency, this bench is how one would be chosen.
//   node dist/bench/kafka-clients.js [BROKERS] [COMMITS] [RECORDS_PER_COMMIT] [COMPRESSION]
// BROKERS defaults to CRAWLSTREAM_BROKERS. Figures: records/s of wall time and CPU µs per record
// of this process (the broker's CPU is not counted).

const BROKERS = process.argv[2] ?? process.env['CRAWLSTREAM_BROKERS'];
const COMMITS = Number(process.argv[3] ?? 300);
const PER_COMMIT = Number(process.argv[4] ?? 100);
const COMPRESSION = (process.argv[5] ?? 'lz4') as KafkaCompression;
const PARTITIONS = 4;
if (!BROKERS) {
  console.error('usage: node dist/bench/kafka-clients.js BROKERS [COMMITS] [RECORDS_PER_COMMIT] [none|gzip|lz4|zstd]');
  process.exit(2);
}

/** A page-sized value (~1.5 KB of HTML, as the crawl bench's pages), different per record. */
function value(i: number): Buffer {
  return Buffer.from(
    `<html><head><title>page ${i}</title></head><body>${'<p>some words of a page, and a link</p><a href="/p/'.repeat(20)}${i}">x</a></body></html>`,
  );
}

function records(topic: string, commit: number): OutRecord[] {
  return Array.from({ length: PER_COMMIT }, (_, j) => {
    const i = commit * PER_COMMIT + j;
    return {
      topic,
      partition: i % PARTITIONS,
      key: Buffer.from(`http://site${i % 97}.test/${i}`),
      value: value(i),
      timestamp: Date.now(),
    };
  });
}

interface Phase {
  wallMs: number;
  cpuMs: number;
}

async function measure(work: () => Promise<void>): Promise<Phase> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  await work();
  const used = process.cpuUsage(cpu);
  return { wallMs: performance.now() - start, cpuMs: (used.user + used.system) / 1000 };
}

function report(client: string, phase: string, p: Phase, n: number): void {
  figure(`${client} ${phase}: records/s`, (n / p.wallMs) * 1000, 'records/s');
  figure(`${client} ${phase}: CPU per record`, (p.cpuMs * 1000) / n, 'µs');
}

async function kafkajsThroughThePort(): Promise<void> {
  const port = new KafkaPort([BROKERS!], 'bench-clients', undefined, undefined, undefined, COMPRESSION);
  const topic = `bench-clients-kafkajs-${randomUUID().slice(0, 8)}`;
  try {
    const admin = await port.admin();
    await admin.createTopics([{ name: topic, partitions: PARTITIONS, config: {} }]);
    await admin.close();
    const producer = await port.transactionalProducer(`bench-${randomUUID()}`);
    const n = COMMITS * PER_COMMIT;
    const produced = await measure(async () => {
      for (let c = 0; c < COMMITS; c++) await producer.commit(records(topic, c), 'bench-clients', []);
    });
    await producer.close();
    report('kafkajs 2.2.4 (port)', `transactional produce, ${PER_COMMIT} records a commit`, produced, n);
    let read = 0;
    const consumed = await measure(async () => {
      while (read < n) {
        await readChangelogs(
          port,
          Array.from({ length: PARTITIONS }, (_, p) => ({ topic, partition: p, from: 0 })),
          (_t, _p, rs) => void (read += rs.length),
        );
      }
    });
    report('kafkajs 2.2.4 (port)', 'read_committed read', consumed, read);
  } finally {
    await port.close();
  }
}

/* eslint-disable @typescript-eslint/no-explicit-any -- an optional package without types here */
async function platformatic(): Promise<void> {
  let lib: any;
  try {
    lib = await import('@platformatic/kafka' as string);
  } catch {
    console.log('@platformatic/kafka: not installed (npm install --no-save @platformatic/kafka@1), skipped');
    return;
  }
  const topic = `bench-clients-platformatic-${randomUUID().slice(0, 8)}`;
  const admin = new lib.Admin({ clientId: 'bench-clients', bootstrapBrokers: [BROKERS] });
  await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
  await admin.close();
  const producer = new lib.Producer({
    clientId: 'bench-clients',
    bootstrapBrokers: [BROKERS],
    idempotent: true,
    transactionalId: `bench-${randomUUID()}`,
    compression: COMPRESSION,
    acks: -1,
  });
  const n = COMMITS * PER_COMMIT;
  const produced = await measure(async () => {
    for (let c = 0; c < COMMITS; c++) {
      const tx = await producer.beginTransaction();
      await tx.send({
        messages: records(topic, c).map((r) => ({
          topic: r.topic,
          partition: r.partition,
          key: r.key,
          value: r.value,
          timestamp: BigInt(r.timestamp),
        })),
      });
      await tx.commit();
    }
  });
  await producer.close();
  report('@platformatic/kafka', `transactional produce, ${PER_COMMIT} records a commit`, produced, n);
  const consumer = new lib.Consumer({
    clientId: 'bench-clients',
    groupId: `bench-${randomUUID()}`,
    bootstrapBrokers: [BROKERS],
    isolationLevel: 1, // READ_COMMITTED
  });
  let read = 0;
  const consumed = await measure(async () => {
    const stream = await consumer.consume({ topics: [topic], mode: 'earliest', isolationLevel: 1 });
    for await (const _message of stream) {
      if (++read >= n) break;
    }
    await stream.close();
  });
  await consumer.close(true);
  report('@platformatic/kafka', 'read_committed read', consumed, read);
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/* eslint-disable @typescript-eslint/no-explicit-any -- an optional package without types here */
async function confluent(): Promise<void> {
  let lib: any;
  try {
    lib = await import('@confluentinc/kafka-javascript' as string);
  } catch {
    console.log(
      '@confluentinc/kafka-javascript: not installed (it builds librdkafka; see docs/BENCHMARKS.md), skipped',
    );
    return;
  }
  const { Kafka, CompressionTypes } = lib.KafkaJS ?? lib.default.KafkaJS;
  const kafka = new Kafka({ kafkaJS: { brokers: [BROKERS], logLevel: 1 } });
  const topic = `bench-clients-confluent-${randomUUID().slice(0, 8)}`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }] });
  await admin.disconnect();
  const codec = {
    none: CompressionTypes.None,
    gzip: CompressionTypes.GZIP,
    lz4: CompressionTypes.LZ4,
    zstd: CompressionTypes.ZSTD,
  }[COMPRESSION];
  const producer = kafka.producer({
    kafkaJS: { transactionalId: `bench-${randomUUID()}`, idempotent: true, maxInFlightRequests: 1, compression: codec },
  });
  await producer.connect();
  const n = COMMITS * PER_COMMIT;
  const produced = await measure(async () => {
    for (let c = 0; c < COMMITS; c++) {
      const tx = await producer.transaction();
      await tx.send({
        topic,
        messages: records(topic, c).map((r) => ({ key: r.key, value: r.value, partition: r.partition })),
      });
      await tx.commit();
    }
  });
  await producer.disconnect();
  report('@confluentinc/kafka-javascript', `transactional produce, ${PER_COMMIT} records a commit`, produced, n);
  const consumer = kafka.consumer({
    kafkaJS: { groupId: `bench-${randomUUID()}`, fromBeginning: true },
    'isolation.level': 'read_committed',
  });
  await consumer.connect();
  await consumer.subscribe({ topic });
  let read = 0;
  const consumed = await measure(
    () =>
      new Promise<void>((resolve) => {
        void consumer.run({
          eachBatch: async ({ batch }: any) => {
            read += batch.messages.length;
            if (read >= n) resolve();
          },
        });
      }),
  );
  await consumer.disconnect();
  report('@confluentinc/kafka-javascript', 'read_committed read', consumed, read);
}
/* eslint-enable @typescript-eslint/no-explicit-any */

console.log(machineLine());
console.log(
  `brokers ${BROKERS}, ${COMMITS} commits × ${PER_COMMIT} records of ~1.5 KB, ${PARTITIONS} partitions, ${COMPRESSION}`,
);
await kafkajsThroughThePort();
await platformatic();
await confluent();
