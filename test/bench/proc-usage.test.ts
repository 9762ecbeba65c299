import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { coresBusy, coreTicks } from '../../bench/proc-usage.js';

test("the machine's cores: one reading a core, busy within its total, and each core's busy share between two", () => {
  const before = coreTicks();
  assert.ok(before.length >= availableParallelism(), `${before.length} cores read`);
  for (const c of before) assert.ok(c.busy >= 0 && c.busy <= c.total, JSON.stringify(c));
  // a core busy 30 of 40 ticks, one idle for 50, one that did not tick
  const from = [
    { busy: 100, total: 200 },
    { busy: 50, total: 100 },
    { busy: 7, total: 9 },
  ];
  const to = [
    { busy: 130, total: 240 },
    { busy: 50, total: 150 },
    { busy: 7, total: 9 },
  ];
  assert.deepEqual(coresBusy(from, to), [0.75, 0, 0]);
  assert.deepEqual(coresBusy([], to), []);
  assert.deepEqual(coresBusy(from, to.slice(1)), [], 'a core more or fewer: no figure');
});
