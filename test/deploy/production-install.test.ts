import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

// The install that ships, tested as it ships: scripts/production-install.sh (the script
// deploy/Dockerfile runs to make the image's /app) installs the packed tarball with production
// dependencies only into a directory under the OS temp dir, where Node's resolution cannot reach
// the repository's node_modules, and every command then runs from there, as the image's
// ENTRYPOINT, WORKDIR and ENV say. Nothing of ours is imported: the repo is only read as files.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SCRIPT = 'scripts/production-install.sh';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end (or kills it after timeoutMs) and returns its exit code and output. */
function run(
  cmd: string,
  args: readonly string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

/**
 * This process's environment without what could lead a child to the repository's packages or to
 * npm's settings of the `npm test` that runs us (NODE_PATH, NODE_OPTIONS, npm_*, the
 * node_modules/.bin folders npm puts on PATH).
 */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k === 'NODE_PATH' || k === 'NODE_OPTIONS' || /^npm_/i.test(k)) continue;
    env[k] = v;
  }
  env.PATH = (env.PATH ?? '')
    .split(':')
    .filter((p) => !p.includes('node_modules'))
    .join(':');
  return { ...env, ...extra };
}

/** What the image is, as deploy/Dockerfile says it: read once, used to run every command below. */
interface Image {
  /** The directory the build stage installs into and the final stage copies and works in. */
  app: string;
  entrypoint: string[];
  env: Record<string, string>;
}

function readDockerfile(): { image: Image; buildCopies: string[]; lines: string[] } {
  const lines = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const froms = lines.flatMap((l, i) => (/^FROM\s/i.test(l) ? [i] : []));
  assert.equal(froms.length, 2, 'a build stage and the final stage');
  const build = lines.slice(froms[0]!, froms[1]!);
  const final = lines.slice(froms[1]!);
  const stage = /^FROM\s+\S+\s+AS\s+(\S+)$/i.exec(build[0]!)?.[1];
  assert.ok(stage, 'the build stage is named');

  const installs = build.filter((l) => /^RUN\s/i.test(l) && l.includes(SCRIPT));
  assert.equal(installs.length, 1, `the build stage runs ${SCRIPT} once`);
  const m = new RegExp(`^RUN\\s+(?:bash\\s+)?${SCRIPT.replace(/\./g, '\\.')}\\s+(/\\S+)$`).exec(installs[0]!);
  assert.ok(m, `"${installs[0]}" runs the script, with the build, into one absolute directory`);
  const app = m[1]!;

  assert.ok(
    final.some((l) => l === `COPY --from=${stage} ${app} ${app}`),
    `the final stage copies ${app} from the build stage whole`,
  );
  assert.equal(final.filter((l) => /^COPY\s/i.test(l)).length, 1, `the image holds only what the script installed`);
  assert.ok(final.includes(`WORKDIR ${app}`), `the final stage works in ${app}`);
  assert.ok(final.includes('USER node'), 'the image runs as the unprivileged node user');
  assert.ok(final.includes('EXPOSE 9464'), 'the metrics port the manifests scrape');
  const entry = final.find((l) => /^ENTRYPOINT\s/i.test(l));
  assert.ok(entry, 'an ENTRYPOINT');
  const entrypoint = JSON.parse(entry.replace(/^ENTRYPOINT\s+/i, '')) as string[];
  const env: Record<string, string> = {};
  for (const l of final.filter((x) => /^ENV\s/i.test(x))) {
    const kv = /^ENV\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)$/i.exec(l);
    assert.ok(kv, `"${l}" is one NAME=value`);
    env[kv[1]!] = kv[2]!;
  }
  const buildCopies = build.flatMap((l) => (/^COPY\s/i.test(l) ? l.split(/\s+/).slice(1, -1) : []));
  return { image: { app, entrypoint, env }, buildCopies, lines };
}

const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  files: string[];
  devDependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; dev?: boolean; optional?: boolean; devOptional?: boolean }>;
};

let parsed: ReturnType<typeof readDockerfile> | undefined;
/** The Dockerfile as read by readDockerfile(); its assertions fail every test that needs it. */
const dockerfile = (): ReturnType<typeof readDockerfile> => (parsed ??= readDockerfile());
const work = mkdtempSync(join(tmpdir(), 'crawlstream-install-'));
const app = join(work, 'app');
let installed = false;

process.on('exit', () => rmSync(work, { recursive: true, force: true }));

/** Runs the image's ENTRYPOINT with args from the install, with the image's ENV. */
function crawlstream(args: readonly string[], timeoutMs = 60_000): Promise<Run> {
  assert.ok(installed, 'the production install failed (see its test)');
  const { image } = dockerfile();
  const [cmd, ...rest] = image.entrypoint;
  return run(cmd === 'node' ? process.execPath : cmd!, [...rest, ...args], {
    cwd: app,
    env: cleanEnv(image.env),
    timeoutMs,
  });
}

const show = (r: Run): string => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

test('the Dockerfile makes the image with the script this test runs, from every folder the package ships', () => {
  const { image, buildCopies, lines } = dockerfile();
  // the node flags of the bin's own #! line (manifests.test.ts holds the two equal)
  assert.deepEqual(image.entrypoint, ['node', '--max-semi-space-size=64', 'dist/cli/main.js']);
  assert.equal(image.env.GLIBC_TUNABLES, 'glibc.malloc.hugetlb=1');
  // the script builds dist/ itself there (no --built), after the dev dependencies' install
  const ci = lines.findIndex((l) => /^RUN\s.*\bnpm ci\b/.test(l));
  const script = lines.findIndex((l) => /^RUN\s/i.test(l) && l.includes(SCRIPT));
  assert.ok(ci !== -1 && ci < script, 'npm ci (the dev dependencies tsc needs) runs before the script');
  for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', SCRIPT])
    assert.ok(buildCopies.includes(f), `the build stage copies ${f}`);
  // each source folder whose dist/ (or files) the package ships reaches the build
  const sources = new Set(packageJson.files.map((f) => f.replace(/^dist\//, '').split('/')[0]!));
  assert.ok(sources.size >= 8, `package.json files names the shipped folders: ${[...sources].join(', ')}`);
  for (const s of sources) assert.ok(buildCopies.includes(s), `the build stage copies ${s}/`);
  // and every folder tsc compiles ships, but the tests and benches
  const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')) as { include: string[] };
  for (const folder of tsconfig.include.filter((f) => f !== 'test' && f !== 'bench'))
    assert.ok(packageJson.files.includes(`dist/${folder}/`), `package.json files lacks dist/${folder}/`);
});

test('the script installs the packed tarball with production dependencies only, at the lockfile versions', async (t) => {
  const started = Date.now();
  const r = await run('bash', [SCRIPT, '--built', app], { cwd: ROOT, env: cleanEnv(), timeoutMs: 8 * 60_000 });
  t.diagnostic(`production install: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  assert.equal(r.code, 0, show(r));
  installed = true;

  // the tarball's content: the shipped code's dist/, the schemas it reads, package.json, README
  const shipped = new Set(packageJson.files.filter((f) => f.startsWith('dist/')).map((f) => f.replace(/\/$/, '')));
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else files.push(relative(app, p));
    }
  };
  for (const e of readdirSync(app, { withFileTypes: true })) {
    if (e.isDirectory() && e.name !== 'node_modules') walk(join(app, e.name));
    else if (e.isFile()) files.push(e.name);
  }
  const unexpected = files.filter(
    (f) =>
      !['package.json', 'package-lock.json', 'README.md'].includes(f) &&
      !/^schemas\/[a-z-]+\.avsc$/.test(f) &&
      ![...shipped].some((d) => f.startsWith(`${d}/`)),
  );
  assert.deepEqual(unexpected, [], 'only what ships is in the package');
  const schemas = readdirSync(join(ROOT, 'schemas'))
    .filter((f) => f.endsWith('.avsc'))
    .map((f) => `schemas/${f}`);
  assert.ok(schemas.length >= 10, schemas.join());
  for (const must of [
    'dist/cli/main.js',
    'dist/processors/parser/parse-worker.js',
    'dist/synthetic-web/serve.js',
    ...schemas,
  ])
    assert.ok(files.includes(must), `${must} ships`);
  assert.ok(!files.some((f) => f.startsWith('dist/test/') || f.startsWith('dist/bench/')), 'no tests, no benches');

  // node_modules: every production package of the lockfile at its version, no dev-only one
  const missing: string[] = [];
  const devPresent: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '' || !path.startsWith('node_modules/')) continue;
    const at = join(app, path, 'package.json');
    if (entry.dev) {
      if (existsSync(at)) devPresent.push(path);
    } else if (!entry.optional && !entry.devOptional) {
      const version = existsSync(at) ? (JSON.parse(readFileSync(at, 'utf8')) as { version: string }).version : null;
      if (version !== entry.version) missing.push(`${path}@${entry.version} (found ${version})`);
    }
  }
  assert.deepEqual(missing, [], 'production packages missing or at another version than the lockfile');
  assert.deepEqual(devPresent, [], 'dev-only packages in the production install');

  // Node's resolution from the shipped code finds its own dependencies and nothing else: no
  // node_modules above the install (the repository's is not on the way up from the temp dir)
  for (let dir = dirname(app); ; dir = dirname(dir)) {
    assert.ok(!existsSync(join(dir, 'node_modules')), `${dir}/node_modules would be reachable from the install`);
    if (dirname(dir) === dir) break;
  }
  const fromCli = createRequire(join(app, 'dist/cli/main.js'));
  assert.ok(fromCli.resolve('yaml').startsWith(`${app}/node_modules/`), 'the CLI finds yaml in its own node_modules');
  for (const dev of Object.keys(packageJson.devDependencies).filter((d) => lock.packages[`node_modules/${d}`]?.dev))
    assert.throws(() => fromCli.resolve(dev), { code: 'MODULE_NOT_FOUND' }, `${dev} is reachable from the install`);
});

test(
  'every command and subcommand of the top-level usage answers --help from the install',
  { concurrency: 2 },
  async (t) => {
    const top = await crawlstream(['--help']);
    assert.equal(top.code, 0, show(top));
    // `  crawlstream CMD [SUB|SUB2] [ARGS]   description`: in the synopsis (up to the first run of
    // two or more spaces) a second word of lower-case names is a subcommand
    const commands: string[][] = [];
    for (const line of top.stdout.split('\n')) {
      const synopsis = line.trim().split(/\s{2,}/)[0]!;
      const m = /^crawlstream\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*(?:\|[a-z][a-z-]*)*)(?=\s|$))?/.exec(synopsis);
      if (!m) continue;
      const subs = m[2]?.split('|') ?? [];
      if (!commands.some((c) => c.length === 1 && c[0] === m[1])) commands.push([m[1]!]);
      for (const s of subs) commands.push([m[1]!, s]);
    }
    const names = new Set(commands.map((c) => c[0]));
    for (const c of ['crawl', 'export', 'replay', 'config', 'demo', 'run'])
      assert.ok(names.has(c), `the usage lists ${c}: ${[...names].join(', ')}`);
    t.diagnostic(`--help of: ${commands.map((c) => c.join(' ')).join(', ')}`);

    await Promise.all(
      commands.map((c) =>
        t.test(`crawlstream ${c.join(' ')} --help`, async () => {
          const r = await crawlstream([...c, '--help']);
          assert.equal(r.code, 0, show(r));
          assert.match(r.stdout, /usage/i, show(r));
          assert.ok(r.stdout.includes(`crawlstream ${c[0]}`), `the usage names the command\n${show(r)}`);
          assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
        }),
      ),
    );
  },
);

test('from the install: a crawl of the synthetic web to idle, then export, replay verify and config', async (t) => {
  assert.ok(installed, 'the production install failed (see its test)');
  // the synthetic web the package ships (crawlstream demo serves it too), on loopback
  const web = spawn(process.execPath, [join(app, 'dist/synthetic-web/serve.js'), '--port', '0'], {
    cwd: app,
    env: cleanEnv(dockerfile().image.env),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => {
    web.kill('SIGTERM');
  });
  const lines = createInterface({ input: web.stdout });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    web.once('exit', (code) => reject(new Error(`the synthetic web exited (${code}) before it listened`)));
  });
  const port = /^synthetic web on 127\.0\.0\.1:(\d+)$/.exec(first)?.[1];
  assert.ok(port, first);

  // files.test links only to its own three files: a whole site, crawled to idle in seconds
  const data = join(work, 'data');
  const site = `http://files.test:${port}`;
  const crawl = await crawlstream(
    [
      'crawl',
      `${site}/`,
      '--data',
      data,
      '--resolve',
      '*.test=127.0.0.1',
      '--allow-ip',
      '127.0.0.1/32',
      '--no-system-dns',
      '--until-idle',
      '--quiet',
    ],
    180_000,
  );
  assert.equal(crawl.code, 0, show(crawl));

  const exported = await crawlstream(['export', 'page-records', '--data', data]);
  assert.equal(exported.code, 0, show(exported));
  const records = exported.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { url: string; status: number; contentType: string });
  assert.deepEqual(
    records.map((r) => `${r.status} ${r.url}`).sort(),
    // the image link is never requested: the default suffix filter refuses .png before any fetch
    ['/', '/compressed.html', '/doc.pdf'].map((p) => `200 ${site}${p}`).sort(),
  );
  assert.equal(records.find((r) => r.url.endsWith('/doc.pdf'))?.contentType, 'application/pdf');

  const verify = await crawlstream(['replay', 'verify', '--store', 'all', '--data', data]);
  assert.equal(verify.code, 0, show(verify));
  const verdicts = verify.stdout.split('\n').filter((l) => l !== '');
  assert.ok(verdicts.length > 0, show(verify));
  assert.deepEqual(
    verdicts.filter((l) => !l.startsWith('ok ')),
    [],
    'every store equals its changelog',
  );
  assert.ok(
    verdicts.some((l) => l.includes('frontier-seen')),
    show(verify),
  );

  const config = await crawlstream(['config', '--data', data, '--min-delay', '1500']);
  assert.equal(config.code, 0, show(config));
  const row = (name: string) => config.stdout.split('\n').find((l) => l.startsWith(`${name} `));
  assert.match(row('data') ?? '', new RegExp(`\\s${data}\\s.*--data`), show(config));
  assert.match(row('min-delay') ?? '', /\s1500\s.*--min-delay/, show(config));
  assert.match(row('user-agent') ?? '', /crawlstream\/0\.1/, show(config));
});
