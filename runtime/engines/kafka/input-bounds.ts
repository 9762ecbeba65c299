import type { ConsumedRawRecord } from '../../record.js';
import { BATCH_BYTES, BATCH_RECORDS } from '../../batch-bounds.js';

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

/** What a buffered record holds: its key and value bytes. */
export function recordBytes(r: ConsumedRawRecord): number {
  return r.key.length + (r.value?.length ?? 0);
}

/**
 * A task's fetched records not yet taken, in offset order, with their bytes counted as they come
 * and go (the fetch loop reads `bytes` on every batch and while it waits).
 */
export class InputBuffer {
  private records: ConsumedRawRecord[] = [];
  private held = 0;

  get length(): number {
    return this.records.length;
  }

  /** Key and value bytes of the records held. */
  get bytes(): number {
    return this.held;
  }

  push(r: ConsumedRawRecord): void {
    this.records.push(r);
    this.held += recordBytes(r);
  }

  /**
   * Removes and returns the first records: up to BATCH_RECORDS of them and BATCH_BYTES, at least one
   * (none when empty).
   */
  take(): ConsumedRawRecord[] {
    let n = 0;
    let bytes = 0;
    while (n < this.records.length && n < BATCH_RECORDS && (n === 0 || bytes < BATCH_BYTES))
      bytes += recordBytes(this.records[n++]!);
    this.held -= bytes;
    return this.records.splice(0, n);
  }

  /** Puts `records` back ahead of the ones held (taken and not processed, or rewound). */
  putBack(records: readonly ConsumedRawRecord[]): void {
    if (records.length === 0) return;
    for (const r of records) this.held += recordBytes(r);
    this.records = records.concat(this.records);
  }
}
