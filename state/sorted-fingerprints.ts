/**
 * Sorted fingerprint arrays: 8-byte big-endian entries, ascending, as the seen-set's blocks hold
 * them. Pure functions; buffers passed in are never changed.
 */

/** A big-endian view of a buffer's bytes (V8 inlines DataView reads; Buffer's readUInt32BE is a call). */
function view(b: Buffer): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

/** Whether the sorted 8-byte entries of `block` hold (h, l). */
export function inSorted(block: Buffer, h: number, l: number): boolean {
  const v = view(block);
  let a = 0;
  let b = (block.length >>> 3) - 1;
  while (a <= b) {
    const m = (a + b) >>> 1;
    const mh = v.getUint32(8 * m);
    const ml = v.getUint32(8 * m + 4);
    if (mh < h || (mh === h && ml < l)) a = m + 1;
    else if (mh > h || ml > l) b = m - 1;
    else return true;
  }
  return false;
}

/** Index of the first entry of sorted `block` whose top 32 bits are >= h. */
export function lowerBound(block: Buffer, h: number): number {
  const v = view(block);
  let a = 0;
  let b = block.length >>> 3;
  while (a < b) {
    const m = (a + b) >>> 1;
    if (v.getUint32(8 * m) < h) a = m + 1;
    else b = m;
  }
  return a;
}

const INDEX_SPAN = 2 ** 20;

let scratch = Buffer.allocUnsafeSlow(64 * 1024);

const SLAB = 256 * 1024;

/**
 * Buffers for blocks, carved from slabs of 256 KiB: one allocation for many blocks instead of one
 * each. A slab lives while any block cut from it does: the store's pending writes hold them until
 * the next commit, and a block cache that holds every block until the next sweep replaces them, so
 * whole slabs die together (a cache that holds only some blocks keeps copies instead).
 */
export class BlockArena {
  private slab = Buffer.allocUnsafeSlow(0);
  private used = 0;

  /** A copy of `bytes` in arena memory (a block larger than a quarter slab gets a buffer of its own). */
  copy(bytes: Buffer): Buffer {
    const n = bytes.length;
    if (n > SLAB / 4) return Buffer.from(bytes);
    if (this.used + n > this.slab.length) {
      this.slab = Buffer.allocUnsafeSlow(SLAB);
      this.used = 0;
    }
    const out = this.slab.subarray(this.used, this.used + n);
    bytes.copy(out);
    // 8-byte alignment keeps DataView reads of the next block aligned
    this.used += (n + 7) & ~7;
    return out;
  }
}

/** The entries `idx` (indexes into hi/lo) in order of value: a native sort of packed numbers. */
export function byValue(idx: number[], hi: Uint32Array, lo: Uint32Array): number[] {
  const n = idx.length;
  if (n < 2) return idx;
  if (n > INDEX_SPAN) return idx.sort((a, b) => hi[a]! - hi[b]! || lo[a]! - lo[b]!);
  const packed = new Float64Array(n);
  for (let k = 0; k < n; k++) packed[k] = hi[idx[k]!]! * INDEX_SPAN + k;
  packed.sort();
  const out: number[] = new Array(n);
  for (let k = 0; k < n; k++) out[k] = idx[packed[k]! % INDEX_SPAN]!;
  // entries with equal top halves (rare) are put in order of their low halves
  for (let k = 1; k < n; k++) {
    const x = out[k]!;
    let m = k;
    while (m > 0 && hi[out[m - 1]!] === hi[x] && lo[out[m - 1]!]! > lo[x]!) {
      out[m] = out[m - 1]!;
      m--;
    }
    out[m] = x;
  }
  return out;
}

/**
 * The sorted union, without repeats, of `block` (sorted entries, or none) and the entries `fresh`
 * (indexes into hi/lo, sorted by value). The result is valid until the next call (it is a view of
 * one reused buffer, or `block` itself): copy it to keep it.
 */
export function mergeSorted(
  block: Buffer | undefined,
  fresh: readonly number[],
  hi: Uint32Array,
  lo: Uint32Array,
): Buffer {
  const pn = block === undefined ? 0 : block.length >>> 3;
  if (fresh.length === 0) return block === undefined ? Buffer.alloc(0) : block.subarray(0, 8 * pn);
  if (scratch.length < 8 * (pn + fresh.length)) scratch = Buffer.allocUnsafeSlow(2 * 8 * (pn + fresh.length));
  const out = scratch;
  const w = view(out);
  const r = block === undefined ? w : view(block);
  const fn = fresh.length;
  let o = 0;
  let p = 0;
  let f = 0;
  let lastH = -1;
  let lastL = -1;
  while (p < pn || f < fn) {
    let h: number;
    let l: number;
    if (f === fn) {
      h = r.getUint32(8 * p);
      l = r.getUint32(8 * p + 4);
      p++;
    } else if (p === pn) {
      h = hi[fresh[f]!]!;
      l = lo[fresh[f++]!]!;
    } else {
      const ph = r.getUint32(8 * p);
      const pl = r.getUint32(8 * p + 4);
      const fh = hi[fresh[f]!]!;
      const fl = lo[fresh[f]!]!;
      if (ph < fh || (ph === fh && pl <= fl)) {
        h = ph;
        l = pl;
        p++;
      } else {
        h = fh;
        l = fl;
        f++;
      }
    }
    if (h === lastH && l === lastL) continue;
    w.setUint32(o, h);
    w.setUint32(o + 4, l);
    o += 8;
    lastH = h;
    lastL = l;
  }
  return out.subarray(0, o);
}

/**
 * Orders the pairs (hi[i], lo[i]), i < n, by the top `bits` bits of hi as unsigned (0..24), stable:
 * radix passes of up to 8 bits, each one sequential read and 256 sequential write streams (where a
 * comparison sort would miss the cache). `hi2`/`lo2` (length >= n) are scratch; all four arrays
 * are overwritten. Returns the pair of arrays that holds the result.
 */
export function radixByTopBits(
  hi: Int32Array,
  lo: Int32Array,
  n: number,
  bits: number,
  hi2: Int32Array,
  lo2: Int32Array,
): [Int32Array, Int32Array] {
  const count = new Int32Array(256);
  let a = hi;
  let b = lo;
  let c = hi2;
  let d = lo2;
  for (let done = 0; done < bits; done += 8) {
    const shift = 32 - bits + done;
    const mask = (1 << Math.min(8, bits - done)) - 1;
    count.fill(0);
    for (let i = 0; i < n; i++) count[(a[i]! >>> shift) & mask]!++;
    let sum = 0;
    for (let k = 0; k <= mask; k++) {
      const x = count[k]!;
      count[k] = sum;
      sum += x;
    }
    for (let i = 0; i < n; i++) {
      const h = a[i]!;
      const to = count[(h >>> shift) & mask]!++;
      c[to] = h;
      d[to] = b[i]!;
    }
    [a, c] = [c, a];
    [b, d] = [d, b];
  }
  return [a, b];
}
