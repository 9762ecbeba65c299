/**
 * The key formats of the seen-set's exact layer in its store, and the record of a sweep's
 * position. Keys never collide with the 8-byte fingerprint keys of the layout before it.
 *
 * - `p` + bits (1 byte) + index (u32 BE), 6 bytes: a block, sorted 8-byte fingerprints (`p` from its
 *   first name, "page"; kept so stores written before the rename still read).
 * - `r` + sequence (u64 BE), 9 bytes: a run, the fingerprints of one flush, in any order.
 * - `meta`, 4 bytes: the sweep position (`SweepState`, 32 bytes, versioned).
 * - `count`, 5 bytes: the seen-set's recorded count (u64 BE), as of the last admit.
 * - `legacy-none`, 11 bytes: present once a complete scan found no fingerprint of the old layout.
 * - 8 bytes: one fingerprint of the old layout (value empty).
 */

export const META_KEY = Buffer.from('meta');
/** Not 8 bytes long, so never taken for a fingerprint: lets `init()` size the filter before any scan. */
export const COUNT_KEY = Buffer.from('count');
export const NO_LEGACY_KEY = Buffer.from('legacy-none');

/** The value under COUNT_KEY. */
export function encodeCount(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

/** The count in a COUNT_KEY value; undefined when absent or malformed. */
export function decodeCount(b: Buffer | undefined): number | undefined {
  return b === undefined || b.length !== 8 ? undefined : Number(b.readBigUInt64BE(0));
}
const META_VERSION = 1;
const BLOCK = 0x70;
const RUN = 0x72;

/** Where the sweep is: blocks below `cursor` (in newBits units) are in the new layout, the rest in the old. */
export interface SweepState {
  oldBits: number;
  newBits: number;
  cursor: number;
  /** Runs with a smaller sequence are deleted when this sweep ends. */
  sweepStart: number;
  nextSeq: number;
  sweeps: number;
}

/** Every key of the store sorts at or after ALL_FROM and before ALL_TO. */
export const ALL_FROM = Buffer.alloc(0);
export const ALL_TO = Buffer.alloc(10, 0xff);

export function encodeSweepState(s: SweepState): Buffer {
  const b = Buffer.alloc(32);
  b[0] = META_VERSION;
  b[1] = s.oldBits;
  b[2] = s.newBits;
  b.writeUInt32BE(s.cursor, 4);
  b.writeBigUInt64BE(BigInt(s.sweepStart), 8);
  b.writeBigUInt64BE(BigInt(s.nextSeq), 16);
  b.writeBigUInt64BE(BigInt(s.sweeps), 24);
  return b;
}

/** The state in a `meta` value; undefined when absent or of another version. */
export function decodeSweepState(b: Buffer | undefined): SweepState | undefined {
  if (b === undefined || b.length !== 32 || b[0] !== META_VERSION) return undefined;
  return {
    oldBits: b[1]!,
    newBits: b[2]!,
    cursor: b.readUInt32BE(4),
    sweepStart: Number(b.readBigUInt64BE(8)),
    nextSeq: Number(b.readBigUInt64BE(16)),
    sweeps: Number(b.readBigUInt64BE(24)),
  };
}

/** The fewest block bits a layout takes. */
export const MIN_BITS = 4;
const MAX_BITS = 22;

/** The block bits a layout of `count` fingerprints takes, for about `blockTarget` fingerprints a block. */
export function layoutBits(count: number, blockTarget: number): number {
  const bits = Math.ceil(Math.log2(Math.max(1, count) / blockTarget));
  return Math.min(MAX_BITS, Math.max(MIN_BITS, bits));
}

/** A block's number in RAM: bits × 2^32 + index. */
export function blockId(bits: number, index: number): number {
  return bits * 2 ** 32 + index;
}

export function blockKey(bits: number, index: number): Buffer {
  const k = Buffer.allocUnsafe(6);
  k[0] = BLOCK;
  k[1] = bits;
  k.writeUInt32BE(index, 2);
  return k;
}

/** The key of block `id` (a `blockId`). */
export function blockKeyOf(id: number): Buffer {
  return blockKey(Math.floor(id / 2 ** 32), id % 2 ** 32);
}

export function runKey(seq: number): Buffer {
  const k = Buffer.allocUnsafe(9);
  k[0] = RUN;
  k.writeBigUInt64BE(BigInt(seq), 1);
  return k;
}

export const isBlockKey = (key: Buffer): boolean => key.length === 6 && key[0] === BLOCK;
export const isRunKey = (key: Buffer): boolean => key.length === 9 && key[0] === RUN;
/** The sequence number of a run key. */
export const runSeq = (key: Buffer): number => Number(key.readBigUInt64BE(1));
