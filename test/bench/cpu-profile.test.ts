import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { categoryOf, summarizeProfile } from '../../bench/cpu-profile.js';

const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 9 });

test('a profile frame falls in its package, our folder, its Node module or V8 entry', () => {
  assert.equal(
    categoryOf(frame('_writeSync', 'file:///w/node_modules/@nxtedition/rocksdb/chained-batch.js')),
    '@nxtedition/rocksdb',
  );
  assert.equal(categoryOf(frame('ontext', 'file:///w/node_modules/htmlparser2/dist/esm/Parser.js')), 'htmlparser2');
  assert.equal(categoryOf(frame('simhash64', 'file:///w/dist/processors/parser/simhash.js')), 'crawlstream processors');
  assert.equal(categoryOf(frame('onread', 'node:internal/tls/wrap')), 'node:tls');
  assert.equal(categoryOf(frame('x', 'node:_tls_wrap')), 'node:tls');
  assert.equal(categoryOf(frame('processChunkSync', 'node:zlib')), 'node:zlib');
  assert.equal(categoryOf(frame('(garbage collector)', '')), '(garbage collector)');
  assert.equal(categoryOf(frame('fsync', '')), '(native)');
});

test('self time is the sampled time of each node, weighted by the gap to the next sample; idle is not busy', () => {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-profile-'));
  try {
    const file = join(dir, 'a.cpuprofile');
    writeFileSync(
      file,
      JSON.stringify({
        nodes: [
          { id: 1, callFrame: frame('(root)', '') },
          { id: 2, callFrame: frame('(idle)', '') },
          { id: 3, callFrame: frame('gzip', 'node:zlib') },
          { id: 4, callFrame: frame('(garbage collector)', '') },
        ],
        startTime: 0,
        endTime: 10_000,
        samples: [3, 3, 4, 2],
        timeDeltas: [0, 1_000, 3_000, 2_000],
      }),
    );
    const summary = summarizeProfile(file);
    assert.equal(summary.spanMs, 10);
    // 3 → 1 ms, 3 → 3 ms, 4 → 2 ms, 2 (last) → the mean, 2.5 ms
    assert.equal(summary.byCategory.get('node:zlib'), 4);
    assert.equal(summary.byCategory.get('(garbage collector)'), 2);
    assert.equal(summary.byCategory.get('(idle)'), 2.5);
    assert.equal(summary.busyMs, 6);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
