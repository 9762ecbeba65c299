import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeAll } from '../../core/files.js';

function withFile(fn: (fd: number, path: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-files-'));
  const path = join(dir, 'f');
  writeFileSync(path, 'head:');
  const fd = openSync(path, 'r+');
  try {
    fn(fd, path);
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

test('writeAll writes its buffers one after another from the position, empty ones and none included', () => {
  withFile((fd, path) => {
    writeAll(fd, [], 5);
    writeAll(fd, [Buffer.alloc(0)], 5);
    assert.equal(readFileSync(path, 'latin1'), 'head:', 'nothing written, no error');
    writeAll(fd, [Buffer.from('ab'), Buffer.alloc(0), Buffer.from('c'), Buffer.alloc(0)], 5);
    assert.equal(readFileSync(path, 'latin1'), 'head:abc');
    writeAll(fd, [Buffer.from('X')], 1);
    assert.equal(readFileSync(path, 'latin1'), 'hXad:abc', 'at the position, not appended');
  });
});

test('writeAll writes more buffers than one writev call takes', () => {
  withFile((fd, path) => {
    const buffers = Array.from({ length: 2_500 }, (_, i) => Buffer.from(String(i % 10)));
    writeAll(fd, buffers, 5);
    assert.equal(readFileSync(path, 'latin1'), 'head:' + buffers.map((b) => b.toString()).join(''));
  });
});
