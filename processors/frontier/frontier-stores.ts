import type { KeyValueStore } from '../../state/state-store.js';
import type { types } from 'avsc';
import { bufferSerde, encoded, stringSerde, type Serde } from '../../core/serde.js';
import { keyValueStore, type StoreBuilder } from '../../state/store-builder.js';
import { loadSchema } from '../../schemas/index.js';
import type { HostState, SiteState, UrlHistory } from '../../schemas/types.js';
import { queueKeySerde, type QueueStore } from './back-queues.js';
import { frontKeySerde, type FrontKey } from './front-queues.js';
import { chunkSerde, type QueueChunk } from './queue-chunk.js';
import { hostStateSerde } from './robots-origins.js';

export const HOSTS_STORE = 'frontier-hosts';
export const QUEUE_STORE = 'frontier-queue';
export const SEEN_STORE = 'frontier-seen';
export const META_STORE = 'frontier-meta';
export const SITES_STORE = 'frontier-sites';
export const FRONT_STORE = 'frontier-front';
export const HISTORY_STORE = 'frontier-history';
export const DUE_STORE = 'frontier-due';
export const ROBOTS_STORE = 'frontier-robots';
export const DEFERRED_STORE = 'frontier-deferred';
export const SCOPE_STORE = 'frontier-scope';

/**
 * Avro binary with no writer schema (the store holds none). Fields are only ever added at the end
 * with a default, so a value written before the last k were added ends k fields short: it is read
 * with those fields' encoded defaults appended (exactly one k decodes without bytes left over).
 */
export function avroSerde<T>(name: 'SiteState' | 'UrlHistory'): Serde<T> {
  const type = loadSchema(name).type as types.RecordType;
  const tails: Buffer[] = [];
  const fields = type.fields;
  for (let k = 1; k < fields.length; k++) {
    const field = fields[fields.length - k]!;
    const value: unknown = field.defaultValue();
    if (value === undefined) break;
    tails.push(Buffer.concat([field.type.toBuffer(value), tails.at(-1) ?? Buffer.alloc(0)]));
  }
  return {
    serialize: (v) => encoded((buf, pos) => type.encode(v, buf, pos)),
    deserialize: (b) => {
      try {
        return type.fromBuffer(b) as T;
      } catch (err) {
        for (const tail of tails) {
          try {
            return type.fromBuffer(Buffer.concat([b, tail])) as T;
          } catch {
            // written before a different number of fields was added
          }
        }
        throw err;
      }
    },
  };
}

export type HostStore = KeyValueStore<string, HostState>;
export type { QueueStore };
/** Exact 8-byte URL fingerprints of every URL ever admitted: the seen-set. */
export type SeenStore = KeyValueStore<Buffer, Buffer>;
export type MetaStore = KeyValueStore<string, Buffer>;
export type SiteStore = KeyValueStore<string, SiteState>;
export type FrontStore = KeyValueStore<FrontKey, QueueChunk>;
/** URLs a heuristic held back, by site (deferred-set.ts). */
export type { DeferredStore } from './deferred-set.js';
/** robots.txt bodies by origin (`scheme://host[:port]`), written only when one is fetched. */
export type RobotsStore = KeyValueStore<string, string>;
/** What the seeds put in scope (scope.ts). */
export type { ScopeStore } from './scope.js';

export function frontierStores(): StoreBuilder[] {
  return [
    keyValueStore(HOSTS_STORE, stringSerde, hostStateSerde()),
    // chunks of CHUNK_ENTRIES queue entries per host (QueueEntry Avro encodings back to back)
    keyValueStore(QUEUE_STORE, queueKeySerde, chunkSerde),
    keyValueStore(SEEN_STORE, bufferSerde, bufferSerde),
    keyValueStore(META_STORE, stringSerde, bufferSerde),
    keyValueStore(SITES_STORE, stringSerde, avroSerde<SiteState>('SiteState')),
    // chunks of CHUNK_ENTRIES front entries per band (FrontEntry Avro encodings back to back)
    keyValueStore(FRONT_STORE, frontKeySerde, chunkSerde),
    // per fetched URL (key: its 8-byte fingerprint): validators, digests, interval, next due
    keyValueStore(HISTORY_STORE, bufferSerde, avroSerde<UrlHistory>('UrlHistory')),
    // the due index: nextDue (u64 BE) ‖ fingerprint → empty (recrawl-schedule.ts)
    keyValueStore(DUE_STORE, bufferSerde, bufferSerde),
    // the last robots.txt body of each origin: out of the host state, which is rewritten after every fetch
    keyValueStore(ROBOTS_STORE, stringSerde, stringSerde),
    // URLs a heuristic held back: site \0 group seq → DeferredUrl encoding; \x01 site → the site's counts (deferred-set.ts)
    keyValueStore(DEFERRED_STORE, stringSerde, bufferSerde),
    // the seeds' scope: s\0 site, h\0 host, p\0 host \0 path prefix → empty (scope.ts); written only when --scope is not web
    keyValueStore(SCOPE_STORE, stringSerde, bufferSerde),
  ];
}
