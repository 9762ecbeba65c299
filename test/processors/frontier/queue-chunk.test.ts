import { test } from 'node:test';
import avsc from 'avsc';
import { seededRandom } from '../../../synthetic-web/seeded-random.js';
import assert from 'node:assert/strict';
import { loadSchema } from '../../../schemas/index.js';
import type { FrontEntry, QueueEntry } from '../../../schemas/types.js';
import {
  CHUNK_ENTRIES,
  chunkSerde,
  chunkOf,
  FRONT_ENTRY,
  nextChunkStart,
  QUEUE_ENTRY,
  QueueChunk,
} from '../../../processors/frontier/queue-chunk.js';

const kinds = ['PAGE', 'SITEMAP', 'FEED'] as const;
const queueEntries: QueueEntry[] = (
  [
    { url: 'https://www.example.com/', depth: 0, redirectHops: 0, attempts: 0, discoveredAt: 1_764_460_800_000 },
    { url: `https://example.com/${'a'.repeat(62)}`, depth: 1, redirectHops: 5, attempts: 4, discoveredAt: 0 },
    {
      url: `https://example.com/${'b'.repeat(2_000)}`,
      depth: 63,
      redirectHops: 64,
      attempts: 65,
      discoveredAt: 2 ** 52 + 1,
    },
    { url: 'https://bücher.example/ä?q=€𝄞', depth: 15, redirectHops: 0, attempts: 1, discoveredAt: -1 },
    {
      url: `https://example.com/${'ü'.repeat(5_000)}`,
      depth: -64,
      redirectHops: -65,
      attempts: 2 ** 31 - 1,
      discoveredAt: -(2 ** 40),
    },
    { url: '', depth: 0, redirectHops: 0, attempts: 0, discoveredAt: 0 },
  ] as QueueEntry[]
).map((e, i) => ({ ...e, kind: kinds[i % 3]!, visit: i * 1_000 }));

const frontEntries: FrontEntry[] = queueEntries.map((e, i) => ({
  url: e.url,
  host: `host${i}.example`,
  origin: `https://host${i}.example`,
  site: 'example',
  depth: e.depth,
  redirectHops: e.redirectHops,
  discoveredAt: e.discoveredAt,
  kind: e.kind!,
  visit: e.visit!,
}));

test('a queue chunk is the Avro encodings of its entries back to back (schemas/queue-entry.avsc)', () => {
  const type = loadSchema('QueueEntry').type;
  const chunk = new QueueChunk();
  for (const e of queueEntries) QUEUE_ENTRY.write(chunk, e);
  assert.deepEqual(chunk.bytes(), Buffer.concat(queueEntries.map((e) => type.toBuffer(e))));
  const decoded = chunkSerde.deserialize(Buffer.from(chunkSerde.serialize(chunk)));
  assert.deepEqual(
    queueEntries.map((_, i) => decoded.entryAt(i, QUEUE_ENTRY)),
    queueEntries,
  );
});

test('a front chunk is the Avro encodings of its entries back to back (schemas/front-entry.avsc)', () => {
  const type = loadSchema('FrontEntry').type;
  const chunk = new QueueChunk();
  for (const e of frontEntries) FRONT_ENTRY.write(chunk, e);
  assert.deepEqual(chunk.bytes(), Buffer.concat(frontEntries.map((e) => type.toBuffer(e))));
  const decoded = new QueueChunk(Buffer.from(chunk.bytes()));
  assert.deepEqual(
    frontEntries.map((_, i) => decoded.entryAt(i, FRONT_ENTRY)),
    frontEntries,
  );
});

test('entries read back in any order, forward, backward and repeated', () => {
  const chunk = new QueueChunk();
  const entries = Array.from({ length: CHUNK_ENTRIES }, (_, i) => ({ ...queueEntries[i % 4]!, attempts: i }));
  for (const e of entries) QUEUE_ENTRY.write(chunk, e);
  for (const i of [5, 6, 6, 63, 0, 1, 40, 2, 63]) assert.deepEqual(chunk.entryAt(i, QUEUE_ENTRY), entries[i]);
  assert.throws(() => chunk.entryAt(CHUNK_ENTRIES, QUEUE_ENTRY), { code: 'CS_STORE' });
});

test('bytes handed out stay as they were while more entries are appended', () => {
  const chunk = new QueueChunk();
  QUEUE_ENTRY.write(chunk, queueEntries[0]!);
  const before = chunk.bytes();
  const copy = Buffer.from(before);
  for (let i = 0; i < 50; i++) QUEUE_ENTRY.write(chunk, queueEntries[2]!);
  assert.deepEqual(before, copy);
  assert.deepEqual(chunk.entryAt(50, QUEUE_ENTRY), queueEntries[2]);
});

test('copyEntries copies a run of entries into a chunk of its own', () => {
  const chunk = new QueueChunk();
  for (const e of queueEntries) QUEUE_ENTRY.write(chunk, e);
  const copy = chunk.copyEntries(1, 4, QUEUE_ENTRY);
  assert.deepEqual(
    [0, 1, 2].map((i) => copy.entryAt(i, QUEUE_ENTRY)),
    queueEntries.slice(1, 4),
  );
  assert.throws(() => copy.entryAt(3, QUEUE_ENTRY), { code: 'CS_STORE' });
});

test('a truncated chunk is a store error, not a wrong entry', () => {
  const chunk = new QueueChunk();
  QUEUE_ENTRY.write(chunk, queueEntries[1]!);
  const cut = new QueueChunk(chunk.bytes().subarray(0, 10));
  assert.throws(() => cut.entryAt(0, QUEUE_ENTRY), { code: 'CS_STORE' });
});

test('sequence numbers map to chunks of CHUNK_ENTRIES', () => {
  assert.equal(CHUNK_ENTRIES, 64);
  assert.deepEqual([0, 63, 64, 127, 128].map(chunkOf), [0, 0, 1, 1, 2]);
  assert.deepEqual([0, 63, 64, 65].map(nextChunkStart), [64, 64, 128, 128]);
  assert.equal(chunkOf(2 ** 40 + 5), 2 ** 34);
});

test("a chunk's longs and strings are avsc's encodings: epoch milliseconds, negatives, non-ASCII, any start", () => {
  const long = avsc.Type.forSchema('long');
  const values = [
    0,
    1,
    -1,
    63,
    -64,
    2 ** 29 - 1,
    -(2 ** 29),
    2 ** 29,
    -(2 ** 29) - 1,
    2 ** 31,
    Date.UTC(2026, 10, 30),
    -1.8e12,
    2 ** 52 - 1,
    -(2 ** 52 - 1),
  ];
  const random = seededRandom(11);
  // (+ 0: no -0, which reads back as 0)
  for (let i = 0; i < 20_000; i++) values.push(Math.round((random() * 2 - 1) * 2 ** (random() * 52)) + 0);
  const chunk = new QueueChunk();
  for (const v of values) {
    const one = new QueueChunk();
    one.writeLong(v);
    assert.deepEqual(one.bytes(), long.toBuffer(v), `long ${v}`);
    chunk.writeLong(v);
  }
  const read = new QueueChunk(chunk.bytes());
  for (const v of values) assert.equal(read.readLong(), v);
  const string = avsc.Type.forSchema('string');
  for (const [s, start] of [
    ['https://a.test/p/1', 0],
    ['https://a.test/p/1', 14],
    ['https://a.test/é/😀', 14],
    ['x'.repeat(200), 3],
    ['', 0],
  ] as const) {
    const c = new QueueChunk();
    c.writeStringFrom(s, start);
    assert.deepEqual(c.bytes(), string.toBuffer(s.slice(start)), `${s} from ${start}`);
  }
});
