import { fmix32 } from '../../core/hashing.js';

/** Words per shingle: a feature is three consecutive words. */
export const SHINGLE_WORDS = 3;
/** Fewer shingles than this give no SimHash: tiny texts would all look alike. */
export const MIN_SHINGLES = 8;

/**
 * The 64-bit SimHash (Charikar) of a text, big-endian in 8 bytes, or undefined when the text has
 * fewer than MIN_SHINGLES shingles.
 *
 * Features are shingles of SHINGLE_WORDS consecutive words, each weighing 1 per occurrence. A
 * word is a maximal run of letters and digits (any script), lowercased; every run of ASCII digits
 * inside a word counts as one `0`, so timestamps, counters and edition numbers (the usual
 * difference between two copies of one article) do not change the features. Each shingle gets a
 * 64-bit hash; bit b of the SimHash is set when more than half of the features have bit b set.
 * Texts that share most shingles differ in few bits; unrelated texts differ in about 32.
 *
 * Stable across runs and platforms (no randomized hashing): persisted SimHashes stay comparable.
 */
export function simhash64(text: string): Buffer | undefined {
  const ones = new Int32Array(64);
  // 8 bit counters of 4 bits packed per int32, one int32 per byte of the 64-bit hash: 8 table
  // adds per feature instead of 64; flushed into `ones` before a nibble can overflow
  const packed = new Int32Array(8);
  let pendingFeatures = 0;
  let features = 0;
  // the two 32-bit hashes of the last three words
  let a1 = 0;
  let a2 = 0;
  let b1 = 0;
  let b2 = 0;
  let words = 0;
  let h1 = 0x811c9dc5;
  let h2 = 0x2a3f5e71;
  let inWord = false;
  let inDigits = false;
  const n = text.length;
  for (let i = 0; i <= n; i++) {
    let c = i < n ? text.charCodeAt(i) : 32;
    let wordChar: boolean;
    if (c < 128) {
      c = ASCII_WORD[c]!;
      wordChar = c !== 0;
    } else {
      wordChar = isWordChar(text, i, c);
      if (wordChar) c = lowerNonAscii(c);
    }
    if (wordChar) {
      if (c === 48) {
        if (inDigits) continue;
        inDigits = true;
        c = 48;
      } else {
        inDigits = false;
      }
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995) ^ (h2 >>> 15);
      inWord = true;
      continue;
    }
    inDigits = false;
    if (!inWord) continue;
    inWord = false;
    const w1 = fmix32(h1);
    const w2 = fmix32(h2 ^ 0x9e3779b9);
    h1 = 0x811c9dc5;
    h2 = 0x2a3f5e71;
    words++;
    if (words >= SHINGLE_WORDS) {
      // order matters: "a b c" and "c b a" are different shingles
      const hi = fmix32(Math.imul(fmix32(Math.imul(a1 ^ 0x9747b28c, 0xcc9e2d51) ^ b1), 0x1b873593) ^ w1);
      const lo = fmix32(Math.imul(fmix32(Math.imul(a2 ^ 0x2545f491, 0x85ebca6b) ^ b2), 0xc2b2ae35) ^ w2);
      packed[0] = packed[0]! + SPREAD[hi >>> 24]!;
      packed[1] = packed[1]! + SPREAD[(hi >>> 16) & 255]!;
      packed[2] = packed[2]! + SPREAD[(hi >>> 8) & 255]!;
      packed[3] = packed[3]! + SPREAD[hi & 255]!;
      packed[4] = packed[4]! + SPREAD[lo >>> 24]!;
      packed[5] = packed[5]! + SPREAD[(lo >>> 16) & 255]!;
      packed[6] = packed[6]! + SPREAD[(lo >>> 8) & 255]!;
      packed[7] = packed[7]! + SPREAD[lo & 255]!;
      features++;
      if (++pendingFeatures === 15) {
        flush(packed, ones);
        pendingFeatures = 0;
      }
    }
    a1 = b1;
    a2 = b2;
    b1 = w1;
    b2 = w2;
  }
  if (features < MIN_SHINGLES) return undefined;
  flush(packed, ones);
  let hi = 0;
  let lo = 0;
  for (let bit = 0; bit < 32; bit++) {
    if (2 * ones[bit]! > features) hi |= 1 << (31 - bit);
    if (2 * ones[32 + bit]! > features) lo |= 1 << (31 - bit);
  }
  const out = Buffer.allocUnsafe(8);
  out.writeUInt32BE(hi >>> 0, 0);
  out.writeUInt32BE(lo >>> 0, 4);
  return out;
}

// byte → its 8 bits spread over the 8 nibbles of an int32, most significant bit in the top nibble
const SPREAD = Int32Array.from({ length: 256 }, (_, v) => {
  let spread = 0;
  for (let b = 0; b < 8; b++) if (v & (0x80 >> b)) spread |= 1 << (28 - 4 * b);
  return spread;
});

function flush(packed: Int32Array, ones: Int32Array): void {
  for (let k = 0; k < 8; k++) {
    const p = packed[k]!;
    const at = 8 * k;
    ones[at] = ones[at]! + (p >>> 28);
    ones[at + 1] = ones[at + 1]! + ((p >>> 24) & 15);
    ones[at + 2] = ones[at + 2]! + ((p >>> 20) & 15);
    ones[at + 3] = ones[at + 3]! + ((p >>> 16) & 15);
    ones[at + 4] = ones[at + 4]! + ((p >>> 12) & 15);
    ones[at + 5] = ones[at + 5]! + ((p >>> 8) & 15);
    ones[at + 6] = ones[at + 6]! + ((p >>> 4) & 15);
    ones[at + 7] = ones[at + 7]! + (p & 15);
    packed[k] = 0;
  }
}

/** Number of differing bits between two 8-byte SimHashes. */
export function hammingDistance(a: Uint8Array, b: Uint8Array): number {
  let d = 0;
  for (let i = 0; i < 8; i++) {
    let x = (a[i]! ^ b[i]!) & 0xff;
    while (x !== 0) {
      x &= x - 1;
      d++;
    }
  }
  return d;
}

/** Set bits of a 32-bit value. */
export function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

const WORD_CHAR = /[\p{L}\p{N}]/u;
// ASCII letters lowercased, every digit as '0', everything else 0 (a separator)
const ASCII_WORD = Uint8Array.from({ length: 128 }, (_, c) =>
  c >= 65 && c <= 90 ? c + 32 : c >= 97 && c <= 122 ? c : c >= 48 && c <= 57 ? 48 : 0,
);

function isWordChar(text: string, i: number, c: number): boolean {
  // a surrogate pair is judged as its code point (first half) and carried along (second half)
  if (c >= 0xdc00 && c <= 0xdfff) return i > 0 && WORD_CHAR.test(text.slice(i - 1, i + 1));
  if (c >= 0xd800 && c <= 0xdbff) return WORD_CHAR.test(text.slice(i, i + 2));
  return WORD_CHAR.test(text[i]!);
}

function lowerNonAscii(c: number): number {
  if (c >= 0xd800 && c <= 0xdfff) return c;
  const lower = String.fromCharCode(c).toLowerCase();
  return lower.length === 1 ? lower.charCodeAt(0) : c;
}
