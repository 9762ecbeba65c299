import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = join(ROOT, 'node_modules', '.bin', 'depcruise');
const FOLDERS = ['core', 'schemas', 'state', 'runtime', 'processors', 'topology', 'cli', 'synthetic-web', 'bench'];

/** Runs the layering check of `npm run lint` over a tree of the given files (path → source). */
function cruise(files: Record<string, string>): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-layers-'));
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
    );
    for (const [path, source] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), source);
    }
    const present = FOLDERS.filter((f) => Object.keys(files).some((p) => p.startsWith(`${f}/`)));
    const r = spawnSync(DEPCRUISE, [...present, '--config', CONFIG], { cwd: dir, encoding: 'utf8' });
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('npm run lint, and npm test after its type-checking build, run the layering check with the repository config', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const style = pkg.scripts['lint:style']!;
  assert.match(style, /depcruise .*--config \.dependency-cruiser\.cjs/);
  assert.match(style, /eslint/);
  assert.match(style, /prettier --check/);
  assert.match(pkg.scripts['lint']!, /^tsc -p tsconfig\.json --noEmit && npm run --silent lint:style$/);
  // npm test type-checks in its build (tsc without --noEmit fails on a type error), then the rest
  assert.match(pkg.scripts['build']!, /tsc -p tsconfig\.json$/);
  const testSh = readFileSync(join(ROOT, 'scripts', 'test.sh'), 'utf8');
  assert.match(testSh, /^npm run --silent build\nnpm run --silent lint:style$/m);
});

test('the layering check passes a tree that imports only downward', () => {
  const r = cruise({
    'core/errors.ts': 'export const code = 1;\n',
    'state/store.ts': "import { code } from '../core/errors.js';\nexport const store = code;\n",
    'runtime/task.ts': "import { store } from '../state/store.js';\nexport const task = store;\n",
  });
  assert.equal(r.status, 0, r.output);
});

test('the layering check fails on an injected import cycle', () => {
  const r = cruise({
    'core/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
    'core/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
  });
  assert.notEqual(r.status, 0, r.output);
  assert.match(r.output, /no-circular/);
});

test('the layering check fails on an upward import (state importing runtime)', () => {
  const r = cruise({
    'runtime/task.ts': 'export const task = 1;\n',
    'state/store.ts': "import { task } from '../runtime/task.js';\nexport const store = task;\n",
  });
  assert.notEqual(r.status, 0, r.output);
  assert.match(r.output, /layer-state/);
});

test('the layering check fails when shipped code imports test code or one processor imports another', () => {
  const r = cruise({
    'test/helper.ts': 'export const helper = 1;\n',
    'cli/demo.ts': "import { helper } from '../test/helper.js';\nexport const demo = helper;\n",
    'processors/parser/decode.ts': 'export const decode = 1;\n',
    'processors/fetcher/fetch.ts': "import { decode } from '../parser/decode.js';\nexport const fetch = decode;\n",
  });
  assert.notEqual(r.status, 0, r.output);
  assert.match(r.output, /shipped-never-imports-test/);
  assert.match(r.output, /processors-share-through-common/);
});

test('the layering check fails when a library is imported outside its one door', () => {
  const r = cruise({ 'processors/fetcher/raw.ts': "import kafkajs from 'kafkajs';\nexport const k = kafkajs;\n" });
  assert.notEqual(r.status, 0, r.output);
  assert.match(r.output, /one-door--?kafkajs/);
});

test('the layering check fails when an engine or the engine-neutral runtime imports the replay tool', () => {
  const r = cruise({
    'runtime/replay/swap.ts': 'export const recover = 1;\n',
    'runtime/engines/embedded/engine.ts':
      "import { recover } from '../../replay/swap.js';\nexport const engine = recover;\n",
    'runtime/task-state.ts': "import { recover } from './replay/swap.js';\nexport const state = recover;\n",
  });
  assert.notEqual(r.status, 0, r.output);
  assert.match(r.output, /live-path-without-replay: runtime\/engines\/embedded\/engine\.ts/);
  assert.match(r.output, /live-path-without-replay: runtime\/task-state\.ts/);
  // replay importing the runtime's core is the intended direction
  const ok = cruise({
    'runtime/task-state.ts': 'export const state = 1;\n',
    'runtime/replay/rebuild.ts': "import { state } from '../task-state.js';\nexport const rebuild = state;\n",
  });
  assert.equal(ok.status, 0, ok.output);
});
