import { spawn } from 'node:child_process';
import {
  cpSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Exited } from '../e2e/harness.js';

/** The package root of this build: the directory holding package.json, dist/ and schemas/. */
export const THIS_BUILD = fileURLToPath(new URL('../../../', import.meta.url));

/** A compiled crawlstream package on disk, whose CLI a test can run. */
export interface Build {
  readonly root: string;
  readonly cli: string;
}

/** The build at `root` (a package root with a compiled dist/). */
export function buildAt(root: string): Build {
  const cli = join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`${root} holds no compiled CLI (${cli}): build it with npx tsc first`);
  return { root, cli };
}

/** A field appended to a record schema of `schemas/`. */
export interface AddedField {
  /** The `.avsc` file name, e.g. `link-batch.avsc`. */
  readonly file: string;
  readonly field: { name: string; type: unknown; default: unknown };
}

/**
 * A "newer build" of `from` in `dir`: the files package.json publishes (`files`: the compiled
 * dist/ folders and `schemas/*.avsc`) copied, node_modules linked, and each schema of `added`
 * given its field at the end of its record. A change the code does not know of: avsc writes a
 * missing field as its default, so the new build writes the new schema version's ids and values.
 */
export function evolvedBuild(from: Build, dir: string, added: readonly AddedField[]): Build {
  const pkg = JSON.parse(readFileSync(join(from.root, 'package.json'), 'utf8')) as { files: string[] };
  mkdirSync(dir, { recursive: true });
  cpSync(join(from.root, 'package.json'), join(dir, 'package.json'));
  for (const entry of pkg.files) {
    const glob = /^(.*)\/\*(\.[a-z]+)$/.exec(entry);
    if (glob) {
      mkdirSync(join(dir, glob[1]!), { recursive: true });
      for (const name of readdirSync(join(from.root, glob[1]!)).filter((n) => n.endsWith(glob[2]!)))
        cpSync(join(from.root, glob[1]!, name), join(dir, glob[1]!, name));
    } else {
      cpSync(join(from.root, entry), join(dir, entry), { recursive: true });
    }
  }
  symlinkSync(join(from.root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  for (const { file, field } of added) {
    const path = join(dir, 'schemas', file);
    const schema = JSON.parse(readFileSync(path, 'utf8')) as { fields: object[] };
    schema.fields.push(field);
    writeFileSync(path, `${JSON.stringify(schema, null, 2)}\n`);
  }
  return buildAt(dir);
}

/** One `run` process of a build, as a multi-build test keeps it. */
export interface BuildInstance {
  readonly name: string;
  readonly build: Build;
  readonly child: ReturnType<typeof spawn>;
  readonly exited: Promise<Exited>;
  /** Its stderr so far. */
  stderr(): string;
  /** Where its /metrics, /healthz and /readyz answer, once it has said so. */
  ops?: string;
}

/**
 * Starts `node <build's CLI> ...args` as `name`. CRAWLSTREAM_TEST_LOGS=<dir> keeps its whole
 * output there, for a failure's post-mortem.
 */
export function startBuild(build: Build, name: string, args: readonly string[]): BuildInstance {
  const child = spawn(process.execPath, [build.cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const instance: BuildInstance = {
    name,
    build,
    child,
    exited: new Promise<Exited>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
    ),
    stderr: () => stderr,
  };
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    instance.ops ??= /\/readyz on http:\/\/(\S+)/.exec(stderr)?.[1];
  });
  const keep = process.env['CRAWLSTREAM_TEST_LOGS'];
  if (keep) {
    const file = createWriteStream(join(keep, `${name}.log`));
    // two streams into one file: neither ends it, the process's end does
    child.stdout!.pipe(file, { end: false });
    child.stderr!.pipe(file, { end: false });
    child.on('close', () => file.end());
  }
  return instance;
}
