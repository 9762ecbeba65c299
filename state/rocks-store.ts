import type { RocksPort, RocksWrite } from './rocks.js';
import type { Codec, KeyValueStore } from './state-store.js';
import type { ChangeloggedStore } from './store-builder.js';

interface Pending<V> {
  key: Buffer;
  value: Buffer | null;
  decoded: V | undefined;
}

const CHECKPOINT_PREFIX = Buffer.from('\u0000checkpoint\u0000');

/**
 * A KeyValueStore in a task's RocksDB under the prefix `s\0<name>\0`. Writes wait in memory
 * until the runtime commits them (after the changelog is durable), so local state never runs
 * ahead of the changelog; the checkpoint key records how far it has been applied.
 */
export class RocksKeyValueStore<K, V> implements KeyValueStore<K, V>, ChangeloggedStore {
  private readonly prefix: Buffer;
  private readonly end: Buffer;
  private readonly checkpointKey: Buffer;
  private pending = new Map<string, Pending<V>>();

  constructor(
    readonly name: string,
    private readonly db: RocksPort,
    private readonly keyCodec: Codec<K>,
    private readonly valueCodec: Codec<V>,
  ) {
    this.prefix = Buffer.from(`s\u0000${name}\u0000`);
    this.end = Buffer.from(`s\u0000${name}\u0001`);
    this.checkpointKey = Buffer.concat([CHECKPOINT_PREFIX, Buffer.from(name)]);
  }

  get(key: K): V | undefined {
    const raw = this.keyCodec.encode(key);
    const p = this.pending.get(raw.toString('latin1'));
    if (p) {
      if (p.value === null) return undefined;
      return (p.decoded ??= this.valueCodec.decode(p.value));
    }
    const stored = this.db.get(Buffer.concat([this.prefix, raw]));
    return stored === undefined ? undefined : this.valueCodec.decode(stored);
  }

  put(key: K, value: V): void {
    const raw = this.keyCodec.encode(key);
    this.pending.set(raw.toString('latin1'), { key: raw, value: this.valueCodec.encode(value), decoded: value });
  }

  delete(key: K): void {
    const raw = this.keyCodec.encode(key);
    this.pending.set(raw.toString('latin1'), { key: raw, value: null, decoded: undefined });
  }

  *range(gte: K, lt: K): IterableIterator<[K, V]> {
    const from = this.keyCodec.encode(gte);
    const to = this.keyCodec.encode(lt);
    const overlay = [...this.pending.values()]
      .filter((p) => Buffer.compare(p.key, from) >= 0 && Buffer.compare(p.key, to) < 0)
      .sort((a, b) => Buffer.compare(a.key, b.key));
    let i = 0;
    for (const [fullKey, value] of this.db.iterate(Buffer.concat([this.prefix, from]), Buffer.concat([this.prefix, to]))) {
      const key = fullKey.subarray(this.prefix.length);
      while (i < overlay.length && Buffer.compare(overlay[i]!.key, key) < 0) {
        const p = overlay[i++]!;
        if (p.value !== null) yield [this.keyCodec.decode(p.key), this.valueCodec.decode(p.value)];
      }
      if (i < overlay.length && Buffer.compare(overlay[i]!.key, key) === 0) {
        const p = overlay[i++]!;
        if (p.value !== null) yield [this.keyCodec.decode(p.key), this.valueCodec.decode(p.value)];
        continue;
      }
      yield [this.keyCodec.decode(key), this.valueCodec.decode(value)];
    }
    for (; i < overlay.length; i++) {
      const p = overlay[i]!;
      if (p.value !== null) yield [this.keyCodec.decode(p.key), this.valueCodec.decode(p.value)];
    }
  }

  pendingChanges(): { key: Buffer; value: Buffer | null }[] {
    return [...this.pending.values()].map((p) => ({ key: p.key, value: p.value }));
  }

  applyCommitted(nextOffset: number): void {
    const batch: RocksWrite[] = [];
    for (const p of this.pending.values()) batch.push({ key: Buffer.concat([this.prefix, p.key]), value: p.value });
    batch.push({ key: this.checkpointKey, value: offsetBytes(nextOffset) });
    // no fsync: the changelog is the durable copy; a lost tail is replayed from the checkpoint
    this.db.write(batch);
    this.pending = new Map();
  }

  discardPending(): void {
    this.pending = new Map();
  }

  checkpoint(): number {
    const raw = this.db.get(this.checkpointKey);
    return raw === undefined ? 0 : Number(raw.readBigUInt64BE(0));
  }

  restore(records: { key: Buffer; value: Buffer | null }[], nextOffset: number): void {
    const batch: RocksWrite[] = records.map((r) => ({ key: Buffer.concat([this.prefix, r.key]), value: r.value }));
    batch.push({ key: this.checkpointKey, value: offsetBytes(nextOffset) });
    this.db.write(batch);
  }

  *entries(): IterableIterator<[Buffer, Buffer]> {
    for (const [k, v] of this.db.iterate(this.prefix, this.end)) yield [k.subarray(this.prefix.length), v];
  }

  flush(): void {
    // writes become durable through the changelog at commit; nothing to do here
  }

  close(): void {
    this.pending = new Map();
  }
}

function offsetBytes(offset: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(offset));
  return b;
}
