import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NearDupIndex, TABLES, permute } from '../../../processors/parser/near-dup-index.js';
import { hammingDistance } from '../../../processors/parser/simhash.js';
import type { RocksPort } from '../../../state/rocks.js';
import { RocksKeyValueStore } from '../../../state/rocks-store.js';
import { bufferSerde } from '../../../core/serde.js';
import { withDb as withTempDb } from '../../state/temp-rocks.js';

const withDb = (fn: (db: RocksPort) => Promise<void> | void): Promise<void> => withTempDb('neardup', fn);

const store = (db: RocksPort) =>
  new RocksKeyValueStore<Buffer, Buffer>('parser-site-simhash', db, bufferSerde, bufferSerde);

let seed = 0x12345678;
function random32(): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return seed >>> 0;
}
function randomSimhash(): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeUInt32BE(random32(), 0);
  b.writeUInt32BE(random32(), 4);
  return b;
}
function flipBits(h: Buffer, count: number): Buffer {
  const out = Buffer.from(h);
  const bits = new Set<number>();
  while (bits.size < count) bits.add(random32() % 64);
  for (const bit of bits) out[bit >> 3]! ^= 0x80 >> (bit & 7);
  return out;
}

test('the 20 tables each lead with 3 of the 6 blocks and permute bits without losing any', () => {
  assert.equal(TABLES.length, 20);
  assert.equal(new Set(TABLES.map((t) => t.order.slice(0, 3).join())).size, 20);
  for (const t of TABLES) {
    assert.ok(t.prefixBits >= 31 && t.prefixBits <= 33);
    for (let bit = 0; bit < 64; bit++) {
      const p = permute(1n << BigInt(bit), t);
      assert.equal(p.toString(2).replace(/0/g, '').length, 1, 'one bit in, one bit out');
    }
  }
});

test('near-dup index finds every SimHash within 3 bits, none farther, and survives a restart', () =>
  withDb((db) => {
    let s = store(db);
    let index = new NearDupIndex(s);
    const originals = Array.from({ length: 1_000 }, () => randomSimhash());
    originals.forEach((h, i) => index.add('site.test', h, `http://site.test/${i}`));
    assert.equal(
      index.find('site.test', flipBits(originals[3]!, 3))?.url,
      'http://site.test/3',
      'uncommitted entries are found',
    );
    s.applyCommitted(1);
    for (const [i, h] of originals.entries()) {
      for (let d = 0; d <= 3; d++) {
        const match = index.find('site.test', flipBits(h, d));
        assert.ok(match, `a ${d}-bit variant of #${i} was not found`);
        assert.equal(match.url, `http://site.test/${i}`);
        assert.equal(match.distance, d);
        assert.deepEqual(match.simhash, h);
      }
    }
    let far = 0;
    for (const h of originals.slice(0, 500)) {
      const q = flipBits(h, 4 + (random32() % 8));
      const m = index.find('site.test', q);
      if (m !== undefined) {
        assert.ok(hammingDistance(m.simhash, q) <= 3, 'a match is never farther than 3 bits');
        far++;
      }
    }
    assert.equal(far, 0, 'random 1,000 SimHashes leave no neighbour within 3 bits of a 4+-bit variant');

    s = store(db);
    index = new NearDupIndex(s);
    assert.equal(
      index.find('site.test', flipBits(originals[7]!, 2))?.url,
      'http://site.test/7',
      'found again after reopening the store',
    );
  }));

test('near-dup index keeps each site apart: a SimHash indexed for one site is never found for another', () =>
  withDb((db) => {
    const index = new NearDupIndex(store(db));
    const h = randomSimhash();
    index.add('a.test', h, 'http://a.test/x');
    index.add('a.test.example', flipBits(h, 3), 'http://a.test.example/y');
    assert.equal(index.find('a.test', flipBits(h, 1))?.url, 'http://a.test/x');
    assert.equal(index.find('b.test', h), undefined);
    assert.equal(index.find('a.tes', h), undefined, 'a site name that is a prefix of another is another site');
    assert.equal(index.find('a.test.example', h)?.url, 'http://a.test.example/y');
  }));

test('a site searched in RAM and the same site searched by the 20 range scans give the same answers, across the switch between them', () =>
  withDb((db) => {
    const s = store(db);
    // all in RAM; always the store; in RAM until 300 SimHashes, then the store
    const indexes = [new NearDupIndex(s), new NearDupIndex(s, 0), new NearDupIndex(s, 300)];
    const writer = indexes[0]!;
    const hashes = Array.from({ length: 700 }, () => randomSimhash());
    const queries = () =>
      hashes.slice(0, 50).flatMap((h) => [h, flipBits(h, 2), flipBits(h, 3), flipBits(h, 5), randomSimhash()]);
    // every index loads the site before the writes, then sees them only through its own adds
    for (const index of indexes) index.find('big.test', hashes[0]!);
    hashes.forEach((h, i) => {
      for (const index of indexes) index.add('big.test', h, `http://big.test/${i}`);
      if (i === 200) s.applyCommitted(1);
    });
    for (const q of queries()) {
      const answers = indexes.map((index) => index.find('big.test', q));
      assert.deepEqual(answers[1], answers[0], `store and RAM disagree on ${q.toString('hex')}`);
      assert.deepEqual(answers[2], answers[0], `past the switch, ${q.toString('hex')} is answered otherwise`);
    }
    assert.equal(writer.find('big.test', flipBits(hashes[650]!, 3))?.url, 'http://big.test/650');
  }));

test('a site dropped from RAM to make room is reloaded from the store, pending writes included', () =>
  withDb((db) => {
    const s = store(db);
    const index = new NearDupIndex(s, 4_096, 50); // room for 50 SimHashes in RAM
    const bySite = new Map<string, Buffer[]>();
    for (let site = 0; site < 10; site++) {
      const hashes = Array.from({ length: 20 }, () => randomSimhash());
      bySite.set(`s${site}.test`, hashes);
      for (const [i, h] of hashes.entries()) index.add(`s${site}.test`, h, `http://s${site}.test/${i}`);
      index.find(`s${site}.test`, hashes[0]!); // loads it, dropping older sites
      // what RAM holds stays within 50 SimHashes (and the sites holding them)
      assert.ok(index.cacheBytes > 0 && index.cacheBytes <= 50 * 16 + 3 * 150, `${index.cacheBytes} bytes in RAM`);
    }
    for (const [site, hashes] of bySite)
      for (const [i, h] of hashes.entries())
        assert.equal(index.find(site, flipBits(h, 3))?.url, `http://${site}/${i}`, `${site} #${i}`);
  }));

test('indexing the same SimHash again keeps one entry, with the latest URL', () =>
  withDb((db) => {
    const s = store(db);
    const index = new NearDupIndex(s);
    const h = randomSimhash();
    index.find('one.test', h);
    index.add('one.test', h, 'http://one.test/a');
    index.add('one.test', h, 'http://one.test/b');
    assert.equal(index.find('one.test', h)?.url, 'http://one.test/b');
    // a small site: one table entry, whatever the number of adds
    assert.equal(s.pendingCount(), 1);
  }));

test('a small site is stored once per SimHash; the add that makes it large writes all 20 tables, so the range scans find what came before', () =>
  withDb((db) => {
    const s = store(db);
    const index = new NearDupIndex(s, 10);
    const hashes = Array.from({ length: 12 }, () => randomSimhash());
    hashes.slice(0, 10).forEach((h, i) => index.add('grow.test', h, `http://grow.test/${i}`));
    assert.equal(s.pendingCount(), 10, 'one entry per SimHash while the site is small');
    index.add('grow.test', hashes[10]!, 'http://grow.test/10');
    assert.equal(s.pendingCount(), 11 * 20, 'the 11th SimHash makes the site large: 20 tables of all 11');
    index.add('grow.test', hashes[11]!, 'http://grow.test/11');
    assert.equal(s.pendingCount(), 12 * 20);
    s.applyCommitted(1);
    // a new instance loads the site as large and answers from the 20 tables alone
    const reopened = new NearDupIndex(store(db), 10);
    for (const [i, h] of hashes.entries()) {
      const m = reopened.find('grow.test', flipBits(h, 3));
      assert.equal(m?.url, `http://grow.test/${i}`, `#${i} by the range scans`);
    }
  }));
