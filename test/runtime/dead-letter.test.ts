import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { CrawlError } from '../../core/errors.js';
import { M } from '../../core/metric-catalogue.js';
import { Metrics } from '../../core/metrics.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { DeadLetters, deadLetterOf } from '../../runtime/dead-letter.js';
import { topicDefinitions } from '../../runtime/engines/kafka/topics.js';
import type { ConsumedRawRecord } from '../../runtime/record.js';
import { crawlTopology } from '../../topology/crawl-topology.js';

const consumed = (value: Buffer | null, offset = 7, key = Buffer.from('example.test')): ConsumedRawRecord => ({
  topic: 'fetched',
  partition: 2,
  offset,
  key,
  value,
  timestamp: 1_000,
});

/** What a dead letter occupies in its topic, framing aside. */
const bytesOf = (d: { key: Buffer; value: Buffer | null; headers: Record<string, string> }) =>
  d.key.length +
  (d.value?.length ?? 0) +
  Object.entries(d.headers).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);

test('the dead-letter topic holds a record of the largest input topic whole, with its headers', () => {
  const topology = crawlTopology({ config: validateCrawlConfig({}), partitions: 4, warcDir: tmpdir() });
  const defs = new Map(topicDefinitions(topology).map((d) => [d.name, d]));
  const dlq = Number(defs.get('crawlstream-dead-letters')!.config['max.message.bytes']);
  for (const d of defs.values()) {
    if (d.name.endsWith('-changelog') || d.name === 'crawlstream-dead-letters') continue;
    const input = Number(d.config['max.message.bytes'] ?? 1_048_588);
    assert.ok(dlq >= input + 4_000, `${d.name} holds ${input} bytes, the dead-letter topic ${dlq}`);
  }
  // an 11 MiB fetched page fits whole
  const page = consumed(randomBytes(11 * 1024 * 1024 - 200));
  const letter = deadLetterOf(page, new CrawlError('CS_SCHEMA', 'x'.repeat(5_000)), dlq);
  assert.equal(letter.headers['x-value-omitted'], undefined);
  assert.ok(letter.value!.equals(page.value!));
});

test('a dead letter too large for its topic keeps its source, size and SHA-256 in place of its value', () => {
  const value = randomBytes(300_000);
  const letter = deadLetterOf(consumed(value), new CrawlError('CS_SCHEMA', 'no schema 9'), 100_000);
  const digest = createHash('sha256').update(value).digest('hex');
  assert.equal(letter.headers['x-value-omitted'], 'oversized');
  assert.equal(letter.headers['x-value-bytes'], '300000');
  assert.equal(letter.headers['x-value-sha256'], digest);
  assert.equal(letter.headers['x-source'], 'fetched-2@7');
  assert.equal(letter.headers['x-error-code'], 'CS_SCHEMA');
  assert.equal(letter.value!.toString(), `oversized dead letter: fetched-2@7 300000 bytes sha256:${digest}`);
  assert.equal(letter.key.toString(), 'example.test', 'a key that fits is kept');
  assert.ok(bytesOf(letter) < 100_000);
});

test('a dead letter never exceeds its topic limit, whatever the sizes of key, value and message', () => {
  const limit = 4_096;
  for (const [keyBytes, valueBytes] of [
    [10, 3_000],
    [10, 4_100],
    [3_900, 10],
    [5_000, 5_000],
    [100_000, 0],
  ] as const) {
    const record = consumed(randomBytes(valueBytes), 1, randomBytes(keyBytes));
    const letter = deadLetterOf(record, new Error('é'.repeat(2_000)), limit);
    assert.ok(bytesOf(letter) + 128 <= limit, `key ${keyBytes}, value ${valueBytes}: ${bytesOf(letter)} bytes`);
    if (letter.headers['x-key-omitted'] !== undefined)
      assert.equal(letter.headers['x-key-sha256'], createHash('sha256').update(record.key).digest('hex'));
  }
  // a tombstone stays one
  assert.equal(deadLetterOf(consumed(null), new Error('boom'), limit).value, null);
});

test('dead letters are all counted, but said once per code per interval with a count of those not said', () => {
  const metrics = new Metrics();
  const lines: string[] = [];
  let now = 0;
  const letters = new DeadLetters('app-dead-letters', 10_000, metrics, (l) => lines.push(l), {
    intervalMs: 10_000,
    clock: () => now,
  });
  const schema = new CrawlError('CS_SCHEMA', 'unknown schema id');
  for (let i = 0; i < 500; i++) letters.of(consumed(Buffer.from('v'), i), schema);
  letters.of(consumed(Buffer.from('v'), 500), new CrawlError('CS_CORRUPT_RECORD', 'torn'));
  assert.equal(lines.length, 2, lines.join('\n'));
  assert.match(lines[0]!, /^dead letter fetched-2@0: CS_SCHEMA unknown schema id$/);
  assert.match(lines[1]!, /^dead letter fetched-2@500: CS_CORRUPT_RECORD torn$/);
  now = 10_000;
  letters.of(consumed(randomBytes(20_000), 501), schema);
  assert.equal(lines.length, 3);
  assert.match(
    lines[2]!,
    /^dead letter fetched-2@501: CS_SCHEMA unknown schema id \(value of 20000 bytes written as a reference\); 499 more CS_SCHEMA dead letters in the last 10 s not said$/,
  );
  assert.equal(metrics.total(M.deadLetters), 502);
  assert.equal(metrics.total(M.deadLettersOversized), 1);
  assert.equal(letters.topic, 'app-dead-letters');
});
