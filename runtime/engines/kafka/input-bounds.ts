import type { ConsumedRawRecord } from '../../record.js';

/**
 * How much fetched input a Kafka task holds. A task holds the records it took until all of them are
 * processed, and its partition's fetch waits while its untaken backlog is past either high water:
 * bounds the memory of a slow task (the frontier behind a burst of links, a parser behind on pages)
 * without stalling a fast one.
 */

/** Fetched records a task may hold untaken before its partition's fetch loop waits. */
export const HIGH_WATER = 2_000;

/**
 * Bytes of fetched records a task may hold untaken before its partition's fetch loop waits, as
 * HIGH_WATER for large records: 2,000 pages of 24 KiB held ~50 MiB a parser task, and the process
 * went past 1 GiB on the real-pages bench (docs/BENCHMARKS.md, "Eleventh sitting"). About 170 such
 * pages, seconds of a parser task's work.
 */
export const HIGH_WATER_BYTES = 4 * 1024 * 1024;

/** Records taken for processing at once, at most. */
export const MAX_TAKE = 500;

/**
 * Bytes of records taken for processing at once (at least one record, at most MAX_TAKE): pages
 * taken 500 at a time lived long enough to reach V8's old generation and forced its full
 * collections (the embedded engine's POLL_BYTES, for the same reason).
 */
export const TAKE_BYTES = 128 * 1024;

/** What a buffered record holds: its key and value bytes. */
export function recordBytes(r: ConsumedRawRecord): number {
  return r.key.length + (r.value?.length ?? 0);
}

/** Key and value bytes of `records`. */
export function bytesOf(records: readonly ConsumedRawRecord[]): number {
  let bytes = 0;
  for (const r of records) bytes += recordBytes(r);
  return bytes;
}

/** Removes and returns the first records of `buffer`: up to MAX_TAKE of them and TAKE_BYTES, at least one. */
export function takeRecords(buffer: ConsumedRawRecord[]): ConsumedRawRecord[] {
  let n = 0;
  let bytes = 0;
  while (n < buffer.length && n < MAX_TAKE && (n === 0 || bytes < TAKE_BYTES)) bytes += recordBytes(buffer[n++]!);
  return buffer.splice(0, n);
}
