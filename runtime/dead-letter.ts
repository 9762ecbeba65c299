import { createHash } from 'node:crypto';
import { M } from '../core/metric-catalogue.js';
import type { Metrics } from '../core/metrics.js';
import type { ConsumedRawRecord, RecordHeaders } from './record.js';
import type { Topology } from './topology.js';

/** The dead-letter topic of an application: one partition, records as they were consumed. */
export function deadLetterTopicOf(applicationId: string): string {
  return `${applicationId}-dead-letters`;
}

/** Kafka's default `max.message.bytes` (1 MiB + batch overhead): what an undeclared topic holds. */
export const BROKER_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/**
 * Bytes a dead letter may need beyond its consumed key and value: its headers (an error message
 * of at most 1,000 characters, up to 3 bytes each in UTF-8, the code, the source) and the record
 * batch's framing.
 */
export const DEAD_LETTER_OVERHEAD_BYTES = 16 * 1024;

/**
 * The `max.message.bytes` the dead-letter topic of `topology` is created with: the largest record
 * any of its topics may hold (a declared `maxMessageBytes`, else the broker's default), plus
 * `DEAD_LETTER_OVERHEAD_BYTES`, so every record a task can consume fits as a dead letter.
 * Without it the topic held 1 MiB, a fetched page of 11 MiB could not be dead-lettered, the
 * commit failed, the task was lost and the record processed again, forever.
 */
export function deadLetterMaxMessageBytes(topology: Topology): number {
  let largest = BROKER_DEFAULT_MAX_MESSAGE_BYTES;
  for (const spec of topology.topics.values()) largest = Math.max(largest, spec.maxMessageBytes ?? 0);
  return largest + DEAD_LETTER_OVERHEAD_BYTES;
}

/** A record no retry can process, as both engines write it to the dead-letter topic. */
export interface DeadLetter {
  readonly key: Buffer;
  /**
   * The consumed value, unchanged (null for a tombstone); or, when key and value would not fit
   * the dead-letter topic, a reference to it (`x-value-omitted` says so).
   */
  readonly value: Buffer | null;
  readonly timestamp: number;
  /**
   * `x-error-code` (a CS_* code), `x-error-message` (≤ 1000 chars), `x-source` (`topic-partition@offset`);
   * for a value too large to keep, also `x-value-omitted: oversized`, `x-value-bytes` (its size)
   * and `x-value-sha256` (hex digest of the consumed value), and the value is the UTF-8 line
   * `oversized dead letter: <source> <bytes> bytes sha256:<hex>`. A key too large even alone is
   * replaced the same way (`x-key-omitted`, `x-key-bytes`, `x-key-sha256`, a key of its hex digest).
   */
  readonly headers: RecordHeaders;
}

/** The bytes a record takes in a topic, framing (record batch header, varints) counted generously. */
function recordBytes(key: Buffer, value: Buffer | null, headers: RecordHeaders): number {
  let n = 128 + key.length + (value?.length ?? 0);
  for (const [k, v] of Object.entries(headers)) n += 16 + Buffer.byteLength(k) + Buffer.byteLength(v);
  return n;
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/**
 * The dead letter of `record`, which failed with `error`, as it fits a dead-letter topic of
 * `maxBytes` (its `max.message.bytes`): key and value copied when they fit, else the value (and,
 * if it still does not fit, the key) replaced by a reference to the consumed record: its source,
 * size and SHA-256 digest. So a dead letter can never be refused by its topic and wedge the
 * partition. Pure: counting and saying are `DeadLetters`'.
 */
export function deadLetterOf(record: ConsumedRawRecord, error: unknown, maxBytes = Infinity): DeadLetter {
  const err = error as { code?: string; message?: string };
  const code = err.code ?? 'CS_INTERNAL';
  const message = err.message ?? String(error);
  const source = `${record.topic}-${record.partition}@${record.offset}`;
  const headers: Record<string, string> = {
    'x-error-code': code,
    'x-error-message': message.slice(0, 1000),
    'x-source': source,
  };
  let key = Buffer.from(record.key);
  let value = record.value === null ? null : Buffer.from(record.value);
  if (value !== null && recordBytes(key, value, headers) > maxBytes) {
    const bytes = String(record.value!.length);
    const digest = sha256(record.value!);
    Object.assign(headers, { 'x-value-omitted': 'oversized', 'x-value-bytes': bytes, 'x-value-sha256': digest });
    value = Buffer.from(`oversized dead letter: ${source} ${bytes} bytes sha256:${digest}`);
  }
  if (recordBytes(key, value, headers) > maxBytes) {
    const digest = sha256(record.key);
    Object.assign(headers, {
      'x-key-omitted': 'oversized',
      'x-key-bytes': String(record.key.length),
      'x-key-sha256': digest,
    });
    key = Buffer.from(digest);
  }
  return { key, value, timestamp: record.timestamp, headers };
}

/** How `DeadLetters` says what it dead-letters. */
export interface DeadLetterLogOptions {
  /** One line per error code per this many milliseconds at most; default 10 s. */
  readonly intervalMs?: number;
  /** The clock the interval is measured on; `Date.now` by default. */
  readonly clock?: () => number;
}

/**
 * An engine's dead letters: where they go (`topic`, one partition), how large one may be
 * (`maxBytes`, the topic's `max.message.bytes`), and how they are counted and said. Every dead
 * letter is counted in `crawlstream_dead_letters_total{code}` (and one written as a reference in
 * `crawlstream_dead_letters_oversized_total`); lines are rate-limited per code: the first of an
 * interval is said, the others only counted, and the next line said for that code tells how many
 * were not (`…; 41 more CS_SCHEMA dead letters in the last 10 s not said`). A poison topic of a
 * million records says a few lines, not a million. One per engine, shared by its tasks.
 */
export class DeadLetters {
  private readonly intervalMs: number;
  private readonly clock: () => number;
  /** Per code: when its last line was said, and how many dead letters since were not. */
  private readonly said = new Map<string, { at: number; unsaid: number }>();

  constructor(
    readonly topic: string,
    readonly maxBytes: number,
    private readonly metrics: Metrics,
    private readonly say: (line: string) => void,
    options: DeadLetterLogOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 10_000;
    this.clock = options.clock ?? Date.now;
  }

  /**
   * The dead letter of `record`, which failed with `error` (`deadLetterOf` at this topic's size),
   * counted and, unless this interval already said one of its code, said. The engine puts it in
   * its next commit (partition 0 of `topic`), so it is written exactly when the record's position is.
   */
  of(record: ConsumedRawRecord, error: unknown): DeadLetter {
    const letter = deadLetterOf(record, error, this.maxBytes);
    const code = letter.headers['x-error-code']!;
    this.metrics.inc(M.deadLetters, 1, code);
    if (letter.headers['x-value-omitted'] !== undefined) this.metrics.inc(M.deadLettersOversized, 1);
    const now = this.clock();
    const last = this.said.get(code);
    if (last !== undefined && now - last.at < this.intervalMs) {
      last.unsaid++;
      return letter;
    }
    const omitted =
      letter.headers['x-value-omitted'] !== undefined
        ? ` (value of ${letter.headers['x-value-bytes']} bytes written as a reference)`
        : '';
    const unsaid =
      last !== undefined && last.unsaid > 0
        ? `; ${last.unsaid} more ${code} dead letters in the last ${Math.round((now - last.at) / 1000)} s not said`
        : '';
    this.said.set(code, { at: now, unsaid: 0 });
    this.say(
      `dead letter ${letter.headers['x-source']}: ${code} ${letter.headers['x-error-message']}${omitted}${unsaid}`,
    );
    return letter;
  }
}
