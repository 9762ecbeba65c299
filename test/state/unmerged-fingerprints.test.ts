import { test } from 'node:test';
import assert from 'node:assert/strict';
import { radixByTopBits } from '../../state/sorted-fingerprints.js';
import { type FingerprintScratch, UnmergedFingerprints } from '../../state/unmerged-fingerprints.js';
import { seededRandom as random } from '../../synthetic-web/seeded-random.js';

const u32 = (rnd: () => number) => Math.floor(rnd() * 2 ** 32);

test('radixByTopBits orders pairs by the top bits of hi, stably, for every width 0..24', () => {
  const rnd = random(3);
  for (const bits of [0, 1, 5, 8, 9, 16, 17, 22, 24]) {
    const n = 3_000;
    const hi = new Int32Array(n);
    const lo = new Int32Array(n);
    // lo numbers the input, so stability is visible; few distinct tops, so ties are many
    for (let i = 0; i < n; i++) {
      hi[i] = (u32(rnd) & ~0xff) | (i % 3);
      lo[i] = i;
    }
    const pairs = Array.from(hi, (h, i) => [h >>> 0, lo[i]!] as const);
    const top = (h: number) => (bits === 0 ? 0 : h >>> (32 - bits));
    const expected = [...pairs].sort((a, b) => top(a[0]) - top(b[0]) || a[1] - b[1]);
    const [sh, sl] = radixByTopBits(hi, lo, n, bits, new Int32Array(n), new Int32Array(n));
    const got = Array.from(sh.subarray(0, n), (h, i) => [h >>> 0, sl[i]!] as const);
    assert.deepEqual(got, expected, `bits ${bits}`);
  }
});

test('unmerged fingerprints: has what was added, take empties buckets, rebucket keeps the rest under any width', () => {
  const rnd = random(11);
  let index = new UnmergedFingerprints(6);
  const held = new Map<string, [number, number]>();
  const key = (h: number, l: number) => `${h}:${l}`;
  const out: FingerprintScratch = { hi: new Uint32Array(4), lo: new Uint32Array(4) };
  for (let round = 0; round < 40; round++) {
    for (let j = 0; j < 500; j++) {
      const h = u32(rnd);
      const l = u32(rnd);
      index.add(h, l);
      held.set(key(h, l), [h, l]);
    }
    // take a random run of buckets: exactly the held fingerprints whose top bits fall in it
    const bits = index.bits;
    const from = Math.floor(rnd() * 2 ** bits);
    const to = Math.min(2 ** bits, from + 1 + Math.floor(rnd() * 2 ** (bits - 2)));
    const n = index.take(from, to, out);
    const want = [...held.values()].filter(([h]) => h >>> (32 - bits) >= from && h >>> (32 - bits) < to);
    assert.equal(n, want.length);
    const taken = new Set(Array.from(out.hi.subarray(0, n), (h, i) => key(h, out.lo[i]!)));
    assert.deepEqual(taken, new Set(want.map(([h, l]) => key(h, l))));
    for (const [h, l] of want) held.delete(key(h, l));
    if (round % 7 === 6) index.rebucket(Math.min(24, bits + 1));
    if (round === 20) {
      // a narrower layout too (the index must not assume widths only grow)
      index.rebucket(3);
    }
    assert.equal(index.size, held.size);
    for (const [h, l] of held.values()) assert.ok(index.has(h, l), `lost ${h}:${l} in round ${round}`);
    for (const [h, l] of want.slice(0, 50)) assert.equal(index.has(h, l), false);
  }
  assert.ok(held.size > 2_000, `the workload keeps fingerprints held (${held.size})`);
  // one bucket would need a shift by 32, which JavaScript takes as a shift by 0
  assert.throws(() => new UnmergedFingerprints(0), /bucket bits must be an integer in 1\.\.24, got 0/);
  assert.throws(() => index.rebucket(25), /got 25/);
  index = new UnmergedFingerprints(1);
  index.add(1, 2);
  index.add(2 ** 31, 3);
  assert.equal(index.take(0, 1, out), 1);
  assert.deepEqual([out.hi[0], out.lo[0], index.size, index.has(2 ** 31, 3)], [1, 2, 1, true]);
});

test('unmerged fingerprints: taken entries are reused, so a sweep’s add-and-take holds RAM for what is held, not what was added', () => {
  const rnd = random(5);
  const bits = 12;
  const index = new UnmergedFingerprints(bits);
  const out: FingerprintScratch = { hi: new Uint32Array(4), lo: new Uint32Array(4) };
  const held = new Map<string, [number, number]>();
  const key = (h: number, l: number) => `${h}:${l}`;
  // as a sweep does: new fingerprints arrive everywhere while a cursor takes bucket after bucket
  let cursor = 0;
  let added = 0;
  for (let step = 0; step < 3 * 2 ** bits; step++) {
    for (let j = 0; j < 20; j++) {
      const h = u32(rnd);
      const l = u32(rnd);
      index.add(h, l);
      held.set(key(h, l), [h, l]);
      added++;
    }
    const n = index.take(cursor, cursor + 1, out);
    for (let i = 0; i < n; i++) held.delete(key(out.hi[i]!, out.lo[i]!));
    cursor = (cursor + 1) % 2 ** bits;
  }
  assert.equal(index.size, held.size);
  for (const [h, l] of held.values()) assert.ok(index.has(h, l), `lost ${h}:${l}`);
  // ~20 × 2^12 / 2 held at a time (half a sweep's span), 245,760 added: entries of 12 bytes
  // for what was added would be ~2.9 MB; for what is held at most, under 1 MB with doubling
  assert.ok(added > 5 * held.size, `${added} added, ${held.size} held`);
  const bytesPerHeld = (index.byteLength - 4 * 2 ** bits) / held.size;
  assert.ok(bytesPerHeld < 2 * 2 * 12, `${bytesPerHeld.toFixed(1)} bytes of entries per held fingerprint`);
});
