import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { python } from './python.js';

/**
 * Runs the independent WARC reader `warcio` (PyPI package warcio) as `<python> -m warcio.cli`, with
 * the Python `npm test` found or installed (test/python/python.ts). Fails the calling test when it
 * is missing: a WARC test that silently skips its validator proves nothing.
 */
export function warcio(args: string[]): { status: number; stdout: string; stderr: string } {
  const command = resolveCommand();
  const r = spawnSync(command[0]!, [...command.slice(1), ...args], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.error, undefined, `running warcio failed: ${String(r.error)}`);
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** `warcio check` passes: exit status 0 and no failed digest. */
export function assertWarcioCheckPasses(file: string): void {
  const r = warcio(['check', '-v', file]);
  assert.equal(r.status, 0, `warcio check failed for ${file}:\n${r.stdout}\n${r.stderr}`);
  assert.doesNotMatch(r.stdout, /fail|exception/i, r.stdout);
}

/** The records `warcio index` finds in `file`, with the given fields (plus offset and length). */
export function warcioIndex(file: string, fields: string[]): Record<string, string>[] {
  const r = warcio(['index', '-f', ['offset', 'length', ...fields].join(','), file]);
  assert.equal(r.status, 0, `warcio index failed for ${file}:\n${r.stderr}`);
  return r.stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, string>);
}

let resolved: string[] | undefined;

function resolveCommand(): string[] {
  if (resolved !== undefined) return resolved;
  for (const candidate of [[python(), '-m', 'warcio.cli']]) {
    const r = spawnSync(candidate[0]!, [...candidate.slice(1), '--version'], { encoding: 'utf8' });
    if (r.error === undefined && r.status === 0) {
      resolved = candidate;
      return candidate;
    }
  }
  assert.fail(
    'warcio is required for the WARC tests and was not found: run the tests with npm test, or python3 -m pip install -r test/python/requirements.txt',
  );
}
