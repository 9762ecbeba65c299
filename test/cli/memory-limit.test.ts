import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cgroupMemoryLimit } from '../../cli/memory-limit.js';
import { parseCrawlArgs } from '../../cli/options.js';

const GiB = 2 ** 30;

test('memory limit: a cgroup limit below the machine is the default budget; none, unknown or "unlimited" is 0', () => {
  assert.equal(cgroupMemoryLimit(2 * GiB, 24 * GiB), 2 * GiB);
  assert.equal(cgroupMemoryLimit(0, 24 * GiB), 0, 'libuv says 0 for unknown');
  assert.equal(cgroupMemoryLimit(2 ** 64 - 1, 24 * GiB), 0, 'cgroup v2 "max" as libuv returns it');
  assert.equal(cgroupMemoryLimit(9223372036854771712, 24 * GiB), 0, 'cgroup v1 unlimited');
  assert.equal(cgroupMemoryLimit(24 * GiB, 24 * GiB), 0, 'a limit of the whole machine is none');
  assert.equal(cgroupMemoryLimit(), cgroupMemoryLimit(process.constrainedMemory(), undefined), 'reads the process');
});

test('memory limit: --memory-budget and CRAWLSTREAM_MEMORY_BUDGET set the plan; without either it is the cgroup limit', () => {
  const budget = (args: string[], env = {}) =>
    parseCrawlArgs(['--data', '/tmp/crawlstream-unused', 'http://127.0.0.1/', ...args], env).config.memoryBudgetBytes;
  assert.equal(budget(['--memory-budget', String(2 * GiB)]), 2 * GiB);
  assert.equal(budget([], { CRAWLSTREAM_MEMORY_BUDGET: String(GiB) }), GiB);
  assert.equal(budget(['--memory-budget', '0']), 0, '0: none');
  assert.equal(budget([]), cgroupMemoryLimit());
  assert.throws(() => budget(['--memory-budget', '-1']), /--memory-budget/);
});
