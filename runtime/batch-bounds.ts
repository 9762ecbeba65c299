/**
 * How much input a task takes for processing at once, on either engine: at most BATCH_RECORDS
 * records and BATCH_BYTES of keys and values, at least one record whatever its size. A task holds
 * what it took until it has processed all of it.
 */

/** Records a task takes at once, at most. */
export const BATCH_RECORDS = 500;

/**
 * Bytes of records a task takes at once (about five pages of 24 KiB): pages taken 500 at a time
 * (~12 MiB a parser task) lived long enough to reach V8's old generation, whose growth in buffers
 * then forced a full collection twice a second (docs/BENCHMARKS.md, real pages: ninth sitting on
 * the embedded engine, eleventh on Kafka).
 */
export const BATCH_BYTES = 128 * 1024;
