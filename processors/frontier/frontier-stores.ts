import type { Codec, KeyValueStore } from '../../state/state-store.js';
import { bufferCodec, stringCodec } from '../../state/state-store.js';
import { keyValueStore, type StoreBuilder } from '../../state/store-builder.js';
import { loadSchema } from '../../schemas/index.js';
import type { FrontEntry, HostState, QueueEntry, SiteState } from '../../schemas/types.js';
import { frontKeyCodec, type FrontKey } from './front-queues.js';

export const HOSTS_STORE = 'frontier-hosts';
export const QUEUE_STORE = 'frontier-queue';
export const SEEN_STORE = 'frontier-seen';
export const META_STORE = 'frontier-meta';
export const SITES_STORE = 'frontier-sites';
export const FRONT_STORE = 'frontier-front';

/** Position of one waiting URL: its host's FIFO, ordered by sequence number. */
export interface QueueKey {
  host: string;
  seq: number;
}

/** `host \0 seq(u64 BE)`: a host's entries are contiguous and in FIFO order. */
export const queueKeyCodec: Codec<QueueKey> = {
  encode: ({ host, seq }) => {
    const h = Buffer.from(host, 'utf8');
    const b = Buffer.allocUnsafe(h.length + 9);
    h.copy(b);
    b[h.length] = 0;
    b.writeBigUInt64BE(BigInt(seq), h.length + 1);
    return b;
  },
  decode: (b) => {
    const zero = b.indexOf(0);
    return { host: b.subarray(0, zero).toString('utf8'), seq: Number(b.readBigUInt64BE(zero + 1)) };
  },
};

function avroCodec<T>(name: 'HostState' | 'QueueEntry' | 'SiteState' | 'FrontEntry'): Codec<T> {
  const type = loadSchema(name).type;
  return { encode: (v) => type.toBuffer(v), decode: (b) => type.fromBuffer(b) as T };
}

export type HostStore = KeyValueStore<string, HostState>;
export type QueueStore = KeyValueStore<QueueKey, QueueEntry>;
/** Exact 8-byte URL fingerprints of every URL ever admitted: the seen-set. */
export type SeenStore = KeyValueStore<Buffer, Buffer>;
export type MetaStore = KeyValueStore<string, Buffer>;
export type SiteStore = KeyValueStore<string, SiteState>;
export type FrontStore = KeyValueStore<FrontKey, FrontEntry>;

export function frontierStores(): StoreBuilder[] {
  return [
    keyValueStore(HOSTS_STORE, stringCodec, avroCodec<HostState>('HostState')),
    keyValueStore(QUEUE_STORE, queueKeyCodec, avroCodec<QueueEntry>('QueueEntry')),
    keyValueStore(SEEN_STORE, bufferCodec, bufferCodec),
    keyValueStore(META_STORE, stringCodec, bufferCodec),
    keyValueStore(SITES_STORE, stringCodec, avroCodec<SiteState>('SiteState')),
    keyValueStore(FRONT_STORE, frontKeyCodec, avroCodec<FrontEntry>('FrontEntry')),
  ];
}
