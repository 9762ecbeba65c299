import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Progress } from '../../runtime/replay/progress.js';

test('progress says records/s and the time left, at most one line per 2 s', () => {
  let now = 0;
  const lines: string[] = [];
  const progress = new Progress(
    'rebuilding',
    1_000,
    (l) => lines.push(l),
    () => now,
  );
  for (let i = 0; i < 10; i++) {
    now += 500;
    progress.add(50);
  }
  assert.deepEqual(lines, [
    'rebuilding: 200 of at most 1000 changelog records (100 records/s, ETA 8 s)',
    'rebuilding: 400 of at most 1000 changelog records (100 records/s, ETA 6 s)',
  ]);
  assert.equal(progress.rate(), 100);
});
