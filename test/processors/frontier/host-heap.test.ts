import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostHeap } from '../../../processors/frontier/host-heap.js';

test('an empty heap has size 0 and nothing to peek or pop', () => {
  const heap = new HostHeap();
  assert.equal(heap.size, 0);
  assert.equal(heap.peekTime(), undefined);
  assert.equal(heap.pop(), undefined);
  assert.equal(heap.size, 0);
});

test('hosts pop in order of the time they may next be fetched', () => {
  const heap = new HostHeap();
  heap.push('c.test', 300);
  heap.push('a.test', 100);
  heap.push('d.test', 400);
  heap.push('b.test', 200);
  assert.equal(heap.size, 4);
  assert.equal(heap.peekTime(), 100);
  assert.deepEqual(
    [heap.pop(), heap.pop()],
    [
      { at: 100, host: 'a.test' },
      { at: 200, host: 'b.test' },
    ],
  );
  heap.push('e.test', 150);
  assert.equal(heap.peekTime(), 150);
  assert.deepEqual(
    [heap.pop(), heap.pop(), heap.pop(), heap.pop()].map((e) => e?.host),
    ['e.test', 'c.test', 'd.test', undefined],
  );
});

test('a host may be in the heap more than once', () => {
  const heap = new HostHeap();
  heap.push('a.test', 50);
  heap.push('a.test', 10);
  assert.equal(heap.size, 2);
  assert.deepEqual(
    [heap.pop(), heap.pop()],
    [
      { at: 10, host: 'a.test' },
      { at: 50, host: 'a.test' },
    ],
  );
});

test('interleaved random pushes and pops always hand out the earliest time', () => {
  const heap = new HostHeap();
  const model: number[] = [];
  let seed = 7;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8;
  for (let i = 0; i < 3000; i++) {
    if (model.length > 0 && rand() % 3 === 0) {
      const earliest = Math.min(...model);
      const popped = heap.pop()!;
      assert.equal(popped.at, earliest, `pop ${i}`);
      model.splice(model.indexOf(earliest), 1);
    } else {
      const at = rand() % 1000;
      heap.push(`h${i}`, at);
      model.push(at);
    }
    assert.equal(heap.size, model.length);
    assert.equal(heap.peekTime(), model.length > 0 ? Math.min(...model) : undefined);
  }
});

test('the drained heap holds exactly what was pushed', () => {
  const heap = new HostHeap();
  const items = [5, 3, 9, 3, 0, 7, 7, 1].map((at, i) => ({ at, host: `h${i}` }));
  for (const { at, host } of items) heap.push(host, at);
  const drained: { at: number; host: string }[] = [];
  for (let e = heap.pop(); e; e = heap.pop()) drained.push(e);
  assert.deepEqual(
    drained.map((e) => e.at),
    [0, 1, 3, 3, 5, 7, 7, 9],
  );
  assert.deepEqual(drained.map((e) => e.host).sort(), items.map((e) => e.host).sort());
});
