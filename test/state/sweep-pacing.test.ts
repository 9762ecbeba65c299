import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SweepPacing } from '../../state/sweep-pacing.js';

test('the default sweep span: the count up to 2^24, 2^24 up to 12 × 2^24, count / 12 past it', () => {
  const pacing = new SweepPacing({});
  assert.equal(pacing.span(0), 65_536);
  assert.equal(pacing.span(10_000_000), 10_000_000);
  assert.equal(pacing.span(100_000_000), 2 ** 24);
  assert.equal(pacing.span(12 * 2 ** 24), 2 ** 24);
  assert.equal(pacing.span(400_000_000), 33_333_333);
  assert.equal(pacing.span(1_000_000_000), 83_333_333);
  // blocks rewritten once a span: ~8 × count / span bytes an admit, never past 8 × 12
  for (const count of [2e8, 4e8, 1e9, 1e10]) assert.ok((8 * count) / pacing.span(count) <= 96.0001, `${count}`);
});

test('minSweepFraction 0 keeps maxSweep a hard cap; bad options are refused by name', () => {
  assert.equal(new SweepPacing({ minSweepFraction: 0 }).span(1_000_000_000), 2 ** 24);
  assert.equal(new SweepPacing({ maxSweep: 2 ** 25, minSweepFraction: 0 }).span(1_000_000_000), 2 ** 25);
  for (const [options, name] of [
    [{ minSweep: 0 }, /minSweep must be/],
    [{ minSweep: 100, maxSweep: 50 }, /maxSweep must be an integer >= minSweep \(100\), got 50/],
    [{ sweepFraction: 0 }, /sweepFraction must be in \(0, 1\]/],
    [
      { sweepFraction: 0.25, minSweepFraction: 0.5 },
      /minSweepFraction must be in \[0, sweepFraction \(0.25\)\], got 0.5/,
    ],
    [{ minSweepFraction: Number.NaN }, /minSweepFraction must be/],
  ] as const)
    assert.throws(() => new SweepPacing(options), { code: 'CS_INVALID_OPTION', message: name });
});
