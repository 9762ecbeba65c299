import { radixByTopBits } from './sorted-fingerprints.js';

// an entry taken out of its chain is on the free list: its link is FREE_LINK - the next free
// entry (chains end at -1, so every link <= -2 is a free one, and -2 ends the free list)
const FREE_LINK = -3;

/** Growable scratch for the fingerprints `take` hands out: entry i is (hi[i], lo[i]). */
export interface FingerprintScratch {
  hi: Uint32Array;
  lo: Uint32Array;
}

/**
 * The exact layer's fingerprints that are not yet merged into their blocks, in RAM: each chained
 * in the bucket of its top `bits` bits, so "is it here?" walks one short chain and the fingerprints
 * of a block (a run of contiguous buckets) are found by walking those buckets. An entry is three
 * interleaved int32s (top 32 bits, low 32 bits, next in chain): a chain step is one memory miss.
 * Entries taken out are reused by the next adds, so the arrays hold about the most fingerprints
 * held at once (a sweep keeps about half its span unmerged), not everything added since the last
 * `rebucket`.
 *
 * Ownership: nothing passed in is kept. Not thread-safe; one instance per exact layer.
 */
export class UnmergedFingerprints {
  private ent: Int32Array;
  private used = 0;
  private live = 0;
  // the first entry of the free list, -1 when empty
  private free = -1;
  private head: Int32Array;

  /**
   * `bits`: 1..24; about one bucket per two fingerprints expected at most is the aim. `capacity`:
   * entries to allocate at once (the array is zeroed lazily by the OS, so room not yet used costs
   * no RAM), so that reading many fingerprints in does not copy the array as it doubles.
   */
  constructor(
    private bucketBits: number,
    capacity = 1024,
  ) {
    checkBits(bucketBits);
    this.head = new Int32Array(2 ** bucketBits).fill(-1);
    this.ent = new Int32Array(3 * Math.max(1024, Math.ceil(capacity)));
  }

  /** Fingerprints held. */
  get size(): number {
    return this.live;
  }

  get bits(): number {
    return this.bucketBits;
  }

  /** RAM held by the chains (arrays as allocated). */
  get byteLength(): number {
    return this.ent.byteLength + this.head.byteLength;
  }

  /** Adds the fingerprint whose top and low 32 bits are `h` and `l` (unsigned); a repeat is kept twice. */
  add(h: number, l: number): void {
    let i = this.free;
    if (i >= 0) {
      this.free = FREE_LINK - this.ent[3 * i + 2]!;
    } else {
      if (3 * this.used === this.ent.length) this.grow(2 * this.used);
      i = this.used++;
    }
    const bucket = h >>> (32 - this.bucketBits);
    this.ent[3 * i] = h;
    this.ent[3 * i + 1] = l;
    this.ent[3 * i + 2] = this.head[bucket]!;
    this.head[bucket] = i;
    this.live++;
  }

  has(h: number, l: number): boolean {
    const e = this.ent;
    const h32 = h | 0;
    const l32 = l | 0;
    for (let i = this.head[h >>> (32 - this.bucketBits)]!; i >= 0; i = e[3 * i + 2]!) {
      if (e[3 * i] === h32 && e[3 * i + 1] === l32) return true;
    }
    return false;
  }

  /**
   * Removes every fingerprint of buckets `from` (inclusive) to `to` (exclusive) and writes them to
   * `out` (grown when too small) from index 0, in no particular order. Returns how many.
   */
  take(from: number, to: number, out: FingerprintScratch): number {
    const e = this.ent;
    let n = 0;
    for (let b = from; b < to; b++) {
      for (let i = this.head[b]!; i >= 0;) {
        if (n === out.hi.length) growScratch(out);
        out.hi[n] = e[3 * i]!;
        out.lo[n++] = e[3 * i + 1]!;
        const next = e[3 * i + 2]!;
        // onto the free list, in the cache line just read (`rebucket` skips it by its link)
        e[3 * i + 2] = FREE_LINK - this.free;
        this.free = i;
        i = next;
      }
      this.head[b] = -1;
    }
    this.live -= n;
    return n;
  }

  /**
   * Re-chains what is held into buckets of `bits` bits (1..24), dropping the space of what was
   * taken. In memory order, not chain by chain: one pass over the entries, a radix sort by bucket,
   * then chains built bucket after bucket, so neither this nor the next walk of the buckets misses
   * the cache at every entry.
   */
  rebucket(bits: number): void {
    checkBits(bits);
    const old = this.ent;
    const used = this.used;
    let hi: Int32Array = new Int32Array(this.live);
    let lo: Int32Array = new Int32Array(this.live);
    let n = 0;
    for (let i = 0; i < used; i++) {
      if (old[3 * i + 2]! <= -2) continue;
      hi[n] = old[3 * i]!;
      lo[n++] = old[3 * i + 1]!;
    }
    // the old entries are copied out: their array is the sort's scratch
    [hi, lo] = radixByTopBits(hi, lo, n, bits, old.subarray(0, n), old.subarray(n, 2 * n));
    this.bucketBits = bits;
    // room for half as many more: a sweep holds about as many as it began with (taken entries are reused)
    this.ent = new Int32Array(3 * Math.max(1024, Math.ceil(1.5 * n)));
    this.head = new Int32Array(2 ** bits).fill(-1);
    this.used = this.live = 0;
    this.free = -1;
    for (let k = 0; k < n; k++) this.add(hi[k]! >>> 0, lo[k]! >>> 0);
  }

  private grow(capacity: number): void {
    const ent = new Int32Array(3 * capacity);
    ent.set(this.ent.subarray(0, 3 * this.used));
    this.ent = ent;
  }
}

// a shift by 32 is a shift by 0 in JavaScript: zero bits would not give bucket 0
function checkBits(bits: number): void {
  if (!Number.isInteger(bits) || bits < 1 || bits > 24)
    throw new RangeError(`bucket bits must be an integer in 1..24, got ${bits}`);
}

function growScratch(out: FingerprintScratch): void {
  const hi = new Uint32Array(Math.max(1024, 2 * out.hi.length));
  const lo = new Uint32Array(hi.length);
  hi.set(out.hi);
  lo.set(out.lo);
  out.hi = hi;
  out.lo = lo;
}
