import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CLASSES, DAY, HOUR, simulate, type Population } from '../../bench/recrawl-policy-sim.js';

/**
 * bench/recrawl-policy.ts: its simulation counts staleness right (a Poisson page fetched every I
 * is stale 1 − (1 − e^{−λI}) / (λI) of the time), and on a small population it prints figures
 * that hang together. Its figures themselves go in docs/BENCHMARKS.md.
 */
const run = promisify(execFile);
const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('a fixed interval over Poisson pages is as stale as the closed form says', () => {
  const n = 20_000;
  const rate = 1 / (2 * DAY);
  const pop: Population = {
    n,
    sites: 1,
    site: new Int32Array(n),
    cls: new Uint8Array(n).fill(1),
    rate0: new Float64Array(n).fill(rate),
    rate1: new Float64Array(n),
    stay0: new Float64Array(n),
    stay1: new Float64Array(n),
    classCount: Float64Array.from({ length: CLASSES }, (_, c) => (c === 1 ? n : 0)),
  };
  const interval = 3 * DAY;
  const r = simulate(pop, () => interval, {
    days: 30,
    warmupDays: 8,
    firstSpreadDays: 3,
    slotGapMs: 0,
    minIntervalMs: HOUR,
    seed: 7,
  });
  const x = rate * interval;
  const expected = 1 - -Math.expm1(-x) / x;
  assert.ok(Math.abs(r.staleness - expected) < 0.01, `staleness ${r.staleness}, expected ${expected}`);
  // mean age: E[(I − T)+] over the cycle, T ~ Exp(λ), divided by I... as a time average: (I/2 − 1/λ + (1 − e^{−x})/λ²/I)
  const age = interval / 2 - 1 / rate + -Math.expm1(-x) / (rate * rate * interval);
  assert.ok(Math.abs(r.meanAgeMs / age - 1) < 0.03, `mean age ${r.meanAgeMs / HOUR} h, expected ${age / HOUR} h`);
  assert.ok(Math.abs(r.windowRevisits / ((n * 22 * DAY) / interval) - 1) < 0.02, `${r.windowRevisits} revisits`);
});

test('bench/recrawl-policy.js prints sane figures on 20,000 URLs', { timeout: 60_000 }, async () => {
  const { stdout } = await run(process.execPath, [join(dist, 'bench', 'recrawl-policy.js')], {
    env: { ...process.env, RECRAWL_POLICY_URLS: '20000' },
    maxBuffer: 16 * 2 ** 20,
  });
  // a figure by its name; `…` stands for the share of URLs in a class's name
  const value = (name: string): number => {
    const [head, tail] = name.split('…') as [string, string | undefined];
    const line = stdout
      .split('\n')
      .find((l) => (tail === undefined ? l.startsWith(`${name}: `) : l.startsWith(head) && l.includes(`${tail}: `)));
    assert.ok(line !== undefined, `no figure "${name}" in:\n${stdout}`);
    return Number(
      line
        .slice(line.lastIndexOf(': ') + 2)
        .split(' ')[0]!
        .replace(/,/g, ''),
    );
  };
  const W = 'days 8–30';
  for (const p of ['adaptive', 'optimal', 'oracle (optimal rule, true rates)']) {
    const stale = value(`${p}: staleness (time-averaged share of URLs stale), ${W}`);
    assert.ok(stale > 1 && stale < 60, `${p}: staleness ${stale} %`);
    // a page that never changes is never stale; one that changes every few minutes nearly always
    assert.equal(value(`${p}: never changes (… % of URLs): staleness`), 0);
    assert.ok(value(`${p}: very fast (every 2–30 min) (… % of URLs): staleness`) > 95);
    // the slots hold every policy to the sites' capacity
    assert.ok(value(`${p}: share of the sites' revisit capacity used, ${W}`) <= 101);
  }
  for (const p of ['adaptive', 'optimal']) {
    const fetches = value(`${p}: revisits in ${W}`);
    const fixed = value(`fixed at ${p} fetches: revisits in ${W}`);
    assert.ok(Math.abs(fixed / fetches - 1) < 0.05, `${p}: ${fetches} revisits, fixed ${fixed}`);
    const ratio = value(`${p} / fixed at its fetches: staleness ratio`);
    assert.ok(ratio > 0.3 && ratio < 2, `${p} / fixed ${ratio}`);
  }
  assert.ok(value('oracle / fixed at its fetches: staleness ratio') < 1);
  assert.match(stdout, /^total wall time: /m);
});
