import type { HostState } from '../../schemas/types.js';
import type { FrontStore, HostStore, MetaStore, QueueStore } from './frontier-stores.js';
import { numberBytes, readNumber } from './host-state.js';
import { CHUNK_ENTRIES, FRONT_ENTRY, QUEUE_ENTRY, QueueChunk, type EntryFormat } from './queue-chunk.js';

/** `frontier-meta` key naming the layout of the queue stores; absent in stores from before chunks. */
export const QUEUE_FORMAT_KEY = 'queue-format';
const CHUNKED = 2;

/**
 * Brings queue stores written before chunks — one key per URL (`host \0 seq`, `band seq`), the
 * value that entry's Avro encoding — to the chunked layout, once, before the frontier reads them.
 * Every FIFO is read in order, its old keys deleted, and its entries rewritten from sequence 0 in
 * chunks (a new chunk key never shadows an old key still to be read: chunk k is written after old
 * sequence k was read). The rewrite is an ordinary store write: it reaches the changelogs with the
 * task's first commit, and a crash before that commit runs it again from the old layout.
 * Returns the number of URLs moved.
 */
export function migrateQueues(stores: {
  hosts: HostStore;
  queue: QueueStore;
  front: FrontStore;
  meta: MetaStore;
}): number {
  const { hosts, queue, front, meta } = stores;
  const marker = meta.get(QUEUE_FORMAT_KEY);
  if (marker !== undefined && readNumber(marker) >= CHUNKED) return 0;
  let moved = 0;
  const changed: HostState[] = [];
  for (const [host, state] of hosts.range('', '\uffff')) {
    if (state.headSeq === 0 && state.tailSeq === 0) continue;
    const n = rewrite(
      state.headSeq,
      state.tailSeq,
      QUEUE_ENTRY,
      (seq) => queue.get({ host, chunk: seq }),
      (seq) => queue.delete({ host, chunk: seq }),
      (chunk, value) => queue.put({ host, chunk }, value),
    );
    state.headSeq = 0;
    state.tailSeq = n;
    changed.push(state);
    moved += n;
  }
  for (const state of changed) hosts.put(state.host, state);
  for (let band = 0; band < 4; band++) {
    const head = readNumber(meta.get(`front-head-${band}`));
    const tail = readNumber(meta.get(`front-tail-${band}`));
    if (head === 0 && tail === 0) continue;
    const n = rewrite(
      head,
      tail,
      FRONT_ENTRY,
      (seq) => front.get({ band, chunk: seq }),
      (seq) => front.delete({ band, chunk: seq }),
      (chunk, value) => front.put({ band, chunk }, value),
    );
    meta.put(`front-head-${band}`, numberBytes(0));
    meta.put(`front-tail-${band}`, numberBytes(n));
    moved += n;
  }
  meta.put(QUEUE_FORMAT_KEY, numberBytes(CHUNKED));
  return moved;
}

/** Rewrites old entries `head` to `tail` (one per key) as chunks from sequence 0; returns how many there were. */
function rewrite<E>(
  head: number,
  tail: number,
  format: EntryFormat<E>,
  read: (seq: number) => QueueChunk | undefined,
  remove: (seq: number) => void,
  write: (chunk: number, value: QueueChunk) => void,
): number {
  let n = 0;
  let chunk = new QueueChunk();
  for (let seq = head; seq < tail; seq++) {
    const old = read(seq);
    remove(seq);
    // an entry missing from the store was skipped by the old layout too
    if (old === undefined || old.byteLength === 0) continue;
    format.write(chunk, old.entryAt(0, format));
    if (++n % CHUNK_ENTRIES === 0) {
      write(n / CHUNK_ENTRIES - 1, chunk);
      chunk = new QueueChunk();
    }
  }
  if (n % CHUNK_ENTRIES !== 0) write(Math.floor(n / CHUNK_ENTRIES), chunk);
  return n;
}
