import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyFilter } from '../../state/key-filter.js';
import { HostTable } from '../../processors/frontier/host-table.js';
import { newHost } from '../../processors/frontier/host-state.js';
import type { HostStore } from '../../processors/frontier/frontier-stores.js';
import type { HostState } from '../../schemas/types.js';

test('a key filter never calls a noted key absent, across growth, and is wrong about ~1 % of others', () => {
  const filter = new KeyFilter(1_000);
  const n = 50_000; // the chain grows six times
  for (let i = 0; i < n; i++) filter.note(`www.site${i}.example`);
  for (let i = 0; i < n; i++) assert.ok(filter.mightHave(`www.site${i}.example`), `site ${i} forgotten`);
  // noting again changes nothing
  const bytes = filter.byteLength;
  for (let i = 0; i < n; i++) filter.note(`www.site${i}.example`);
  assert.equal(filter.byteLength, bytes);
  let wrong = 0;
  const probes = 100_000;
  for (let i = 0; i < probes; i++) if (filter.mightHave(`www.other${i}.example`)) wrong++;
  // six filters, each at most at 1 % at its capacity: the chain at most ~6 %, and well above 0
  assert.ok(wrong > 0 && wrong / probes < 0.06, `${wrong} of ${probes} absent keys reported maybe`);
});

/** An in-RAM host store that counts reads. */
function countingStore(initial: HostState[]): HostStore & { reads: number } {
  const map = new Map(initial.map((s) => [s.host, s]));
  return {
    name: 'frontier-hosts',
    reads: 0,
    get(key: string) {
      this.reads++;
      return map.get(key);
    },
    getMany(keys: readonly string[]) {
      return keys.map((k) => this.get(k));
    },
    put: (key: string, value: HostState) => void map.set(key, value),
    delete: (key: string) => void map.delete(key),
    *range() {
      yield* [...map.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
    },
    flush() {},
    close() {},
  };
}

test('the host table reads the store for a host it has not seen only until a full scan has noted every stored host', () => {
  const stored = Array.from({ length: 100 }, (_, i) =>
    newHost(`h${i}.example`, `https://h${i}.example`, `h${i}.example`),
  );
  const store = countingStore(stored);
  const table = new HostTable(store, () => false);
  assert.equal(table.get('new.example'), undefined);
  assert.equal(store.reads, 1, 'before a scan, a new host is read');
  let scanned = 0;
  for (const _ of table.all()) scanned++;
  assert.equal(scanned, 100);
  const before = store.reads;
  for (let i = 0; i < 1_000; i++) assert.equal(table.get(`new${i}.example`), undefined);
  assert.ok(store.reads - before < 30, `${store.reads - before} reads for 1,000 new hosts`);
  // every stored host is still found, and a host written since is read back
  for (let i = 0; i < 100; i++) assert.equal(table.get(`h${i}.example`)?.host, `h${i}.example`);
  table.put(newHost('later.example', 'https://later.example', 'later.example'));
  table.flush();
  assert.equal(table.get('later.example')?.host, 'later.example');
});
