import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockCache } from '../../state/block-cache.js';

const block = (bytes: number, fill: number) => Buffer.alloc(bytes, fill);

test('block cache: stays within its budget, keeps what is used, forgets what is not', () => {
  // 64 bytes of bookkeeping an entry: a block of 936 bytes counts 1,000
  const cache = new BlockCache(10_000);
  for (let id = 0; id < 100; id++) {
    cache.add(id, block(936, id));
    // block 0 is looked up after every add: it never leaves
    assert.equal(cache.get(0)?.[0], 0, `block 0 after adding ${id}`);
    assert.ok(cache.size <= 10_000, `${cache.size} bytes after adding ${id}`);
  }
  assert.equal(cache.peek(1), undefined, 'a block added long ago and never used again is evicted');
  assert.equal(cache.get(99)?.[0], 99, 'the newest block is held');
  // every block that is still held is the one added under its id
  for (let id = 0; id < 100; id++) {
    const held = cache.peek(id);
    if (held !== undefined) assert.equal(held[0], id);
  }
  assert.ok(cache.size >= 5_000, `at least half the budget is used: ${cache.size}`);
});

test('block cache: counts hits and misses; peek counts neither; an absent block is cached as empty', () => {
  const cache = new BlockCache(10_000);
  assert.equal(cache.get(7), undefined);
  cache.add(7, undefined);
  assert.equal(cache.get(7)?.length, 0);
  assert.equal(cache.peek(8), undefined);
  assert.deepEqual([cache.hits, cache.misses], [1, 1]);
});

test('block cache: update replaces a cached block, drops a deleted one, caches a new one only while that evicts nothing', () => {
  const cache = new BlockCache(4_000);
  cache.add(1, block(936, 1));
  cache.update(1, block(936, 11));
  assert.equal(cache.peek(1)?.[0], 11);
  cache.update(1, undefined);
  assert.equal(cache.peek(1), undefined);
  assert.equal(cache.size, 0);
  // a sweep writing many uncached blocks: the first fill half the budget, the rest are not cached
  cache.add(100, block(936, 100));
  for (let id = 2; id < 50; id++) cache.update(id, block(936, id));
  assert.equal(cache.peek(100)?.[0], 100, 'the block lookups used is still held');
  assert.ok(cache.size <= 2_000, `${cache.size}`);
});

test('block cache: a block larger than the budget is not kept; one over half of it displaces the rest', () => {
  const cache = new BlockCache(3_000);
  cache.add(1, block(5_000, 1));
  assert.equal(cache.peek(1), undefined);
  cache.add(2, block(936, 2));
  cache.add(3, block(936, 3));
  cache.add(4, block(2_000, 4));
  assert.equal(cache.peek(4)?.[0], 4);
  assert.ok(cache.size <= 3_000, `${cache.size}`);
  const zero = new BlockCache(0);
  zero.add(1, block(10, 1));
  assert.equal(zero.peek(1), undefined);
});

test('block cache: update with copy keeps a copy of what it is given, not a view of the caller’s memory', () => {
  const cache = new BlockCache(10_000);
  const slab = Buffer.alloc(4_096, 1);
  cache.add(5, block(936, 0));
  cache.update(5, slab.subarray(0, 936), true);
  cache.update(6, slab.subarray(936, 1_872));
  slab.fill(2);
  assert.equal(cache.peek(5)?.[0], 1, 'the copied block is unchanged when the slab it came from is reused');
  assert.notEqual(cache.peek(5)?.buffer, slab.buffer);
  assert.equal(cache.peek(6)?.[0], 2, 'without copy the cache holds the view it was given');
});

test('block cache: a smaller budget evicts down to it at once, the most recent blocks kept; a larger one fills again', () => {
  const cache = new BlockCache(10_000);
  for (let id = 0; id < 30; id++) cache.add(id, block(936, id));
  assert.ok(cache.size > 4_000, `filled: ${cache.size}`);
  cache.resize(4_000);
  assert.equal(cache.maxBytes, 4_000);
  assert.ok(cache.size <= 4_000, `${cache.size} bytes after shrinking to 4,000`);
  assert.equal(cache.peek(29)?.[0], 29, 'the newest block survives the shrink');
  for (let id = 30; id < 60; id++) {
    cache.add(id, block(936, id));
    assert.ok(cache.size <= 4_000, `${cache.size} bytes after adding ${id} at the smaller budget`);
  }
  cache.resize(0);
  assert.equal(cache.size, 0, 'a budget of 0 holds nothing');
  cache.add(1, block(936, 1));
  assert.equal(cache.peek(1), undefined);
  cache.resize(10_000);
  for (let id = 0; id < 30; id++) cache.add(id, block(936, id));
  assert.ok(cache.size > 5_000 && cache.size <= 10_000, `grown back: ${cache.size}`);
});
