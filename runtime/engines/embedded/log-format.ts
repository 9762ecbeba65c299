import { CrawlError } from '../../../core/errors.js';
import type { RawRecord, RecordHeaders } from '../../record.js';

/**
 * The embedded log's layout in its RocksDB (log-store.ts): the keys of records (`r`), partition
 * ends (`e`) and consumer positions (`p`), and a record's frame. Changing any of it changes every
 * data dir on disk.
 */

export function tpKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

/** Record key prefixes by `topic\0partition`: built once, never handed out (callers copy or slice). */
const prefixes = new Map<string, Buffer>();

export function recordPrefix(topic: string, partition: number): Buffer {
  const tp = tpKey(topic, partition);
  let prefix = prefixes.get(tp);
  if (prefix === undefined) {
    const b = Buffer.alloc(Buffer.byteLength(topic) + 7);
    let n = b.write(`r\u0000${topic}\u0000`);
    n = b.writeUInt32BE(partition, n);
    prefix = b.subarray(0, n);
    prefixes.set(tp, prefix);
  }
  return prefix;
}

export function recordKey(topic: string, partition: number, offset: number): Buffer {
  const p = recordPrefix(topic, partition);
  const b = Buffer.allocUnsafe(p.length + 8);
  p.copy(b);
  b.writeUInt32BE(Math.floor(offset / 0x1_0000_0000), p.length);
  b.writeUInt32BE(offset >>> 0, p.length + 4);
  return b;
}

export function endKey(topic: string, partition: number): Buffer {
  return Buffer.from(`e\u0000${topic}\u0000${partition}`);
}

export function positionKey(group: string, topic: string, partition: number): Buffer {
  return Buffer.from(`p\u0000${group}\u0000${topic}\u0000${partition}`);
}

// record layout: timestamp f64 | key length u32 | key | value length i32 (-1 = null) | value | headers JSON
/**
 * The frames of `records`, in order, as views of one new buffer: a commit's records are framed
 * with one allocation, not one each (a page's ~25 KB records were each a buffer of their own).
 * The views share that buffer and live as long as the commit does: the kept segments write them
 * and RocksDB copies them; the tail cache keeps the records as appended, not their frames.
 */
export function encodeRecords(records: readonly RawRecord[]): Buffer[] {
  const headers: (Buffer | undefined)[] = new Array(records.length);
  let total = 0;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const h = r.headers && Object.keys(r.headers).length > 0 ? Buffer.from(JSON.stringify(r.headers)) : undefined;
    headers[i] = h;
    total += 16 + r.key.length + (r.value === null ? 0 : r.value.length) + (h === undefined ? 0 : h.length);
  }
  const b = Buffer.allocUnsafeSlow(total);
  const frames: Buffer[] = new Array(records.length);
  let o = 0;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const start = o;
    o = b.writeDoubleBE(r.timestamp, o);
    o = b.writeUInt32BE(r.key.length, o);
    o += r.key.copy(b, o);
    o = b.writeInt32BE(r.value === null ? -1 : r.value.length, o);
    if (r.value !== null) o += r.value.copy(b, o);
    const h = headers[i];
    if (h !== undefined) o += h.copy(b, o);
    frames[i] = b.subarray(start, o);
  }
  return frames;
}

export function decodeRecord(b: Buffer, topic: string, partition: number, offset: number): RawRecord {
  try {
    const timestamp = b.readDoubleBE(0);
    const keyLength = b.readUInt32BE(8);
    const key = b.subarray(12, 12 + keyLength);
    let o = 12 + keyLength;
    const valueLength = b.readInt32BE(o);
    o += 4;
    const value = valueLength < 0 ? null : b.subarray(o, o + valueLength);
    o += Math.max(0, valueLength);
    if (o > b.length) throw new RangeError('record shorter than its lengths');
    const headers = o < b.length ? (JSON.parse(b.subarray(o).toString('utf8')) as RecordHeaders) : undefined;
    return headers ? { key, value, timestamp, headers } : { key, value, timestamp };
  } catch (err) {
    throw new CrawlError(
      'CS_CORRUPT_RECORD',
      `record ${topic}-${partition}@${offset} cannot be read: ${(err as Error).message}`,
      { cause: err },
    );
  }
}
