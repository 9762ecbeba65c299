/** Headers travel with a record through every engine; values are UTF-8 strings. */
export type RecordHeaders = { readonly [name: string]: string };

/**
 * One record flowing through the topology: key, value, event timestamp (epoch ms) and headers.
 * Records are immutable once forwarded; a processor that wants to change one forwards a new one.
 */
export interface StreamRecord<K, V> {
  readonly key: K;
  readonly value: V;
  readonly timestamp: number;
  readonly headers?: RecordHeaders;
}

/** Where a consumed record came from. Offsets are per topic-partition and strictly increasing. */
export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/** A record as stored in a topic partition: key and value already serialized. */
export interface RawRecord {
  readonly key: Buffer;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers?: RecordHeaders;
}

/** A stored record together with its position. */
export interface ConsumedRawRecord extends RawRecord, RecordMetadata {}
