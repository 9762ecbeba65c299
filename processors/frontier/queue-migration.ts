import type { FrontEntry, HostState, QueueEntry } from '../../schemas/types.js';
import type { FrontStore, HostStore, MetaStore, QueueStore } from './frontier-stores.js';
import { numberBytes, readNumber } from './host-state.js';
import { CHUNK_ENTRIES, chunkOf, FRONT_ENTRY, QUEUE_ENTRY, QueueChunk, type EntryFormat } from './queue-chunk.js';

/** `frontier-meta` key naming the layout of the queue stores; absent in stores from before chunks. */
export const QUEUE_FORMAT_KEY = 'queue-format';
const CHUNKED = 2;
/** Entries end with kind and visit (freshness). */
const WITH_KIND = 3;

/** Entry formats before WITH_KIND: the same fields without the trailing kind and visit. */
const QUEUE_ENTRY_V2: EntryFormat<QueueEntry> = {
  write: () => {
    throw new Error('old queue entries are only read');
  },
  read(c) {
    const url = c.readString();
    const depth = c.readLong();
    const redirectHops = c.readLong();
    const attempts = c.readLong();
    return { url, depth, redirectHops, attempts, discoveredAt: c.readLong() };
  },
  skip(c) {
    c.skipString();
    for (let i = 0; i < 4; i++) c.skipLong();
  },
};
const FRONT_ENTRY_V2: EntryFormat<FrontEntry> = {
  write: () => {
    throw new Error('old front entries are only read');
  },
  read(c) {
    const url = c.readString();
    const host = c.readString();
    const origin = c.readString();
    const site = c.readString();
    const depth = c.readLong();
    const redirectHops = c.readLong();
    return { url, host, origin, site, depth, redirectHops, discoveredAt: c.readLong() };
  },
  skip(c) {
    for (let i = 0; i < 4; i++) c.skipString();
    for (let i = 0; i < 3; i++) c.skipLong();
  },
};

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
  const format = marker === undefined ? 0 : readNumber(marker);
  if (format >= WITH_KIND) return 0;
  if (format === CHUNKED) return addKinds(stores);
  let moved = 0;
  const changed: HostState[] = [];
  for (const [host, state] of hosts.range('', '\uffff')) {
    if (state.headSeq === 0 && state.tailSeq === 0) continue;
    const n = rewrite(
      state.headSeq,
      state.tailSeq,
      QUEUE_ENTRY_V2,
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
      FRONT_ENTRY_V2,
      FRONT_ENTRY,
      (seq) => front.get({ band, chunk: seq }),
      (seq) => front.delete({ band, chunk: seq }),
      (chunk, value) => front.put({ band, chunk }, value),
    );
    meta.put(`front-head-${band}`, numberBytes(0));
    meta.put(`front-tail-${band}`, numberBytes(n));
    moved += n;
  }
  meta.put(QUEUE_FORMAT_KEY, numberBytes(WITH_KIND));
  return moved;
}

/**
 * Chunked stores of format 2 to format 3: every chunk of every FIFO rewritten under its own key
 * with each entry's kind (PAGE) and visit (0) appended. Entries a chunk holds before its FIFO's
 * head are rewritten too, so positions within the chunk stay as they were. Returns the URLs
 * still queued.
 */
function addKinds(stores: { hosts: HostStore; queue: QueueStore; front: FrontStore; meta: MetaStore }): number {
  const { hosts, queue, front, meta } = stores;
  let moved = 0;
  for (const [host, state] of hosts.range('', '\uffff')) {
    if (state.tailSeq <= state.headSeq) continue;
    for (let chunk = chunkOf(state.headSeq); chunk <= chunkOf(state.tailSeq - 1); chunk++) {
      const old = queue.get({ host, chunk });
      if (old !== undefined) queue.put({ host, chunk }, convert(old, QUEUE_ENTRY_V2, QUEUE_ENTRY));
    }
    moved += state.tailSeq - state.headSeq;
  }
  for (let band = 0; band < 4; band++) {
    const head = readNumber(meta.get(`front-head-${band}`));
    const tail = readNumber(meta.get(`front-tail-${band}`));
    if (tail <= head) continue;
    for (let chunk = chunkOf(head); chunk <= chunkOf(tail - 1); chunk++) {
      const old = front.get({ band, chunk });
      if (old !== undefined) front.put({ band, chunk }, convert(old, FRONT_ENTRY_V2, FRONT_ENTRY));
    }
    moved += tail - head;
  }
  meta.put(QUEUE_FORMAT_KEY, numberBytes(WITH_KIND));
  return moved;
}

function convert<E>(old: QueueChunk, from: EntryFormat<E>, to: EntryFormat<E>): QueueChunk {
  const out = new QueueChunk();
  old.pos = 0;
  while (old.pos < old.byteLength) to.write(out, from.read(old));
  return out;
}

/** Rewrites old entries `head` to `tail` (one per key) as chunks from sequence 0; returns how many there were. */
function rewrite<E>(
  head: number,
  tail: number,
  from: EntryFormat<E>,
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
    format.write(chunk, old.entryAt(0, from));
    if (++n % CHUNK_ENTRIES === 0) {
      write(n / CHUNK_ENTRIES - 1, chunk);
      chunk = new QueueChunk();
    }
  }
  if (n % CHUNK_ENTRIES !== 0) write(Math.floor(n / CHUNK_ENTRIES), chunk);
  return n;
}
