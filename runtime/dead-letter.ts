import { M } from '../core/metric-catalogue.js';
import type { Metrics } from '../core/metrics.js';
import type { ConsumedRawRecord, RecordHeaders } from './record.js';

/** The dead-letter topic of an application: one partition, records as they were consumed. */
export function deadLetterTopicOf(applicationId: string): string {
  return `${applicationId}-dead-letters`;
}

/** A record no retry can process, as both engines write it to the dead-letter topic. */
export interface DeadLetter {
  readonly key: Buffer;
  /** The consumed value, unchanged (null for a tombstone). */
  readonly value: Buffer | null;
  readonly timestamp: number;
  /** `x-error-code` (a CS_* code), `x-error-message` (≤ 1000 chars), `x-source` (`topic-partition@offset`). */
  readonly headers: RecordHeaders;
}

/**
 * The dead letter of `record`, which failed with `error`: counted by code in
 * `crawlstream_dead_letters_total`, said in one line, and returned for the engine to put in its
 * next commit (partition 0 of the dead-letter topic), so it is written exactly when the record's
 * position is. Copies key and value; the record is not kept.
 */
export function deadLetterOf(
  record: ConsumedRawRecord,
  error: unknown,
  metrics: Metrics,
  say: (line: string) => void,
): DeadLetter {
  const err = error as { code?: string; message?: string };
  const code = err.code ?? 'CS_INTERNAL';
  const message = err.message ?? String(error);
  const source = `${record.topic}-${record.partition}@${record.offset}`;
  metrics.inc(M.deadLetters, 1, code);
  say(`dead letter ${source}: ${code} ${message}`);
  return {
    key: Buffer.from(record.key),
    value: record.value === null ? null : Buffer.from(record.value),
    timestamp: record.timestamp,
    headers: { 'x-error-code': code, 'x-error-message': message.slice(0, 1000), 'x-source': source },
  };
}
