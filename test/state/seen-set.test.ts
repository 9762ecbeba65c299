import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BloomFilter,
  bloomSizing,
  expectedFalsePositiveRate,
  expectedFill,
  MAX_BLOOM_BITS,
} from '../../state/bloom-filter.js';
import { SeenSet } from '../../state/seen-set.js';
import { MemoryFingerprintStore, syntheticFingerprint } from './seen-set-memory-store.js';

test('Bloom sizing: the classic m = -n ln p / (ln 2)^2, grown just enough for the blocked layout to meet p', () => {
  for (const [n, p, k] of [
    [10_000_000, 0.01, 7],
    [1_000_000, 0.001, 11],
    [1_000, 0.01, 7],
  ] as const) {
    const s = bloomSizing(n, p);
    const classic = -Math.log(p) / Math.LN2 ** 2;
    assert.equal(s.bits % 512, 0, 'whole 512-bit blocks');
    assert.ok(
      s.bits / n >= classic && s.bits / n <= 1.12 * classic,
      `${s.bits / n} bits per entry against the classic ${classic}`,
    );
    assert.equal(s.hashes, k);
    const rate = expectedFalsePositiveRate(s, n);
    assert.ok(rate <= p && rate > 0.8 * p, `blocked rate ${rate} at design load for target ${p}`);
  }
  assert.throws(() => bloomSizing(0, 0.01), { code: 'CS_INVALID_OPTION' });
  assert.throws(() => bloomSizing(10, 1), { code: 'CS_INVALID_OPTION' });
  assert.throws(() => bloomSizing(2 ** 40, 0.01), { code: 'CS_INVALID_OPTION' });
});

test('a blocked Bloom filter at design load is wrong as often as its sizing says', () => {
  const n = 200_000;
  const bloom = new BloomFilter(bloomSizing(n, 0.01));
  for (let i = 0; i < n; i++) bloom.add(syntheticFingerprint(i));
  let wrong = 0;
  const probes = 400_000;
  for (let i = n; i < n + probes; i++) if (bloom.mightContain(syntheticFingerprint(i))) wrong++;
  const theory = expectedFalsePositiveRate(bloom, n);
  assert.ok(Math.abs(wrong / probes - theory) < 0.15 * theory, `measured ${wrong / probes}, theory ${theory}`);
  assert.ok(
    Math.abs(bloom.estimatedFalsePositiveRate() - theory) < 0.05 * theory,
    `fill-based estimate ${bloom.estimatedFalsePositiveRate()}, theory ${theory}`,
  );
});

test('a Bloom filter never forgets an added fingerprint', () => {
  const sizing = bloomSizing(50_000, 0.01);
  const bloom = new BloomFilter(sizing);
  for (let i = 0; i < 50_000; i++) bloom.add(syntheticFingerprint(i));
  for (let i = 0; i < 50_000; i++) assert.ok(bloom.mightContain(syntheticFingerprint(i)), `fingerprint ${i} forgotten`);
  // k = 7 rounds 6.64 up, so the fill at the design load is a little above one half
  assert.ok(Math.abs(bloom.fill() - expectedFill(sizing, 50_000)) < 0.005, `fill at design load ${bloom.fill()}`);
});

test(
  'seen-set of 10 M fingerprints admits every new one and its Bloom misses within 20 % of target',
  { timeout: 60_000 },
  () => {
    const n = 10_000_000;
    const p = 0.01;
    const exact = new MemoryFingerprintStore();
    const seen = new SeenSet(exact, { expectedCount: n, falsePositiveRate: p });
    seen.init();
    const batch = 1_000;
    let lost = 0;
    for (let start = 0; start < n; start += batch) {
      const fps: Buffer[] = new Array(batch);
      for (let j = 0; j < batch; j++) fps[j] = syntheticFingerprint(start + j);
      const fresh = seen.admit(fps);
      for (let j = 0; j < batch; j++) if (!fresh[j]) lost++;
    }
    assert.equal(lost, 0, 'new fingerprints were treated as seen');
    // the exact layer merged most of them into sorted blocks: sweeps ran and its layout grew
    // (a sweep per doubling of the count from 65,536: about seven)
    assert.ok(seen.stats().exact.sweeps >= 5, `${seen.stats().exact.sweeps} sweeps`);
    assert.ok(seen.stats().exact.blockBits >= 14, `block bits ${seen.stats().exact.blockBits}`);
    const afterLoad = seen.stats();
    assert.equal(afterLoad.count, n);
    assert.equal(afterLoad.rebuilds, 0);
    // while filling, some new fingerprints hit the Bloom and were cleared by the exact layer
    assert.ok(
      afterLoad.bloomFalsePositives > 1_000,
      `only ${afterLoad.bloomFalsePositives} Bloom false positives confirmed`,
    );
    assert.equal(
      afterLoad.storeChecks,
      afterLoad.bloomFalsePositives,
      'only Bloom false positives needed a store read',
    );

    // fresh fingerprints (never admitted) measure the false-positive rate at the design load
    const probes = 2_000_000;
    const probe: Buffer[] = [];
    let wronglySeen = 0;
    for (let i = n; i < n + probes; i++) {
      probe.push(syntheticFingerprint(i));
      if (probe.length === batch) {
        for (const s of seen.has(probe)) if (s) wronglySeen++;
        probe.length = 0;
      }
    }
    assert.equal(wronglySeen, 0, 'the exact layer must refute every Bloom false positive');
    const measured = (seen.stats().bloomFalsePositives - afterLoad.bloomFalsePositives) / probes;
    const theory = expectedFalsePositiveRate(seen.sizing(), n);
    console.log(
      `# Bloom FP rate at 10 M: measured ${(measured * 100).toFixed(4)} %, target ${p * 100} %, theory ${(theory * 100).toFixed(4)} %`,
    );
    // the first segment is sized at half the target, so growth segments can share the other half
    assert.ok(measured <= p, `measured FP rate ${measured} is above the target ${p}`);
    assert.ok(
      Math.abs(measured - theory) <= 0.2 * theory,
      `measured FP rate ${measured} is not within 20 % of ${theory}`,
    );
    assert.ok(
      Math.abs(seen.stats().estimatedFalsePositiveRate - theory) <= 0.2 * theory,
      'the fill-based estimate tracks the theory',
    );

    // every admitted fingerprint is seen again (sample of 1 M spread over the whole range)
    const again: Buffer[] = [];
    for (let i = 0; i < n; i += 10) again.push(syntheticFingerprint(i));
    for (let i = 0; i < again.length; i += batch) {
      assert.ok(
        seen.admit(again.slice(i, i + batch)).every((fresh) => !fresh),
        'a seen fingerprint was admitted twice',
      );
    }
    assert.equal(seen.stats().count, n);

    // a restarted task over the same store finds every one of them again
    const restarted = new SeenSet(exact.copy(), { expectedCount: n, falsePositiveRate: p });
    restarted.init();
    assert.equal(restarted.stats().count, n);
    for (let i = 0; i < again.length; i += batch) {
      assert.ok(restarted.has(again.slice(i, i + batch)).every(Boolean), 'a fingerprint was lost in a restart');
    }
    assert.ok(
      restarted.admit(Array.from({ length: batch }, (_, j) => syntheticFingerprint(n + probes + j))).every(Boolean),
    );
  },
);

test('a batch admits a repeated fingerprint once', () => {
  const seen = new SeenSet(new MemoryFingerprintStore(), { expectedCount: 100, falsePositiveRate: 0.01 });
  seen.init();
  const a = syntheticFingerprint(1);
  const b = syntheticFingerprint(2);
  assert.deepEqual(seen.admit([a, b, Buffer.from(a), a]), [true, true, false, false]);
  assert.deepEqual(seen.admit([b, syntheticFingerprint(3)]), [false, true]);
  assert.deepEqual(seen.has([a, syntheticFingerprint(4)]), [true, false]);
});

test('the seen-set grows by segments past its expected count: every fingerprint kept, the rate under target', () => {
  const exact = new MemoryFingerprintStore();
  const seen = new SeenSet(exact, { expectedCount: 1_000, falsePositiveRate: 0.01 });
  seen.init();
  for (let i = 0; i < 20_000; i++)
    assert.deepEqual(seen.admit([syntheticFingerprint(i)]), [true], `fingerprint ${i} lost`);
  const s = seen.stats();
  // 1,000 → 2,000 → 4,000 → 8,000 → 16,000 → 32,000 entries of capacity
  assert.equal(s.rebuilds, 5, `${s.rebuilds} segments added`);
  assert.equal(s.bloomSegments, 6);
  assert.ok(!s.warning && s.estimatedFalsePositiveRate <= 0.01, `estimated ${s.estimatedFalsePositiveRate}`);
  assert.ok(seen.has(Array.from({ length: 20_000 }, (_, i) => syntheticFingerprint(i))).every(Boolean));
  const before = seen.stats().bloomFalsePositives;
  seen.has(Array.from({ length: 100_000 }, (_, i) => syntheticFingerprint(1_000_000 + i)));
  const measured = (seen.stats().bloomFalsePositives - before) / 100_000;
  assert.ok(measured <= 0.01, `measured FP rate ${measured} after growth`);
});

test('a partition past the old 2^32-bit filter cap opens: its filter takes several shards, none over the cap', () => {
  // 500 M fingerprints at 1 % need ~5.3 × 10^9 bits: the single filter before threw here, at open
  const seen = new SeenSet(new MemoryFingerprintStore(), { expectedCount: 500_000_000, falsePositiveRate: 0.01 });
  seen.init();
  const { segments, filters, bits, sizedFor, largestFilterBits } = seen.sizing();
  assert.equal(segments, 1);
  assert.ok(filters >= 2, `${filters} filters`);
  assert.ok(largestFilterBits <= MAX_BLOOM_BITS, `${largestFilterBits} bits in one filter`);
  assert.ok(bits > 2 ** 32, `${bits} bits in all`);
  // sharded, not split: the bits of one filter at half the target rate, not of several at a share of it
  const classic = (-500_000_000 * Math.log(0.005)) / Math.LN2 ** 2;
  assert.ok(bits < 1.08 * classic, `${bits} bits, ${(bits / classic).toFixed(3)} × the classic size`);
  assert.ok(sizedFor >= 500_000_000);
  assert.deepEqual(seen.admit([syntheticFingerprint(1), syntheticFingerprint(1)]), [true, false]);
});

test('a fingerprint repeated within a batch is new only the first time, false positives included', () => {
  // a filter this small, kept at its size, is nearly full at once: most checks are "maybe seen" and go to the store
  const seen = new SeenSet(new MemoryFingerprintStore(), {
    expectedCount: 8,
    falsePositiveRate: 0.5,
    growFilter: false,
  });
  seen.init();
  const fp = (i: number) => syntheticFingerprint(i);
  assert.deepEqual(seen.admit([fp(1), fp(1), fp(2), fp(1), fp(2), fp(3)]), [true, false, true, false, false, true]);
  const batch = Array.from({ length: 600 }, (_, i) => fp(100 + (i % 200)));
  const fresh = seen.admit(batch);
  assert.deepEqual(
    fresh,
    batch.map((_, i) => i < 200),
    'each of 200 fingerprints new exactly once in a batch of 600',
  );
  assert.ok(seen.stats().bloomFalsePositives > 0, 'the filter was full enough to be wrong');
  assert.ok(seen.admit(batch).every((f) => !f));
  assert.equal(seen.stats().count, 203);
});
