import { fmix32 } from '../core/hashing.js';
import {
  COUNT_KEY,
  META_KEY,
  NO_LEGACY_KEY,
  blockKey,
  encodeCount,
  encodeSweepState,
  layoutBits,
  runKey,
} from '../state/seen-layout.js';

/** What `loadSeenSet` writes, and where. */
export interface SeenLoad {
  /** The i-th fingerprint (distinct for distinct i), written big-endian at out[at..at+8]. */
  readonly fingerprint: (i: number, out: Buffer, at: number) => void;
  readonly total: number;
  readonly inRuns: number;
  /** Store writes, then a commit every few thousand of them (the store's pending writes are RAM). */
  readonly put: (key: Buffer, value: Buffer) => void;
  readonly commit: () => void;
  readonly blockTarget?: number;
}

// fingerprints of a run: about what one commit of a busy frontier flushes
const RUN = 20_000;
// fingerprints sorted at once: a pass takes those whose top bits are one value (8 bytes each)
const PASS = 50_000_000;
const COMMIT_EVERY = 8_192;

/**
 * Writes a seen-set's exact layer straight into its (empty) store, in the layout `SeenSet.admit`
 * would leave at that count, without admitting one by one (hundreds of millions of admits would
 * take hours): for benches at web scale. Fingerprints 0 .. total - inRuns - 1 go to sorted blocks
 * at the layout's bits; the last `inRuns` to runs of RUN fingerprints, unmerged, with the sweep at
 * its first block (the runs written before it began, as just after a sweep ended). The count, the
 * layout record and the no-legacy marker are written as the seen-set writes them.
 */
export function loadSeenSet(load: SeenLoad): { bits: number; blocks: number; runs: number } {
  const { fingerprint, total, inRuns, put, commit } = load;
  const blocked = total - inRuns;
  const bits = layoutBits(total, load.blockTarget ?? 512);
  const passBits = Math.min(bits, Math.max(0, Math.ceil(Math.log2(blocked / PASS))));
  const passes = 2 ** passBits;
  const one = Buffer.allocUnsafe(8);
  let writes = 0;
  const write = (key: Buffer, value: Buffer) => {
    put(key, value);
    if (++writes % COMMIT_EVERY === 0) commit();
  };
  let blocks = 0;
  for (let pass = 0; pass < passes; pass++) {
    // little-endian u64s whose high word is the fingerprint's first 4 bytes: numeric order is byte order
    const words = new Uint32Array(2 * Math.ceil((blocked / passes) * 1.05 + 1_000));
    let n = 0;
    for (let i = 0; i < blocked; i++) {
      fingerprint(i, one, 0);
      const hi = one.readUInt32BE(0);
      if (passBits > 0 && hi >>> (32 - passBits) !== pass) continue;
      // a typed array ignores writes past its end: a pass larger than planned would lose fingerprints
      if (2 * n + 2 > words.length)
        throw new Error(`seen-load: pass ${pass} holds more than ${words.length / 2} fingerprints`);
      words[2 * n] = one.readUInt32BE(4);
      words[2 * n + 1] = hi;
      n++;
    }
    new BigUint64Array(words.buffer, 0, n).sort();
    let k = 0;
    while (k < n) {
      const index = words[2 * k + 1]! >>> (32 - bits);
      let end = k;
      while (end < n && words[2 * end + 1]! >>> (32 - bits) === index) end++;
      const block = Buffer.allocUnsafe(8 * (end - k));
      for (let j = k; j < end; j++) {
        block.writeUInt32BE(words[2 * j + 1]!, 8 * (j - k));
        block.writeUInt32BE(words[2 * j]!, 8 * (j - k) + 4);
      }
      write(blockKey(bits, index), block);
      blocks++;
      k = end;
    }
  }
  let runs = 0;
  for (let i = blocked; i < total; i += RUN) {
    const n = Math.min(RUN, total - i);
    const run = Buffer.allocUnsafe(8 * n);
    for (let j = 0; j < n; j++) fingerprint(i + j, run, 8 * j);
    write(runKey(runs++), run);
  }
  put(
    META_KEY,
    encodeSweepState({ oldBits: bits, newBits: bits, cursor: 0, sweepStart: runs, nextSeq: runs, sweeps: 1 }),
  );
  put(COUNT_KEY, encodeCount(total));
  put(NO_LEGACY_KEY, Buffer.alloc(1));
  commit();
  return { bits, blocks, runs };
}

/** The i-th synthetic fingerprint: distinct for i < 2^32 (the finalizer of murmur3 is a bijection). */
export function syntheticFingerprint(i: number, out: Buffer, at: number): void {
  out.writeUInt32BE(mix(i), at);
  out.writeUInt32BE(mix(i ^ 0x5bd1e995), at + 4);
}

/** MurmurHash3's finalizer as an unsigned 32-bit number: a bijection of u32. */
export function mix(h: number): number {
  return fmix32(h) >>> 0;
}
