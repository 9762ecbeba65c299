import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_BLOOM_BITS } from '../../state/bloom-filter.js';
import { ScalableBloom } from '../../state/scalable-bloom.js';

import { syntheticFingerprint as fp } from './seen-set-memory-store.js';

test('a scalable Bloom grows by doubling segments, forgets nothing, and keeps its union rate under the target', () => {
  const bloom = new ScalableBloom(1_000, 0.01);
  let maybe = 0;
  for (let i = 0; i < 100_000; i++) if (bloom.add(fp(i))) maybe++;
  assert.ok(maybe / 100_000 <= 0.01, `${maybe} of 100,000 new entries reported as maybe there`);
  // 1 k, 2 k, 4 k … 128 k of capacity
  assert.equal(bloom.segmentCount, 8);
  assert.equal(bloom.grown, 7);
  assert.ok(bloom.capacity >= 100_000);
  for (let i = 0; i < 100_000; i++) if (!bloom.mightContain(fp(i))) assert.fail(`${i} lost`);
  assert.ok(bloom.ratedFalsePositiveRate() <= 0.01, `rated ${bloom.ratedFalsePositiveRate()}`);
  let wrong = 0;
  for (let i = 1_000_000; i < 1_300_000; i++) if (bloom.mightContain(fp(i))) wrong++;
  assert.ok(wrong / 300_000 <= 0.01, `measured ${wrong / 300_000}`);
  assert.ok(bloom.add(fp(5)), 'an entry added before is reported as maybe there');
});

test('a capacity past one filter’s 2^32 bits is sharded over filters that each stay under it', () => {
  const bloom = new ScalableBloom(1_000_000_000, 0.01);
  assert.equal(bloom.segmentCount, 1);
  assert.ok(bloom.filterCount >= 3, `${bloom.filterCount} filters`);
  assert.ok(bloom.capacity >= 1_000_000_000);
  assert.ok(bloom.largestFilterBits <= MAX_BLOOM_BITS, `${bloom.largestFilterBits} bits in one segment`);
  assert.ok(bloom.bits > 2 ** 32, `${bloom.bits} bits in all`);
  assert.ok(bloom.ratedFalsePositiveRate() <= 0.01, `rated ${bloom.ratedFalsePositiveRate()}`);
});

test('a bloom that may not grow keeps its size, and its rate rises with the fill', () => {
  const bloom = new ScalableBloom(1_000, 0.01, false);
  const bits = bloom.bits;
  for (let i = 0; i < 20_000; i++) bloom.add(fp(i));
  assert.equal(bloom.bits, bits);
  assert.equal(bloom.segmentCount, 1);
  assert.ok(bloom.estimatedFalsePositiveRate() > 0.1, `${bloom.estimatedFalsePositiveRate()}`);
});

test('rates outside (0, 1) are refused', () => {
  for (const rate of [0, 1, -0.1, Number.NaN])
    assert.throws(() => new ScalableBloom(10, rate), { code: 'CS_INVALID_OPTION' });
});

test('a sharded segment holds the capacity it was built for without growing, at its rate, not the sum of its shards’', () => {
  // filters of at most 2^20 bits: 100,000 entries at 0.5 % take several shards
  const bloom = new ScalableBloom(100_000, 0.01, true, 2 ** 20);
  const shards = bloom.filterCount;
  assert.ok(shards >= 2, `${shards} shards`);
  assert.equal(bloom.segmentCount, 1);
  assert.equal(bloom.estimatedFalsePositiveRate(), 0, 'empty: no false positives, and a number');
  let maybe = 0;
  for (let i = 0; i < 100_000; i++) if (bloom.add(fp(i))) maybe++;
  assert.equal(bloom.grown, 0, 'the capacity it was built for fits without a growth segment');
  assert.equal(bloom.filterCount, shards);
  const rate = bloom.estimatedFalsePositiveRate();
  assert.ok(rate > 0 && rate <= 0.005 * 1.1, `estimated ${rate}, the first segment's half of the target`);
  assert.ok(maybe / 100_000 <= 0.01, `${maybe} new entries reported as maybe there`);
  for (let i = 0; i < 100_000; i++) if (!bloom.mightContain(fp(i))) assert.fail(`${i} lost`);
  let wrong = 0;
  for (let i = 1_000_000; i < 1_400_000; i++) if (bloom.mightContain(fp(i))) wrong++;
  // each check reads one shard, at the whole segment’s rate (half the target)
  assert.ok(wrong / 400_000 <= 0.0065, `measured ${wrong / 400_000}`);
  // the shards share the entries evenly: each is about as full as the others
  const fills = bloom.shardFills();
  assert.ok(Math.max(...fills) - Math.min(...fills) < 0.02, `fills ${fills.map((f) => f.toFixed(3)).join(', ')}`);
  // past it, a growth segment, and nothing is forgotten
  for (let i = 100_000; i < 150_000; i++) bloom.add(fp(i));
  assert.equal(bloom.grown, 1);
  for (let i = 0; i < 150_000; i++) if (!bloom.mightContain(fp(i))) assert.fail(`${i} lost after growing`);
  assert.ok(bloom.largestFilterBits <= 2 ** 20);
});

test('a sharded bloom that may not grow keeps adding to its shards past its capacity', () => {
  const bloom = new ScalableBloom(100_000, 0.01, false, 2 ** 20);
  for (let i = 0; i < 300_000; i++) bloom.add(fp(i));
  assert.equal(bloom.grown, 0);
  for (let i = 0; i < 300_000; i++) if (!bloom.mightContain(fp(i))) assert.fail(`${i} lost`);
});
